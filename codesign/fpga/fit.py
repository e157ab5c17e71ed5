"""Does a design fit its part and meet its clock? One line saying what does not, from an estimate or a synthesis."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["STRICT_EXIT", "FitError", "FitVerdict", "fit_check", "refuses"]

STRICT_EXIT = 3  # the exit status of `--strict` when the design does not fit or misses its clock


class FitError(Exception):
    """Under --strict: the design does not fit its part or misses its clock (exit status 3)."""


@dataclass(frozen=True)
class FitVerdict:
    """Whether a design fits its part and meets its clock, by one source (report.json's ``fit`` section)."""

    fits: bool
    meets_clock: bool
    over: dict[str, float]  # resource -> percent of the part, for each resource over 100 %
    clock_mhz_target: float
    clock_mhz_estimate: float | None
    source: str  # what the figures come from: an estimate, a synthesis, a routed design
    note: str | None  # one line naming every shortfall; None when it fits and meets the clock

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return asdict(self)


def fit_check(utilization: Mapping[str, float], estimate: float | None, board_name: str, clock_mhz: float, source: str,
              clock_note: str | None = None, fit_hint: str | None = None) -> FitVerdict:
    """Compare a design's utilization (percent of the part per resource) and estimated clock with the part and target.

    The verdict's note is one line naming every shortfall, or None when the design fits and meets the clock;
    ``clock_note`` (the pipeline choice's own line: the best clock reached and what to try) replaces the plain
    clock phrase; ``fit_hint`` (what would make it fit, the estimate's) follows the resources over the part.
    """
    over = {k: v for k, v in utilization.items() if v > 100.0}
    meets = estimate is None or estimate >= clock_mhz
    problems = []
    if over:
        used = ", ".join(f"{k.upper()} {v:,.0f} %" for k, v in over.items())
        problems.append(f"the design does not fit {board_name} ({used} of the part{'; ' + fit_hint if fit_hint else ''})")
    if not meets:
        problems.append(clock_note or f"the design misses the {clock_mhz:g} MHz clock target (estimated {estimate:g} MHz)")
    note = f"{'; '.join(problems)} [{source}]" if problems else None
    return FitVerdict(fits=not over, meets_clock=meets, over=over, clock_mhz_target=clock_mhz,
                      clock_mhz_estimate=estimate, source=source, note=note)


def refuses(fit: FitVerdict, checked: tuple[str, ...]) -> bool:
    """Whether a fit check of an analytic estimate may refuse a build: a shortfall in what the family's model was checked on."""
    return bool(set(fit.over) & set(checked)) or (not fit.meets_clock and "clock" in checked)
