"""A spec's pipeline: its placement checked against its core, and the II and latencies the kind counts for it.

The placement itself and the command-line forms are :mod:`codesign.fpga.placement`; the cycles
are the kind's (:meth:`codesign.fpga.kind.FpgaKind.stage_structure`), asked through the registry.
"""

from __future__ import annotations

from codesign.fpga.kinds import fpga_kind
from codesign.fpga.placement import Pipeline, check_placement
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["resolve_pipeline", "pipeline_mask", "pipeline_timing"]


def resolve_pipeline(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> Pipeline:
    """The register placement of a pipeline choice other than ``auto`` (checked against the spec's core)."""
    return check_placement(pipeline, len(spec.layer_shapes), fpga_kind(spec).phase_cuts)


def pipeline_mask(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> int:
    """The phase mask PIPE (bit p: a stage boundary after phase p, p = 0..2L-2) of a pipeline choice."""
    return resolve_pipeline(spec, pipeline).phases


def pipeline_timing(spec: KANSpec | MLPSpec, pipeline: int | Pipeline) -> dict[str, int]:
    """II and latencies (cycles) that a register placement gives, as the bench measures them.

    II is the stages less the overlapped front. Latency counts from the cycle in which the
    sample is accepted (ap_start && ap_ready; that cycle computes its first stage) to the first
    cycle in which y_hat_ap_vld (prediction) or ap_done (update committed and visible to the next
    sample) is high.
    """
    pipe = resolve_pipeline(spec, pipeline)
    structure = fpga_kind(spec).stage_structure(spec, pipe)
    return {
        "stages": structure.n_stages,
        "ii": structure.n_stages - structure.n_front,
        "overlap_stages": structure.n_front,
        "prediction_latency_cycles": structure.pred_stage + 1,
        "update_latency_cycles": structure.n_stages,
    }
