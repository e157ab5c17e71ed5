"""What the FPGA backend asks of a learner kind: the :class:`FpgaKind` protocol (no registry, no kind imported here).

Each kind lives in its own package (``codesign.fpga.kan``, ``codesign.fpga.mlp``) holding its
firmware, RTL parameters, cost and cycles, and exports one value that satisfies this protocol;
``codesign.fpga.kinds`` registers them. The modules those packages share (placement, cost_parts,
timing, templates) never import a kind or the registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import numpy as np

from codesign.fpga.family import Family
from codesign.fpga.placement import Pipeline, StageStructure
from codesign.fpga.timing import Timing
from codesign.kan.kinds import LearnerKind

__all__ = ["Firmware", "FpgaKind", "KindNames"]


class Firmware(Protocol):
    """A kind's HLS firmware renderer (a module: codesign.fpga.kan.firmware, codesign.fpga.mlp.firmware)."""

    LEARNER: str
    TITLE: str
    STATE_WHAT: str
    FIRMWARE_ROWS: dict[str, str]

    def render_firmware(self, spec: Any, coefficients: Any, seed: int, timing: Timing | None = None) -> dict[str, str]:
        """The generated C++ files: name -> text."""
        ...

    def learner_state(self, learner: Any) -> Any:
        """The reference learner's state as the firmware holds it."""
        ...

    def flat_state(self, state: Any) -> np.ndarray:
        """That state as one integer vector, in the C-simulation's order."""
        ...

    def state_names(self, spec: Any) -> list[str]:
        """One name per entry of flat_state."""
        ...


class KindNames:
    """The module and file names that follow from a kind's name (mixed into each kind's entry)."""

    kind: LearnerKind

    @property
    def name(self) -> str:
        """The kind's name ("kan"): the manifests' kind and the RTL core's prefix."""
        return self.kind.name

    @property
    def core(self) -> str:
        """The RTL core module: ``kan_online``."""
        return f"{self.kind.name}_online"

    @property
    def top(self) -> str:
        """The generated RTL top: ``kan_online_top``."""
        return f"{self.core}_top"

    @property
    def axi_top(self) -> str:
        """The generated AXI RTL top: ``kan_online_axi``."""
        return f"{self.core}_axi"


class FpgaKind(Protocol):
    """One learner kind as the FPGA backend builds it."""

    @property
    def kind(self) -> LearnerKind:
        """The learner kind (codesign.kan.kinds) this entry builds."""
        ...

    @property
    def firmware(self) -> Firmware:
        """Its HLS firmware renderer."""
        ...

    @property
    def rtl_library(self) -> tuple[str, ...]:
        """The rtl/ modules the core needs, in compile order (the generated top comes last)."""
        ...

    @property
    def phase_cuts(self) -> bool:
        """The core takes registers inside its phases (CUTS, TREE_SPLIT)."""
        ...

    @property
    def coefficient_port(self) -> bool:
        """The core has the coef_* host port (coefficient access over AXI4-Lite)."""
        ...

    @property
    def runtime_lr(self) -> bool:
        """The core takes lr_up, a run-time learning-rate shift (the spec's lr_shift_span)."""
        ...

    @property
    def name(self) -> str:
        """The kind's name."""
        ...

    @property
    def core(self) -> str:
        """The RTL core module."""
        ...

    @property
    def top(self) -> str:
        """The generated RTL top."""
        ...

    @property
    def axi_top(self) -> str:
        """The generated AXI RTL top."""
        ...

    def tree_terms(self, spec: Any) -> int:
        """Terms of the widest adder tree that TREE_SPLIT cuts (0: the core takes no tree split)."""
        ...

    def kept_cuts(self, spec: Any) -> int:
        """The CUTS bits every placement of the spec must hold (a registered memory read, say); 0 for none."""
        ...

    def idle_cuts(self, spec: Any) -> int:
        """The CUTS bits that build no register for the spec (the search does not try them); 0 for none."""
        ...

    def stage_structure(self, spec: Any, pipe: Pipeline) -> StageStructure:
        """The core's stages, prediction stage and overlapped front for a placement."""
        ...

    def core_parameters(self, spec: Any) -> dict[str, int | str]:
        """The core's kind-specific SV parameters of the spec (grid, banks, types)."""
        ...

    def placement_parameters(self, spec: Any, pipe: Pipeline) -> dict[str, int | str]:
        """The core's SV parameters of a placement beyond PIPE (the cuts and the stage structure)."""
        ...

    def write_memories(self, spec: Any, learner: Any, folder: Path) -> list[str]:
        """The initial state and ROMs as .mem files in ``folder``; their names."""
        ...

    def state_description(self, spec: Any) -> dict[str, Any]:
        """Where the bench reads the state back."""
        ...

    def expected_timing(self, spec: Any) -> Timing:
        """The HLS top's analytic stage count."""
        ...

    def resource_features(self, spec: Any, pipe: Pipeline, family: Family) -> dict[str, dict[str, float]]:
        """Per resource, the component sizes that the estimator's coefficients multiply."""
        ...

    def stage_features(self, spec: Any, pipe: Pipeline, coefficients: dict[str, float]) -> list[dict[str, float]]:
        """The timing features of every register-to-register path's end."""
        ...
