"""The RTL's pipeline choices: the register mask PIPE and the II and latencies it gives (no heavy imports)."""

from __future__ import annotations

from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["PIPELINES", "parse_pipeline", "pipeline_mask", "pipeline_timing"]

PIPELINES = ("ii1", "staged")


def parse_pipeline(text: str) -> str | int:
    """A pipeline as the command line gives it: ii1, staged, or an integer register mask (0x.. allowed)."""
    if text in PIPELINES:
        return text
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"--pipeline={text!r}: choose one of {', '.join(PIPELINES)} or an integer register mask") from None


def pipeline_mask(spec: KANSpec | MLPSpec, pipeline: str | int = "ii1") -> int:
    """The register mask PIPE (bit p: a stage boundary after phase p, p = 0..2L-2) of a pipeline choice."""
    n_bits = 2 * len(spec.layer_shapes) - 1
    if isinstance(pipeline, str):
        if pipeline == "ii1":
            return 0
        if pipeline == "staged":
            return (1 << n_bits) - 1
        raise ValueError(f"pipeline={pipeline!r}: choose one of {', '.join(PIPELINES)} or an integer register mask")
    if isinstance(pipeline, bool) or not isinstance(pipeline, int) or not 0 <= pipeline < (1 << n_bits):
        raise ValueError(f"pipeline={pipeline!r}: a register mask needs {n_bits} bits (0..{(1 << n_bits) - 1})")
    return pipeline


def pipeline_timing(spec: KANSpec | MLPSpec, mask: int) -> dict[str, int]:
    """II and latencies (cycles) that a register mask gives, as the bench measures them.

    Latency counts from the cycle in which the sample is accepted (ap_start && ap_ready; that
    cycle computes its first stage) to the first cycle in which y_hat_ap_vld (prediction) or
    ap_done (update committed and visible to the next sample) is high.
    """
    n_layers = len(spec.layer_shapes)
    stages = 1 + bin(mask).count("1")
    pred_stage = bin(mask & ((1 << (n_layers - 1)) - 1)).count("1")
    return {
        "stages": stages,
        "ii": stages,
        "prediction_latency_cycles": pred_stage + 1,
        "update_latency_cycles": stages,
    }
