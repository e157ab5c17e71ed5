"""The build summary keeps the clock estimates apart from the routed result: one line says whether the routed design
meets the target, and the estimate's line does not contradict it."""

from __future__ import annotations

import io

import pytest

from codesign.fpga.build import build
from codesign.fpga.report import format_report

TINY = "widths = [1, 1]\ngrid_size = 4\nspline_order = 1\nlut_bits = 3\nclock_mhz = 2000\n"


@pytest.fixture(scope="module")
def missed_estimate(tmp_path_factory) -> dict:
    """report.json of a real build whose estimate misses its clock target (2000 MHz)."""
    tmp = tmp_path_factory.mktemp("clock")
    (tmp / "tiny.toml").write_text(TINY)
    report = build("kan_online", "ulx3s", config=tmp / "tiny.toml", out=tmp / "o", samples=50, stream=io.StringIO())
    assert report["rtl"]["pipeline"]["clock_met"] is False
    return report


def _routed(fmax: float, target: float) -> dict:
    """The fields of codesign.fpga.pnr.run_pnr that the summary prints."""
    util = {name: {"used": 10, "available": 1000, "percent": 1.0} for name in ("lut4", "ff", "dsp", "ebr")}
    return {"fmax_mhz": fmax, "clock_target_mhz": target, "meets_target": fmax >= target, "latency_ns": 40.0,
            "ii_ns": 20.0, "utilisation": util, "harness_registers": 30, "bitstream": "rtl/pnr/top.bit",
            "bitstream_bytes": 1000}


def _line(text: str, label: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith(f"  {label} "))


def test_without_routing_the_estimate_says_it_misses_the_target(missed_estimate):
    text = format_report(missed_estimate)
    assert "target NOT met by the estimate" in _line(text, "clock")
    assert "routed" not in text


@pytest.mark.parametrize("fmax", [2100.0, 95.3])
def test_the_routed_verdict_is_a_line_of_its_own(missed_estimate, fmax):
    report = {**missed_estimate, "pnr": _routed(fmax, 2000.0)}
    text = format_report(report)
    clock, routed, target = _line(text, "clock"), _line(text, "routed"), _line(text, "target")
    assert "NOT met" not in clock and "estimates; the routed result is below" in clock
    assert routed.startswith(f"  routed      Fmax {fmax:g} MHz (nextpnr, placed and routed)") and "met" not in routed
    if fmax >= 2000:
        assert target == f"  target      2000 MHz met by the routed design (Fmax {fmax:g} MHz)"
        assert "NOT" not in text
    else:
        assert target == f"  target      2000 MHz NOT met by the routed design (Fmax {fmax:g} MHz, 95.2 % short)"
