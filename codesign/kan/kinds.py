"""The learner kinds (KAN, MLP): the one registry that code asks instead of testing a spec's class.

A :class:`LearnerKind` names a kind's spec class, its bit-exact reference learner and what the
kind has (a B-spline grid, initial coefficients from a float model). :func:`kind_of` finds the
kind of a spec by its type, :func:`kind_of_learner` by the command line's learner name. Adding
a kind is one :func:`register_kind` call here (and one in each backend that builds it, e.g.
``codesign.fpga.kinds``). The reference is imported on first use: its numba kernels are slow to
load, and light modules (the pipeline and timing models) ask the registry too.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from codesign.kan.spec import KANSpec, MLPSpec

if TYPE_CHECKING:
    from codesign.kan.learner_base import OnlineLearner

__all__ = ["LearnerKind", "register_kind", "kind_of", "kind_named", "kind_of_learner", "learner_names", "spec_from_mapping",
           "KINDS"]


def _load(path: str) -> Any:
    """The object at ``module:name``."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _arrays(state: Any) -> list[np.ndarray]:
    """The arrays of a state (a list of arrays, or of tuples of arrays), in order."""
    if isinstance(state, (list, tuple)):
        return [a for item in state for a in _arrays(item)]
    return [np.asarray(state)]


@dataclass(frozen=True)
class LearnerKind:
    """One kind of online learner: its names, its spec class, its reference and what it has."""

    name: str  # the manifests' "kind" and the RTL core's prefix: "kan"
    learner: str  # the command line's learner and the HLS / RTL top's prefix: "kan_online"
    title: str  # how reports name it: "KAN"
    spec_class: type[KANSpec] | type[MLPSpec]
    reference: str  # "module:Class" of the bit-exact reference learner (an OnlineLearner)
    initial_state: str  # "module:function" (spec, seed) -> the float initial state the reference starts from
    has_grid: bool  # the inputs meet a B-spline grid (grid_range, grid_size): grid corners, grid-exact act_t, --grid
    takes_initial_coefficients: bool  # a float model's coefficients can replace the seed's (--init)

    def learner_class(self) -> type[OnlineLearner]:
        """The reference learner's class."""
        cls: type[OnlineLearner] = _load(self.reference)
        return cls

    def initial_values(self, spec: KANSpec | MLPSpec, seed: int) -> np.ndarray:
        """Every float initial value of the state for ``seed``, flat."""
        return np.concatenate([a.ravel() for a in _arrays(_load(self.initial_state)(spec, seed))])


KINDS: dict[str, LearnerKind] = {}


def register_kind(kind: LearnerKind) -> LearnerKind:
    """Add a kind to the registry (its name, learner name and spec class must be new)."""
    for other in KINDS.values():
        if kind.name == other.name or kind.learner == other.learner or kind.spec_class is other.spec_class:
            raise ValueError(f"learner kind {kind.name!r} clashes with the registered {other.name!r}")
    KINDS[kind.name] = kind
    return kind


def kind_of(spec: object) -> LearnerKind:
    """The kind of a spec, by its type."""
    for kind in KINDS.values():
        if isinstance(spec, kind.spec_class):
            return kind
    expected = " or ".join(k.spec_class.__name__ for k in KINDS.values())
    raise ValueError(f"expected a {expected}, got {type(spec).__name__}")


def kind_named(name: str) -> LearnerKind:
    """The kind registered as ``name`` ("kan", "mlp")."""
    if name not in KINDS:
        raise ValueError(f"unknown learner kind {name!r}: expected {' or '.join(repr(k) for k in KINDS)}")
    return KINDS[name]


def kind_of_learner(learner: object) -> LearnerKind | None:
    """The kind whose learner is named ``learner`` ("kan_online"), or None."""
    return next((k for k in KINDS.values() if k.learner == learner), None)


def spec_from_mapping(kind: str, data: Mapping[str, Any]) -> KANSpec | MLPSpec:
    """Build a spec of a registered kind from plain data (a parsed TOML/YAML config); unknown keys are an error."""
    cls = kind_named(kind).spec_class
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown {kind} spec field(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
    return cls(**data)


def learner_names() -> list[str]:
    """The learner names of every kind, in registration order."""
    return [k.learner for k in KINDS.values()]


register_kind(LearnerKind(
    name="kan", learner="kan_online", title="KAN", spec_class=KANSpec,
    reference="codesign.kan.fixed_learner:KANLearner", initial_state="codesign.kan.fixed_learner:init_kan_coefficients",
    has_grid=True, takes_initial_coefficients=True,
))
register_kind(LearnerKind(
    name="mlp", learner="mlp_online", title="MLP", spec_class=MLPSpec,
    reference="codesign.kan.mlp_learner:MLPLearner", initial_state="codesign.kan.mlp_learner:init_mlp_weights",
    has_grid=False, takes_initial_coefficients=False,
))
