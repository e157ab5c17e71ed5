"""The default HLS project is portable C++: clang++ (the front end of Vitis HLS) compiles it with -Wall -Wextra, warning
only of HLS pragmas and loop labels, and its C-simulation is bit-exact."""

from __future__ import annotations

import shutil

import pytest

from codesign.fpga.csim import HLS_WARNING_KINDS, compile_strict, find_ap_types, run_csim

CLANG = shutil.which("clang++")


@pytest.mark.skipif(CLANG is None, reason="clang++ is not installed (apt-get install clang); codesign doctor notes it")
def test_default_project_compiles_under_clang_and_is_bit_exact(bare_build):
    assert CLANG is not None
    binary, warnings = compile_strict(bare_build, "kan_online", CLANG, find_ap_types())
    assert set(warnings) <= set(HLS_WARNING_KINDS), warnings
    assert warnings.get("unknown-pragmas", 0) > 0  # the pragmas are seen, and allowed, not silenced
    result = run_csim(binary, bare_build / "tb_data", log_name="csim-clang.log")
    assert result.bit_exact and result.mismatches == 0 and result.samples > 10_000


@pytest.mark.skipif(CLANG is None, reason="clang++ is not installed (apt-get install clang)")
def test_the_strict_compile_reports_other_warnings(tmp_path):
    # a project whose firmware has an unused variable: a kind the check does not allow
    (tmp_path / "tb").mkdir()
    (tmp_path / "firmware").mkdir()
    (tmp_path / "tb" / "t_test.cpp").write_text("int f();\nint main() { return f(); }\n")
    (tmp_path / "firmware" / "t.cpp").write_text("int f() {\n  int unused = 1;\n#pragma HLS PIPELINE\n  return 0;\n}\n")
    assert CLANG is not None
    _, warnings = compile_strict(tmp_path, "t", CLANG, find_ap_types())
    assert warnings.get("unused-variable") == 1 and warnings.get("unknown-pragmas") == 1
