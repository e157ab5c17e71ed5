"""Does a design fit its part and meet its clock? One line saying what does not, from an estimate or a synthesis."""

from __future__ import annotations

from typing import Any

__all__ = ["STRICT_EXIT", "FitError", "fit_check", "refuses"]

STRICT_EXIT = 3  # the exit status of `--strict` when the design does not fit or misses its clock


class FitError(Exception):
    """Under --strict: the design does not fit its part or misses its clock (exit status 3)."""


def fit_check(result: dict[str, Any], board_name: str, clock_mhz: float, source: str,
              clock_note: str | None = None) -> dict[str, Any]:
    """Compare ``result`` (an estimate or a synthesis: utilization_percent, clock_mhz_estimate) with the part and clock.

    Returns {fits, meets_clock, over (resource: percent), clock_mhz_target, clock_mhz_estimate, source, note}; note
    is one line naming every shortfall, or None when the design fits and meets the clock; ``clock_note`` (the
    pipeline choice's own line: the best clock reached and what to try) replaces the plain clock phrase.
    """
    utilization = result.get("utilization_percent") or {}
    over = {k: v for k, v in utilization.items() if v > 100.0}
    estimate = result.get("clock_mhz_estimate")
    meets = estimate is None or estimate >= clock_mhz
    problems = []
    if over:
        used = ", ".join(f"{k.upper()} {v:,.0f} %" for k, v in over.items())
        problems.append(f"the design does not fit {board_name} ({used} of the part)")
    if not meets:
        problems.append(clock_note or f"the design misses the {clock_mhz:g} MHz clock target (estimated {estimate:g} MHz)")
    note = f"{'; '.join(problems)} [{source}]" if problems else None
    return {"fits": not over, "meets_clock": meets, "over": over, "clock_mhz_target": clock_mhz,
            "clock_mhz_estimate": estimate, "source": source, "note": note}


def refuses(fit: dict[str, Any], checked: tuple[str, ...]) -> bool:
    """Whether a fit check of an analytic estimate may refuse a build: a shortfall in what the family's model was checked on."""
    return bool(set(fit["over"]) & set(checked)) or (not fit["meets_clock"] and "clock" in checked)
