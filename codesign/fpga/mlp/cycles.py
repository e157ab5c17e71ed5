"""The MLP core's cycles: a stage per phase register (rtl/mlp_online.sv), and the HLS stage count."""

from __future__ import annotations

from codesign.fpga.placement import Pipeline, StageStructure
from codesign.fpga.timing import CAST, MULTIPLY, WRITE, Timing, adder_tree_clocks
from codesign.kan.spec import MLPSpec

__all__ = ["mlp_stage_structure", "mlp_timing"]


def mlp_stage_structure(spec: MLPSpec, pipe: Pipeline) -> StageStructure:
    """Stages and prediction stage of an MLP phase mask: one stage per phase register, no overlapped front."""
    n_layers = len(spec.layer_shapes)
    return StageStructure(n_stages=1 + bin(pipe.phases).count("1"),
                          pred_stage=bin(pipe.phases & ((1 << (n_layers - 1)) - 1)).count("1"), n_front=0, read_in_front=False)


def mlp_timing(spec: MLPSpec) -> Timing:
    """The MLP top's analytic stage count (MACs, tree, cast per layer)."""
    stages: dict[str, int] = {}
    for layer, (n_in, _) in enumerate(spec.layer_shapes):
        stages[f"forward_l{layer}"] = MULTIPLY + adder_tree_clocks(n_in + 1) + CAST
    stages["error"] = CAST
    for layer in range(len(spec.layer_shapes) - 1, 0, -1):
        stages[f"gradient_l{layer}"] = MULTIPLY + adder_tree_clocks(spec.layer_shapes[layer][1]) + CAST
    stages["update_l0"] = MULTIPLY + CAST + WRITE
    latency = sum(stages.values())
    prediction = sum(v for k, v in stages.items() if k.startswith("forward"))
    # The weights sit in registers and are used from the first cycle.
    return Timing(prediction, latency, latency, stages=stages)
