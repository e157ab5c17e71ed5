"""The MLP learner (the baseline) as the FPGA backend builds it: firmware, RTL parameters, cost and cycles, as :data:`MLP`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign.fpga.family import Family
from codesign.fpga.kind import Firmware, KindNames
from codesign.fpga.mlp import firmware
from codesign.fpga.mlp.cost import mlp_features, mlp_stage_features
from codesign.fpga.mlp.cycles import mlp_stage_structure, mlp_timing
from codesign.fpga.mlp.rtl import mlp_core_parameters, mlp_state_description, write_mlp_memories
from codesign.fpga.placement import Pipeline, StageStructure
from codesign.fpga.timing import Timing
from codesign.kan.kinds import LearnerKind, kind_named

__all__ = ["MLP", "MlpFpga"]


@dataclass(frozen=True)
class MlpFpga(KindNames):
    """The MLP core: phase registers only, weights in registers, no host port."""

    kind: LearnerKind = field(default_factory=lambda: kind_named("mlp"))
    firmware: Firmware = field(default=firmware)
    rtl_library: tuple[str, ...] = ("mem_names.svh", "pipe_reg.sv", "fixed_cast.sv", "online_control.sv", "mlp_layer.sv",
                                    "flag_count.sv", "mlp_online.sv")
    phase_cuts: bool = False
    coefficient_port: bool = False
    runtime_lr: bool = False

    def tree_terms(self, spec: Any) -> int:
        """No TREE_SPLIT: the MLP core takes phase masks only."""
        return 0

    def kept_cuts(self, spec: Any) -> int:
        """None: the MLP core takes no cuts."""
        return 0

    def idle_cuts(self, spec: Any) -> int:
        """None: the MLP core takes no cuts."""
        return 0

    def stage_structure(self, spec: Any, pipe: Pipeline) -> StageStructure:
        """codesign.fpga.mlp.cycles.mlp_stage_structure."""
        return mlp_stage_structure(spec, pipe)

    def core_parameters(self, spec: Any) -> dict[str, int | str]:
        """codesign.fpga.mlp.rtl.mlp_core_parameters."""
        return mlp_core_parameters(spec)

    def placement_parameters(self, spec: Any, pipe: Pipeline) -> dict[str, int | str]:
        """None beyond PIPE (rtl/mlp_online.sv counts its phase registers)."""
        return {}

    def write_memories(self, spec: Any, learner: Any, folder: Path) -> list[str]:
        """codesign.fpga.mlp.rtl.write_mlp_memories."""
        return write_mlp_memories(spec, learner, folder)

    def state_description(self, spec: Any) -> dict[str, Any]:
        """codesign.fpga.mlp.rtl.mlp_state_description."""
        return mlp_state_description(spec)

    def expected_timing(self, spec: Any) -> Timing:
        """codesign.fpga.mlp.cycles.mlp_timing."""
        return mlp_timing(spec)

    def resource_features(self, spec: Any, pipe: Pipeline, family: Family) -> dict[str, dict[str, float]]:
        """codesign.fpga.mlp.cost.mlp_features."""
        return mlp_features(spec, pipe, family)

    def stage_features(self, spec: Any, pipe: Pipeline, coefficients: dict[str, float]) -> list[dict[str, float]]:
        """codesign.fpga.mlp.cost.mlp_stage_features."""
        return mlp_stage_features(spec, pipe)


MLP = MlpFpga()
