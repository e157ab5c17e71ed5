"""The error bars of the two xcvu9p clock estimators, as measured on ECP5 against nextpnr's routes.

No router runs here for UltraScale+, so every xcvu9p clock a doc quotes carries the error its estimator showed against
nextpnr's routed Fmax on ECP5. The figures are read, not copied: the Yosys-depth ones from the summary that
benchmarks/ecp5_routed.py stores in docs/ecp5_routed.json, the analytic model's ECP5 ones from the fit that
benchmarks/clock_fit.py stores beside the coefficients. The analytic model's error against the Yosys-depth
estimate on xcvu9p is the first table of docs/estimator.md (benchmarks/estimator_calibration.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from codesign.fpga.estimate import coefficient_table

ROOT = Path(__file__).resolve().parents[1]
ROUTED_SECTION = "estimator.md#clock-estimates-against-routed-timing-ecp5"
ROUTED_LINK = f"[docs/estimator.md]({ROUTED_SECTION})"
XCVU9P_ANALYTIC_VS_YOSYS = (4.0, 22.7)  # median / worst %, docs/estimator.md's first table (the shipped xcup fit)


def _routed() -> dict:
    data = json.loads((ROOT / "docs" / "ecp5_routed.json").read_text())
    if "summary" not in data:
        raise SystemExit("docs/ecp5_routed.json has no summary yet: run python benchmarks/ecp5_routed.py --cached-only")
    return data


def yosys_clock_error() -> str:
    """The sentence on the Yosys logic-depth estimate's error, from the stored ECP5 routes."""
    data = _routed()
    raw, fit = data["summary"]["yosys_clock_mhz_estimate"], data["net_fit"]
    return (
        "the Yosys logic-depth estimate is not placed or routed; on ECP5, where nextpnr routes the netlist "
        f"({raw['specs']} specs), it was off routed Fmax by {raw['median_abs_error_percent']:.1f} % median / "
        f"{raw['worst_abs_error_percent']:.1f} % worst with its shipped net delay and {fit['loo_median_abs_error_percent']:.1f} % / "
        f"{fit['loo_worst_abs_error_percent']:.1f} % with the net delay calibrated (leave-one-out), so an xcvu9p figure carries at "
        f"least ±{fit['loo_worst_abs_error_percent']:.0f} % plus a bias of unknown sign up to {raw['worst_abs_error_percent']:.0f} %")


def analytic_clock_error() -> str:
    """The sentence on the analytic estimate's error: against Yosys on xcvu9p, against the router on ECP5 (its own fit)."""
    median, worst = XCVU9P_ANALYTIC_VS_YOSYS
    ecp5 = coefficient_table().get("family_period_ns", {}).get("ecp5")
    tail = "which bounds nothing on UltraScale+, where no router has checked it"
    if ecp5 is not None:
        loo = ecp5["leave_one_out"]
        tail = (f"on ECP5, fitted to nextpnr's routes, it is off routed Fmax by {loo['median_abs_error_percent']:.1f} % median / "
                f"{loo['worst_abs_error_percent']:.1f} % worst out of sample, " + tail)
    return ("the analytic estimate (`codesign estimate`, what `auto` searches with) is not placed or routed: on xcvu9p it is off "
            f"the Yosys logic-depth estimate by {median:.1f} % median / {worst:.1f} % worst, on top of that estimate's own error; "
            + tail)


def analytic_clock_label() -> str:
    """The analytic clock's error bar as a sentence of its own, with the link to the routed results."""
    return f"Error bar of the clock: {analytic_clock_error()} ({ROUTED_LINK})."
