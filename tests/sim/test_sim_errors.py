"""A co-simulation that cannot run says why in one line: bad limits, RTL that does not compile, a time limit."""

from __future__ import annotations

import math

import pytest

from codesign.cli import main
from codesign.fpga.cosim import run_cosim
from codesign.fpga.rtl_emit import emit_rtl
from codesign.kan.spec import KANSpec
from codesign.processes import ToolError

pytest.importorskip("cocotb")

TINY = KANSpec(widths=(1, 1), grid_size=4, spline_order=1, lut_bits=3)


@pytest.mark.parametrize("limit", ["0", "-1", "nan"])
def test_sim_refuses_a_wall_clock_limit_that_is_not_positive(tmp_path, capsys, limit):
    assert main(["sim", str(tmp_path), "--wall-seconds", limit]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "wall-clock limit must be a positive number of seconds" in err[0]
    with pytest.raises(ValueError, match="positive"):
        run_cosim(TINY, wall_seconds=float(limit) if limit != "nan" else math.nan, work_dir=tmp_path)


def test_rtl_with_a_syntax_error_is_a_tool_error_with_the_log(tmp_path):
    manifest = emit_rtl(TINY, tmp_path / "rtl")
    broken = tmp_path / "rtl" / manifest["sources"][-1]
    broken.write_text(broken.read_text() + "\nmodule broken(; endmodule\n")
    with pytest.raises(ToolError) as info:
        run_cosim(tmp_path / "rtl", samples=10)
    error = info.value
    assert error.tool == "Verilator" and "%Error" in error.cause and "\n" not in str(error)
    assert error.log is not None and error.log.is_file() and str(error.log) in str(error)
