"""The KAN learner as the FPGA backend builds it: firmware, RTL parameters, cost and cycles, exported as :data:`KAN`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codesign.fpga.family import Family
from codesign.fpga.kan import firmware
from codesign.fpga.kan.cost import kan_features, kan_stage_features
from codesign.fpga.kan.cycles import kan_bank_geometry, kan_bank_memory, kan_stage_structure, kan_timing
from codesign.fpga.kan.rtl import kan_core_parameters, kan_placement_parameters, kan_state_description, write_kan_memories
from codesign.fpga.kind import Firmware, KindNames
from codesign.fpga.placement import CUT_BITS, Pipeline, StageStructure
from codesign.fpga.timing import Timing
from codesign.kan.kinds import LearnerKind, kind_named

__all__ = ["KAN", "KanFpga"]


@dataclass(frozen=True)
class KanFpga(KindNames):
    """The KAN core: registers inside its phases, a coefficient host port, a run-time learning-rate shift."""

    kind: LearnerKind = field(default_factory=lambda: kind_named("kan"))
    firmware: Firmware = field(default=firmware)
    rtl_library: tuple[str, ...] = ("mem_names.svh", "dsp_mult.svh", "pipe_reg.sv", "fixed_cast.sv", "const_mult.sv", "adder_tree.sv",
                                    "shared_mult.sv", "online_control.sv", "kan_grid.sv", "kan_decode.sv", "kan_bank.sv", "kan_layer.sv",
                                    "kan_host.sv", "flag_count.sv", "kan_online.sv")
    phase_cuts: bool = True
    coefficient_port: bool = True
    runtime_lr: bool = True

    def tree_terms(self, spec: Any) -> int:
        """Terms of the widest forward adder tree: a layer's inputs times the banks."""
        return max(n_in for n_in, _ in spec.layer_shapes) * kan_bank_geometry(spec)[0]

    def kept_cuts(self, spec: Any) -> int:
        """The bank read register when the banks are block RAM (the read is the RAM's own register)."""
        return 1 << CUT_BITS["read"] if kan_bank_memory(spec) == "bram" else 0

    def idle_cuts(self, spec: Any) -> int:
        """The register after a block RAM's output mux when the banks are LUTRAM (kan_layer.sv builds it behind block RAM only)."""
        return 0 if kan_bank_memory(spec) == "bram" else 1 << CUT_BITS["bram_out"]

    def stage_structure(self, spec: Any, pipe: Pipeline) -> StageStructure:
        """codesign.fpga.kan.cycles.kan_stage_structure."""
        return kan_stage_structure(spec, pipe)

    def core_parameters(self, spec: Any) -> dict[str, int | str]:
        """codesign.fpga.kan.rtl.kan_core_parameters."""
        return kan_core_parameters(spec)

    def placement_parameters(self, spec: Any, pipe: Pipeline) -> dict[str, int | str]:
        """codesign.fpga.kan.rtl.kan_placement_parameters."""
        return kan_placement_parameters(spec, pipe)

    def write_memories(self, spec: Any, learner: Any, folder: Path) -> list[str]:
        """codesign.fpga.kan.rtl.write_kan_memories."""
        return write_kan_memories(spec, learner, folder)

    def state_description(self, spec: Any) -> dict[str, Any]:
        """codesign.fpga.kan.rtl.kan_state_description."""
        return kan_state_description(spec)

    def expected_timing(self, spec: Any) -> Timing:
        """codesign.fpga.kan.cycles.kan_timing."""
        return kan_timing(spec)

    def resource_features(self, spec: Any, pipe: Pipeline, family: Family) -> dict[str, dict[str, float]]:
        """codesign.fpga.kan.cost.kan_features."""
        return kan_features(spec, pipe, family)

    def stage_features(self, spec: Any, pipe: Pipeline, coefficients: dict[str, float]) -> list[dict[str, float]]:
        """codesign.fpga.kan.cost.kan_stage_features."""
        return kan_stage_features(spec, pipe, coefficients)


KAN = KanFpga()
