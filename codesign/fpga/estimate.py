"""Instant resource and latency estimate of a learner's RTL from its spec alone (no RTL written, no tool run).

:func:`estimate` is the report of the analytic model: the cost model's resources (codesign.fpga.cost,
coefficients fitted by least squares against Yosys ``synth_xilinx`` on a sweep of specs, DSP tiles and
LUTRAM counted from the primitives), exact cycles from the placement (codesign.fpga.pipeline), and the
clock the pipeline choice estimated (codesign.fpga.search). The clock is an ESTIMATE of the logic-depth
estimate of codesign.fpga.timing_estimate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from codesign.fpga.boards import Board
from codesign.fpga.cost import check_spec, period_model, resource_counts, utilization_percent
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.placement import Pipeline, PipelineChoice
from codesign.fpga.search import choose_pipeline
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["ESTIMATE_FIELDS", "AnalyticEstimate", "analytic_estimate", "estimate", "cycles", "coefficient_table", "format_estimate",
           "format_sharing"]

ESTIMATE_FIELDS = ("lut", "lutram", "ff", "dsp", "bram", "latency_cycles", "update_latency_cycles", "ii", "clock_mhz_estimate")


def cycles(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> dict[str, int]:
    """Prediction latency, update latency and II in cycles (docs/rtl.md): exact, from the register placement."""
    check_spec(spec)
    timing = pipeline_timing(spec, resolve_pipeline(spec, pipeline))
    return {
        "latency_cycles": timing["prediction_latency_cycles"],
        "update_latency_cycles": timing["update_latency_cycles"],
        "ii": timing["ii"],
    }


def coefficient_table() -> dict[str, Any]:
    """The fitted coefficients and where they come from (estimate_coefficients.py)."""
    return COEFFICIENTS


def _check_inputs(spec: KANSpec | MLPSpec, board: Board) -> None:
    """One line for a spec the model cannot take or a board that was not resolved."""
    check_spec(spec)
    if not isinstance(board, Board):
        raise ValueError(f"board={board!r}: expected a Board (codesign.fpga.boards.find_board resolves a --target)")


@dataclass(frozen=True)
class AnalyticEstimate:
    """The analytic model's estimate of one placement on one board (report.json's ``estimate`` section)."""

    lut: int
    lutram: int
    ff: int
    dsp: int
    bram: int
    latency_cycles: int  # prediction latency; exact
    update_latency_cycles: int
    ii: int
    clock_mhz: float  # the spec's target
    clock_mhz_estimate: float
    period_ns_estimate: float
    prediction_latency_ns: float
    latency_ns: float  # prediction + update
    ii_ns: float
    utilization_percent: dict[str, float]
    clock_met: bool
    clock_note: str | None  # the choice's own line when the clock is missed
    pipeline: str  # the request the placement was chosen for
    pipeline_mask: int
    pipeline_placement: dict[str, Any]
    target: str
    estimate: str  # what the figures are and what the model was not checked on
    model_checked: list[str]
    # with shared products (Pipeline.share > 1): the share and what the same placement unshared would have been,
    # the cost in cycles stated beside the DSPs it saves; None otherwise
    sharing: dict[str, int] | None = None
    # what would bring the DSPs onto the part when this placement does not share its products; None otherwise
    fit_hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json and ``codesign estimate --json`` (clock_note, sharing and fit_hint only when set)."""
        out = asdict(self)
        for optional in ("clock_note", "sharing", "fit_hint"):
            if out[optional] is None:
                del out[optional]
        return out


_SHARE_HINT = "products can share multipliers: --pipeline auto chooses a share, or add :SHARE to the placement"


