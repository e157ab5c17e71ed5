"""The FPGA backend's registry of learner kinds: one :class:`~codesign.fpga.kind.FpgaKind` per kind, asked instead of the spec's class.

A kind's entry (its own package: codesign.fpga.kan, codesign.fpga.mlp) names its HLS firmware,
its RTL modules and top, what its core has, and its kind-specific steps (core parameters,
memory files, where the state lives, cycles, cost). :func:`fpga_kind` finds the entry of a spec
through :func:`codesign.kan.kinds.kind_of`. Adding a kind is a package that exports one entry
and a :func:`register_fpga_kind` call below (after its ``codesign.kan.kinds.register_kind``).
The per-kind packages import only the shared leaves (placement, cost_parts, timing, templates),
never this registry, so nothing imports in a circle.
"""

from __future__ import annotations

from codesign.fpga.kan import KAN
from codesign.fpga.kind import FpgaKind
from codesign.fpga.mlp import MLP
from codesign.kan.kinds import kind_of

__all__ = ["FpgaKind", "register_fpga_kind", "fpga_kind"]

_FPGA_KINDS: dict[str, FpgaKind] = {}


def register_fpga_kind(entry: FpgaKind) -> FpgaKind:
    """Add a kind's FPGA entry (one per registered learner kind)."""
    if entry.name in _FPGA_KINDS:
        raise ValueError(f"learner kind {entry.name!r} already has an FPGA entry")
    _FPGA_KINDS[entry.name] = entry
    return entry


def fpga_kind(spec: object) -> FpgaKind:
    """The FPGA entry of a spec's kind."""
    kind = kind_of(spec)
    if kind.name not in _FPGA_KINDS:
        raise ValueError(f"the FPGA backend does not build the {kind.title} learner ({kind.learner})")
    return _FPGA_KINDS[kind.name]


register_fpga_kind(KAN)
register_fpga_kind(MLP)
