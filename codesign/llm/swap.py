"""Swap a model's submodules — every linear layer, every attention block — and put the originals back.

The harness caches loaded models per process, so a method under evaluation must not leave its
modules behind: `swapped(model, replacements)` installs replacements for the duration of a `with`
block and restores the originals even when the block raises. `replace_modules` / `restore_modules`
are the same without the context manager (e.g. to save a compressed model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import torch

__all__ = [
    "replace_modules",
    "restore_modules",
    "swapped",
    "linear_replacements",
    "attention_replacements",
]


def _parent(model: torch.nn.Module, name: str) -> tuple[torch.nn.Module, str]:
    if not name:
        raise ValueError("cannot replace the model itself")
    path, _, leaf = name.rpartition(".")
    try:
        return (model.get_submodule(path) if path else model), leaf
    except AttributeError as exc:
        raise ValueError(f"the model has no submodule {name!r}") from exc


def replace_modules(model: torch.nn.Module, replacements: Mapping[str, torch.nn.Module]) -> dict[str, torch.nn.Module]:
    """Install replacements by qualified name; returns the originals (for restore_modules)."""
    originals: dict[str, torch.nn.Module] = {}
    for name in replacements:
        parent, leaf = _parent(model, name)
        if not hasattr(parent, leaf):
            raise ValueError(f"the model has no submodule {name!r}")
    for name, module in replacements.items():
        parent, leaf = _parent(model, name)
        originals[name] = getattr(parent, leaf)
        setattr(parent, leaf, module)
    return originals


def restore_modules(model: torch.nn.Module, originals: Mapping[str, torch.nn.Module]) -> None:
    """Put back modules returned by replace_modules."""
    for name, module in originals.items():
        parent, leaf = _parent(model, name)
        setattr(parent, leaf, module)


@contextmanager
def swapped(model: torch.nn.Module, replacements: Mapping[str, torch.nn.Module]) -> Iterator[torch.nn.Module]:
    """Within the block the model runs with the replacements; afterwards with its original modules."""
    originals = replace_modules(model, replacements)
    try:
        yield model
    finally:
        restore_modules(model, originals)


def linear_replacements(
    model: torch.nn.Module,
    make: Callable[[str, torch.nn.Linear], torch.nn.Module],
    exclude: Sequence[str] = ("lm_head",),
    include: Callable[[str], bool] | None = None,
) -> dict[str, torch.nn.Module]:
    """make(name, linear) for every nn.Linear whose name is not in `exclude` (and passes `include`)."""
    chosen = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name.split(".")[-1] not in exclude and name not in exclude:
            if include is None or include(name):
                chosen[name] = make(name, module)
    if not chosen:
        raise ValueError("the model has no linear layers to replace")
    return chosen


def attention_replacements(
    model: torch.nn.Module, make: Callable[[int, torch.nn.Module], torch.nn.Module], attribute: str = "self_attn"
) -> dict[str, torch.nn.Module]:
    """make(layer_index, attention) for the attention block (`attribute`) of every decoder layer."""
    chosen = {}
    for name, module in model.named_modules():
        if name.endswith("." + attribute):
            chosen[name] = make(getattr(module, "layer_idx", len(chosen)), module)
    if not chosen:
        raise ValueError(f"the model has no '{attribute}' modules")
    return chosen
