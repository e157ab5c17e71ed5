"""The error bars of the two xcvu9p clock estimators, as docs/estimator.md measures them on ECP5 (benchmarks/ecp5_routed.py).

No router runs here for UltraScale+, so every xcvu9p clock a doc quotes carries the error its estimator showed against
nextpnr's routed Fmax on ECP5. These sentences quote that page's figures; rerunning benchmarks/ecp5_routed.py can change
them, and then they are updated here by hand.
"""

ROUTED_SECTION = "estimator.md#clock-estimates-against-routed-timing-ecp5"
ROUTED_LINK = f"[docs/estimator.md]({ROUTED_SECTION})"

YOSYS_CLOCK_ERROR = (
    "the Yosys logic-depth estimate is not placed or routed; on ECP5, where nextpnr routes the netlist, it was off routed Fmax by "
    "8.0 % median / 24.7 % worst with its assumed net delay and 4.2 % / 18.2 % with the net delay calibrated (leave-one-out), "
    "so an xcvu9p figure carries at least ±18 % plus a bias of unknown sign up to 25 %")

ANALYTIC_CLOCK_ERROR = (
    "the analytic estimate (`codesign estimate`, what `auto` searches with) is not placed or routed: on xcvu9p it is off "
    "the Yosys logic-depth estimate by 4.0 % median / 22.7 % worst, on top of that estimate's own error; scaled to ECP5 it was off "
    "routed Fmax by 58.0 % median / 139.1 % worst, which bounds nothing on UltraScale+")

ANALYTIC_CLOCK_LABEL = f"Error bar of the clock: {ANALYTIC_CLOCK_ERROR} ({ROUTED_LINK})."