def analytic_estimate(spec: KANSpec | MLPSpec, board: Board, choice: PipelineChoice) -> AnalyticEstimate:
    """The analytic estimate of a resolved pipeline choice on a board, in well under a second."""
    _check_inputs(spec, board)
    family = board.family
    pipeline = choice.placement
    counts = resource_counts(spec, pipeline, family)
    cyc = cycles(spec, pipeline)
    period = choice.period_ns
    utilization = utilization_percent(counts, board)
    sharing = None
    if pipeline.share > 1:
        unshared = replace(pipeline, share=1)
        alone = cycles(spec, unshared)
        sharing = {"share": pipeline.share, "dsp_unshared": resource_counts(spec, unshared, family)["dsp"],
                   "ii_unshared": alone["ii"], "update_latency_cycles_unshared": alone["update_latency_cycles"]}
    text = (f"analytic model fitted to Yosys synth_xilinx on {COEFFICIENTS['fitted_on']} specs "
            f"({COEFFICIENTS['target']}); {period_model(family).source}; cycles are exact")
    unchecked = [k for k in ("lut", "ff", "dsp", "lutram", "clock") if k not in family.model_checked]
    if unchecked:
        checkers = f"synthesis and {family.router.name}" if family.router else "synthesis"
        text += f"; on {family.title} ({family.key}) --strict leaves {', '.join(unchecked)} to {checkers}"
    return AnalyticEstimate(
        lut=counts["lut"], lutram=counts["lutram"], ff=counts["ff"], dsp=counts["dsp"], bram=counts["bram"],
        latency_cycles=cyc["latency_cycles"], update_latency_cycles=cyc["update_latency_cycles"], ii=cyc["ii"],
        clock_mhz=spec.clock_mhz, clock_mhz_estimate=round(1000.0 / period, 1), period_ns_estimate=round(period, 3),
        prediction_latency_ns=round(cyc["latency_cycles"] * period, 2),
        latency_ns=round(cyc["update_latency_cycles"] * period, 2), ii_ns=round(cyc["ii"] * period, 2),
        utilization_percent=utilization, clock_met=choice.clock_met, clock_note=None if choice.clock_met else choice.note,
        pipeline=choice.request, pipeline_mask=pipeline.phases, pipeline_placement=pipeline.to_dict(), target=board.name,
        estimate=text, model_checked=list(family.model_checked), sharing=sharing,
        fit_hint=(_SHARE_HINT if utilization.get("dsp", 0.0) > 100.0 and pipeline.share == 1 and fpga_kind(spec).phase_cuts
                  else None),
    )


def estimate(spec: KANSpec | MLPSpec, board: Board,
             pipeline: str | int | Pipeline | PipelineChoice = "ii1") -> dict[str, Any]:
    """LUT, LUTRAM, FF, DSP, BRAM, cycles, II and an estimated clock of the spec's RTL on a board, as plain data.

    ``pipeline`` is a choice made by :func:`choose_pipeline` (a build passes its own, so nothing is searched
    twice) or a request that is resolved here.
    """
    _check_inputs(spec, board)
    choice = pipeline if isinstance(pipeline, PipelineChoice) else choose_pipeline(spec, board, pipeline)
    return analytic_estimate(spec, board, choice).to_dict()


def format_estimate(spec: KANSpec | MLPSpec, result: dict[str, Any]) -> str:
    """The estimate as a few lines for the terminal."""
    util = result["utilization_percent"]
    kind = fpga_kind(spec).kind.title
    return "\n".join([
        f"ESTIMATE for {kind} {'-'.join(map(str, spec.widths))} on {result['target']} "
        f"(pipeline {result['pipeline']}: {result['pipeline_placement']['text']}):",
        f"  resources   {result['lut']:,} LUT ({util.get('lut', 0):.2f} % with LUTRAM), {result['lutram']:,} LUTRAM, "
        f"{result['ff']:,} FF ({util.get('ff', 0):.2f} %), {result['dsp']:,} DSP ({util.get('dsp', 0):.2f} %), {result['bram']} BRAM",
        f"  cycles      prediction {result['latency_cycles']}, update {result['update_latency_cycles']}, II {result['ii']} (exact)",
        f"  clock       ~{result['clock_mhz_estimate']:g} MHz (estimate; target {result['clock_mhz']:g} MHz"
        f"{'' if result['clock_met'] else ', NOT met'}): prediction {result['prediction_latency_ns']:g} ns, "
        f"prediction + update {result['latency_ns']:g} ns, {result['ii_ns']:g} ns per sample",
        *([format_sharing(result)] if result.get("sharing") else []),
        f"  model       {result['estimate']}",
    ])


def format_sharing(result: dict[str, Any]) -> str:
    """The estimate's sharing line: what sharing the products saves (DSPs) and costs (II, update latency)."""
    shared = result["sharing"]
    return (f"  sharing     {shared['share']} products per multiplier: {result['dsp']:,} DSP where unshared "
            f"{shared['dsp_unshared']:,}; II {result['ii']} where unshared {shared['ii_unshared']}, update after "
            f"{result['update_latency_cycles']} cycles where {shared['update_latency_cycles_unshared']}")
