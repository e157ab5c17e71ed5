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

from typing import Any

from codesign.fpga.boards import Board
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.family import Family, resolve_family
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import resolve_pipeline
from codesign.fpga.placement import Pipeline
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["features", "timing_features", "period_ns", "check_spec"]

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


def period_ns(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, board: Board) -> float:
    """Estimated clock period (ns) of a register placement on a board: its slowest path by the fitted coefficients."""
    timing = COEFFICIENTS["period_ns"]
    stage = timing_features(spec, pipeline, timing)
    period = sum(timing.get(k, 0.0) * v for k, v in stage.items())
    return period * board.family.delays.dsp_mult / _FITTED_DSP_MULT


def features(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline, family: Family) -> dict[str, dict[str, float]]:
    """Per resource, the component sizes (bits or cells) that the fitted coefficients multiply."""
    check_spec(spec)
    pipe = resolve_pipeline(spec, pipeline)
    return fpga_kind(spec).resource_features(spec, pipe, family)
