"""The analytic cost model of a learner's RTL: resource features and path delays from the spec alone.

The components of the RTL (docs/rtl.md) — per edge and bank multipliers, exact adder trees, casts, the
coefficient update, the basis ROMs and rotation multiplexers, the LUTRAM banks, pipeline registers,
control — each as a count of bits or cells derived from the spec's widths (each kind's
``resource_features``, through :func:`features`), and the register-to-register paths as sums of
named delay features (the kind's ``stage_features``, :func:`timing_features`). The fitted
coefficients (``estimate_coefficients.py``, from benchmarks/estimator_calibration.py) turn them into
resources and an estimated clock period (:func:`period_ns`); DSP tiles and LUTRAM primitives are counted
from the board's :class:`~codesign.fpga.family.Family`. The search (codesign.fpga.search) and the report
(codesign.fpga.estimate) use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from codesign.fpga.boards import Board
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.family import Family, resolve_family
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import resolve_pipeline
from codesign.fpga.placement import Pipeline
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["features", "resource_counts", "utilization_percent", "timing_features", "PeriodModel", "period_model", "period_ns",
           "scaled_ultrascale_model", "check_spec"]

# The analytic clock coefficients are fitted at UltraScale+ -2; other parts scale like the DSP delay of their family.
_FITTED_DSP_MULT = resolve_family("estimate_coefficients", "xcup", 2, ()).delays.dsp_mult


def check_spec(spec: Any) -> None:
    """A spec of a kind the FPGA backend builds, with at most 7 layers; a one-line error otherwise."""
    fpga_kind(spec)  # a spec of no kind the FPGA backend builds is refused here
    if len(spec.widths) > 8:
        raise ValueError(f"widths={spec.widths}: the RTL takes at most 7 layers (8 widths)")


def timing_features(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, coefficients: dict[str, float]) -> dict[str, float]:
    """The timing features of the slowest register-to-register path (by ``coefficients``), plus a constant."""
    pipe = resolve_pipeline(spec, pipeline)
    ends = fpga_kind(spec).stage_features(spec, pipe, coefficients)
    named = [{"constant": 1.0, **e} for e in ends]
    return max(named, key=lambda f: sum(coefficients.get(k, 0.0) * v for k, v in f.items()))


@dataclass(frozen=True)
class PeriodModel:
    """A family's clock-period model: stage-delay coefficients, a factor on their sum, the growth of routed nets with size.

    Below ``size_luts`` LUTs a design's nets are as short as the coefficients assume; above it every
    path is longer by (LUTs / size_luts) ** ``size_exponent`` (the router spreads a larger design wider).
    """

    coefficients: dict[str, float]
    factor: float = 1.0
    size_luts: float = 1.0
    size_exponent: float = 0.0
    source: str = ""  # what the coefficients were fitted to, as the estimate states it
    routes: int = 0  # routed results the coefficients were fitted to (0: none, a logic-depth fit)

    def size_factor(self, luts: float) -> float:
        """How much longer every path of a design of ``luts`` LUTs is than the coefficients alone say."""
        return max(1.0, luts / self.size_luts) ** self.size_exponent

    def period_ns(self, spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, family: Family) -> float:
        """The period (ns) of a placement: its slowest stage by the coefficients, times the factor and the size factor."""
        stage = timing_features(spec, pipeline, self.coefficients)
        period = self.factor * sum(self.coefficients.get(k, 0.0) * v for k, v in stage.items())
        if self.size_exponent:
            period *= self.size_factor(resource_counts(spec, pipeline, family)["lut"])
        return period


def period_model(family: Family) -> PeriodModel:
    """A family's period model: its own fit to its router's results (benchmarks/clock_fit.py) where one exists,
    else UltraScale+'s coefficients scaled like the family's DSP delay."""
    own = COEFFICIENTS.get("family_period_ns", {}).get(family.key)
    if own is not None:
        loo = own["leave_one_out"]
        router = family.router.name if family.router else family.title
        source = (f"the clock fitted to {router}'s routed Fmax ({own['routes']} routes of {own['routed_specs']} specs; "
                  "leave-one-out error "
                  f"{loo['median_abs_error_percent']:g} % median, {loo['worst_abs_error_percent']:g} % worst)")
        return PeriodModel(own["period_ns"], 1.0, own["size_luts"], own["size_exponent"], source, own["routes"])
    return scaled_ultrascale_model(family)


def scaled_ultrascale_model(family: Family) -> PeriodModel:
    """UltraScale+'s period coefficients, scaled to a family like its DSP delay (any family without a fit of its own)."""
    source = (f"the clock fitted to the logic-depth estimate on {COEFFICIENTS['target']}"
              + ("" if family.key == "xcup" else f", scaled to {family.key} by its DSP delay"))
    return PeriodModel(COEFFICIENTS["period_ns"], family.delays.dsp_mult / _FITTED_DSP_MULT, source=source)


def period_ns(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, board: Board) -> float:
    """Estimated clock period (ns) of a register placement on a board, by its family's period model."""
    return period_model(board.family).period_ns(spec, pipeline, board.family)


def features(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, family: Family) -> dict[str, dict[str, float]]:
    """Per resource, the component sizes (bits or cells) that the fitted coefficients multiply."""
    check_spec(spec)
    pipe = resolve_pipeline(spec, pipeline)
    return fpga_kind(spec).resource_features(spec, pipe, family)


def resource_counts(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, family: Family) -> dict[str, int]:
    """LUT, LUTRAM, FF, DSP and BRAM of a placement: DSP, LUTRAM and BRAM counted from primitives, LUT and FF fitted."""
    table = COEFFICIENTS["resources"]
    counts: dict[str, int] = {"bram": 0}  # deep KAN banks only (codesign.fpga.kan.cycles.kan_bank_memory); MLP weights are registers
    for resource, parts in features(spec, pipeline, family).items():
        if resource in ("dsp", "lutram", "bram"):
            total = sum(parts.values())
        else:
            coefs = table.get(resource, {})
            total = sum(coefs.get(name, 0.0) * value for name, value in parts.items())
        counts[resource] = max(0, int(math.ceil(total)) if resource == "bram" else int(round(total)))
    return counts


def utilization_percent(counts: dict[str, int], board: Board) -> dict[str, float]:
    """Percent of the board's part per resource (LUTRAM counted with the LUTs), for the resources the part has."""
    device = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram_36k}
    return {k: round(100.0 * (counts[k] + (counts["lutram"] if k == "lut" else 0)) / n, 4) for k, n in device.items() if n}
