"""The C-simulation's precompiled headers: built once into codesign's cache, used after, never able to break a build.

A small project (a testbench and a firmware file over ap_fixed) is precompiled against the real
headers, cold then warm; the failure cases run on a stand-in ap_types folder of three one-line
headers, so that each of their compiles takes a fraction of a second (what they check, the cache's
handling of its files, does not depend on the headers). Every build test of the suite then compiles
the real firmware through the same precompiled headers.
"""

from __future__ import annotations

from codesign.fpga import csim
from codesign.fpga.csim import PCH_NAME, compile_csim, find_ap_types, find_compiler, run_csim

FIRMWARE = """#include <ap_fixed.h>
ap_fixed<12, 4> square(ap_fixed<12, 4> x) { return x * x; }
"""
TESTBENCH = """#include <cstdio>
#include <ap_fixed.h>
ap_fixed<12, 4> square(ap_fixed<12, 4> x);
int main() {
    ap_fixed<12, 4> y = square(ap_fixed<12, 4>(1.5));  // 2.25 exactly
    int ok = y.range().to_int() == 2.25 * 256;
    std::printf("csim: samples=1 prediction_mismatches=%d state_values=0 state_mismatches=0 result=%s\\n",
                !ok, ok ? "PASS" : "FAIL");
    return !ok;
}
"""


# The stand-in headers: what the precompiled header includes, one line each; the mini project over them.
STAND_IN = {name: f"#pragma once\nstruct {name.split('.')[0]}_stand_in {{}};\n"
            for name in ("ap_fixed.h", "ap_int.h", "hls_stream.h")}
PLAIN_FIRMWARE = "int square(int x) { return x * x; }\n"
PLAIN_TESTBENCH = """#include <cstdio>
int square(int x);
int main() {
    int ok = square(3) == 9;
    std::printf("csim: samples=1 prediction_mismatches=%d state_values=0 state_mismatches=0 result=%s\\n",
                !ok, ok ? "PASS" : "FAIL");
    return !ok;
}
"""


def _compile_and_run(tmp_path, ap_types=None, tag="", folder="project"):
    """Build the mini project in tmp_path/folder; ``tag`` (a comment in both sources) makes them new to the cache."""
    project = tmp_path / folder
    (project / "firmware").mkdir(parents=True, exist_ok=True)
    (project / "tb").mkdir(exist_ok=True)
    (project / "firmware" / "mini.cpp").write_text((FIRMWARE if ap_types is None else PLAIN_FIRMWARE) + f"// {tag}\n")
    (project / "tb" / "mini_test.cpp").write_text((TESTBENCH if ap_types is None else PLAIN_TESTBENCH) + f"// {tag}\n")
    binary = compile_csim(project, "mini", find_compiler(), ap_types or find_ap_types())
    return (project / "csim" / "compile.log").read_text(), run_csim(binary, project)


def _stand_in_ap_types(tmp_path):
    folder = tmp_path / "ap_types"
    folder.mkdir()
    for name, text in STAND_IN.items():
        (folder / name).write_text(text)
    return folder


def _precompiled(tmp_path, ap_types=None):
    """A cold build, then a warm one: the precompiled header, checked to be built once then read by both sources."""
    log, result = _compile_and_run(tmp_path, ap_types)  # cold: plain headers, the precompiled ones built beside
    assert result.bit_exact and "-include" not in log and "-x c++-header" in log
    (gch,) = (tmp_path / "cache").glob(f"csim-pch/*/{PCH_NAME}.gch")
    assert gch.stat().st_size > 1_000_000
    assert sorted(p.name for p in gch.parent.iterdir()) == [PCH_NAME, f"{PCH_NAME}.gch"]  # no claim, no partial file

    log, again = _compile_and_run(tmp_path, ap_types, "warm")  # warm: both sources read the precompiled headers
    assert log.count(f"-include {gch.with_suffix('')}") == 2 and again.bit_exact
    return gch


def test_the_real_headers_are_precompiled_once_then_used(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path / "cache"))
    _precompiled(tmp_path)


def test_a_damaged_precompiled_header_is_replaced_once_and_a_claimed_one_is_not_repeated(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path / "cache"))
    ap_types = _stand_in_ap_types(tmp_path)
    gch = _precompiled(tmp_path, ap_types)

    gch.write_bytes(gch.read_bytes()[:100_000])  # truncated: g++ stops with an error on it
    log, recovered = _compile_and_run(tmp_path, ap_types, "damaged")
    assert recovered.bit_exact and "-include" not in log.split("$ ")[1]
    assert not gch.exists()  # dropped: the next build precompiles anew

    claim = gch.with_suffix(".building")
    claim.touch()  # unless another build is precompiling now: then this one does not repeat it
    log, result = _compile_and_run(tmp_path, ap_types, "claimed")
    assert result.bit_exact and "c++-header" not in log and not gch.exists() and claim.exists()


def test_an_unwritable_cache_only_costs_the_speed(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.write_text("a file where the cache folder would be")
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(cache))
    log, result = _compile_and_run(tmp_path, _stand_in_ap_types(tmp_path))
    assert result.bit_exact and "-include" not in log


def test_a_binary_the_same_sources_built_is_reused_and_anything_else_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(csim, "REUSE_KEEP", 2)
    ap_types = _stand_in_ap_types(tmp_path)
    log, first = _compile_and_run(tmp_path, ap_types, folder="a")
    assert "-c " in log and not csim.cached_csim(tmp_path / "b", "mini", find_compiler(), ap_types)
    log, second = _compile_and_run(tmp_path, ap_types, folder="b")  # another folder, the same sources
    assert log.startswith("reused ") and "-c " not in log and first.bit_exact and second.bit_exact
    assert csim.cached_csim(tmp_path / "b", "mini", find_compiler(), ap_types)

    (tmp_path / "b" / "firmware" / "extra.h").write_text("// a header a source may include\n")
    log, _ = _compile_and_run(tmp_path, ap_types, folder="b")
    assert "-c " in log  # any file of firmware/ changes the key
    log, _ = _compile_and_run(tmp_path, ap_types, tag="other", folder="c")
    assert "-c " in log
    assert len(list((tmp_path / "cache" / "csim-bin").iterdir())) == 2  # the least recently used one dropped
