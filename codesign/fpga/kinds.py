"""What the FPGA backend builds for each learner kind: one :class:`FpgaKind` per kind, asked instead of the spec's class.

A kind's FPGA entry names its HLS firmware renderer, its RTL modules and top, what its core
has (registers inside the phases, a coefficient port) and its kind-specific steps (core
parameters, memory files, where the state lives, the HLS schedule, the estimator's features).
:func:`fpga_kind` finds the entry of a spec through :func:`codesign.kan.kinds.kind_of`.
Adding a kind is one :func:`register_fpga_kind` call beside the two below (after its
``codesign.kan.kinds.register_kind``). The built-in entries are made on first use: their
steps live in the modules that ask this registry (rtl_emit, cost, timing), which import
it at their top.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from codesign.kan.kinds import LearnerKind, kind_of

__all__ = ["FpgaKind", "register_fpga_kind", "fpga_kind"]


@dataclass(frozen=True)
class FpgaKind:
    """One learner kind as the FPGA backend builds it."""

    kind: LearnerKind
    firmware: ModuleType  # renders the HLS firmware (LEARNER, TITLE, STATE_WHAT, FIRMWARE_ROWS, render_firmware, ...)
    rtl_library: tuple[str, ...]  # rtl/ modules the core needs, in compile order (the generated top comes last)
    phase_cuts: bool  # the core takes registers inside its phases (CUTS, TREE_SPLIT: codesign.fpga.pipeline)
    coefficient_port: bool  # the core has the coef_* host port (coefficient access over AXI4-Lite)
    core_parameters: Callable[[Any], dict[str, int | str]]  # spec -> the core's kind-specific SV parameters
    write_memories: Callable[[Any, Any, Any], list[str]]  # (spec, reference learner, folder) -> .mem files written
    state_description: Callable[[Any], dict[str, Any]]  # spec -> where the bench reads the state back
    expected_timing: Callable[[Any], Any]  # spec -> the HLS top's expected codesign.fpga.timing.Timing
    resource_features: Callable[[Any, Any, Any], dict[str, dict[str, float]]]  # (spec, pipeline, Family) -> estimator features
    stage_features: Callable[[Any, Any, dict[str, float]], list[dict[str, float]]]  # (spec, pipeline, coefficients) -> path ends
    runtime_lr: bool = False  # the core takes lr_up, a run-time learning-rate shift (the spec's lr_shift_span)

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


_FPGA_KINDS: dict[str, FpgaKind] = {}
_BUILTIN_LOADED: list[bool] = []  # non-empty once the built-in entries are registered


def register_fpga_kind(entry: FpgaKind) -> FpgaKind:
    """Add a kind's FPGA entry (one per registered learner kind)."""
    if entry.name in _FPGA_KINDS:
        raise ValueError(f"learner kind {entry.name!r} already has an FPGA entry")
    _FPGA_KINDS[entry.name] = entry
    return entry


def fpga_kind(spec: object) -> FpgaKind:
    """The FPGA entry of a spec's kind."""
    kind = kind_of(spec)
    if not _BUILTIN_LOADED:
        _BUILTIN_LOADED.append(True)
        _register_builtin_kinds()
    if kind.name not in _FPGA_KINDS:
        raise ValueError(f"the FPGA backend does not build the {kind.title} learner ({kind.learner})")
    return _FPGA_KINDS[kind.name]


def _register_builtin_kinds() -> None:
    """The KAN and MLP entries (imported here: these modules ask the registry)."""
    from codesign.fpga import cost, kan_firmware, mlp_firmware, rtl_emit, timing  # noqa: PLC0415
    from codesign.kan.kinds import kind_named  # noqa: PLC0415

    register_fpga_kind(FpgaKind(
        kind=kind_named("kan"), firmware=kan_firmware,
        rtl_library=("mem_names.svh", "pipe_reg.sv", "fixed_cast.sv", "const_mult.sv", "adder_tree.sv", "online_control.sv",
                     "kan_grid.sv", "kan_decode.sv", "kan_bank.sv", "kan_layer.sv", "kan_host.sv", "flag_count.sv",
                     "kan_online.sv"),
        phase_cuts=True, coefficient_port=True,
        core_parameters=rtl_emit.kan_core_parameters, write_memories=rtl_emit.write_kan_memories,
        state_description=rtl_emit.kan_state_description, expected_timing=timing.kan_timing,
        resource_features=cost.kan_features, stage_features=cost.kan_stage_features, runtime_lr=True,
    ))
    register_fpga_kind(FpgaKind(
        kind=kind_named("mlp"), firmware=mlp_firmware,
        rtl_library=("mem_names.svh", "pipe_reg.sv", "fixed_cast.sv", "online_control.sv", "mlp_layer.sv", "flag_count.sv",
                     "mlp_online.sv"),
        phase_cuts=False, coefficient_port=False,
        core_parameters=rtl_emit.mlp_core_parameters, write_memories=rtl_emit.write_mlp_memories,
        state_description=rtl_emit.mlp_state_description, expected_timing=timing.mlp_timing,
        resource_features=cost.mlp_features, stage_features=lambda spec, pipe, _coefficients: cost.mlp_stage_features(spec, pipe),
    ))
