"""Instant resource and latency estimate of a learner's RTL from its spec alone (no RTL written, no tool run).

:func:`estimate` is the report of the analytic model: the cost model's resources (codesign.fpga.cost,
coefficients fitted by least squares against Yosys ``synth_xilinx`` on a sweep of specs, DSP tiles and
LUTRAM counted from the primitives), exact cycles from the placement (codesign.fpga.pipeline), and the
clock the pipeline choice estimated (codesign.fpga.search). The clock is an ESTIMATE of the logic-depth
estimate of codesign.fpga.timing_estimate.
"""

from __future__ import annotations

import math
from typing import Any

from codesign.fpga.boards import Board
from codesign.fpga.cost import check_spec, features
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.placement import Pipeline, PipelineChoice
from codesign.fpga.search import choose_pipeline
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["ESTIMATE_FIELDS", "estimate", "cycles", "coefficient_table", "format_estimate"]

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


def estimate(spec: KANSpec | MLPSpec, board: Board,
             pipeline: str | int | Pipeline | PipelineChoice = "ii1") -> dict[str, Any]:
    """LUT, LUTRAM, FF, DSP, BRAM, cycles, II and an estimated clock of the spec's RTL on a board, in well under a second.

    ``pipeline`` is a choice made by :func:`choose_pipeline` (a build passes its own, so nothing is searched
    twice) or a request that is resolved here.
    """
    check_spec(spec)
    if not isinstance(board, Board):
        raise ValueError(f"board={board!r}: expected a Board (codesign.fpga.boards.find_board resolves a --target)")
    family = board.family
    choice = pipeline if isinstance(pipeline, PipelineChoice) else choose_pipeline(spec, board, pipeline)
    pipeline = choice.placement
    table = COEFFICIENTS["resources"]
    out: dict[str, Any] = {}
    for resource, parts in features(spec, pipeline, family).items():
        coefs = table.get(resource, {})
        if resource in ("dsp", "lutram", "bram"):
            total = sum(parts.values())  # counted from the primitives, not fitted
        else:
            total = sum(coefs.get(name, 0.0) * value for name, value in parts.items())
        out[resource] = max(0, int(math.ceil(total)) if resource == "bram" else int(round(total)))
    out.setdefault("bram", 0)  # deep KAN banks only (codesign.fpga.kan.cycles.kan_bank_memory); MLP weights are registers
    out.update(cycles(spec, pipeline))
    period = choice.period_ns
    out["clock_mhz"] = spec.clock_mhz
    out["clock_mhz_estimate"] = round(1000.0 / period, 1)
    out["period_ns_estimate"] = round(period, 3)
    out["prediction_latency_ns"] = round(out["latency_cycles"] * period, 2)
    out["latency_ns"] = round(out["update_latency_cycles"] * period, 2)
    out["ii_ns"] = round(out["ii"] * period, 2)
    device = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram_36k}
    out["utilization_percent"] = {
        k: round(100.0 * (out[k] + (out["lutram"] if k == "lut" else 0)) / n, 4) for k, n in device.items() if n
    }
    out["clock_met"] = choice.clock_met
    if not choice.clock_met:
        out["clock_note"] = choice.note
    out["pipeline"] = choice.request
    out["pipeline_mask"] = pipeline.phases
    out["pipeline_placement"] = pipeline.to_dict()
    out["target"] = board.name
    out["estimate"] = (f"analytic model fitted to Yosys synth_xilinx on {COEFFICIENTS['fitted_on']} specs "
                       f"({COEFFICIENTS['target']}); the clock estimates the logic-depth estimate; cycles are exact")
    unchecked = [k for k in ("lut", "ff", "dsp", "lutram", "clock") if k not in family.model_checked]
    out["model_checked"] = list(family.model_checked)
    if unchecked:
        out["estimate"] += (f"; not checked for {family.title} ({family.key}): {', '.join(unchecked)} "
                            "(--strict leaves those to synthesis)")
    return out


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
        f"  model       {result['estimate']}",
    ])
