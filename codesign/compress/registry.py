"""The one quantizer registry: each config class names its handler through @register_quantizer.

    @register_quantizer("kmeans", KMeansConfig)
    def quantize_kmeans(weight, config): ...

`quantize(weight, config, covariance)` dispatches on the config's class (every path uses it: the
linear layers, Q + L R's base, quantize_, the model pipeline); `needs_covariance(config)` says
whether a config wants E[x xᵀ] of the layer's inputs; `config_to_dict` / `config_from_dict` give a
versioned, JSON-ready form of any registered config (nested configs included).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Quantizer", "register_quantizer", "register_qat_grid", "qat_grids", "quantizer_for", "quantizer_names", "quantize",
           "needs_covariance", "config_to_dict", "config_from_dict"]

# modules whose handlers register themselves on import (kept light: imported on first dispatch)
_BUILTIN = ("integer", "kmeans", "vq", "qer", "gptq", "qat")


@dataclass(frozen=True)
class Quantizer:
    """A registered quantizer: its name, config class, handler and whether it reads calibration activations."""

    name: str
    config_type: type
    handler: Callable[..., Any] | None
    takes_covariance: bool
    covariance_rule: Callable[[Any], bool]
    qat_grid: type | None = None  # how QATLinear trains on this quantizer's grid (codesign.compress.qat)


_BY_TYPE: dict[type, Quantizer] = {}
_BY_NAME: dict[str, Quantizer] = {}


def register_quantizer(name: str, config_type: type, *, covariance: bool | Callable[[Any], bool] = False,
                       takes_covariance: bool | None = None) -> Callable:
    """Decorator: register handler(weight, config[, covariance]) for config_type under `name`.

    covariance: whether (or, as a function of the config, when) the quantizer needs E[x xᵀ];
    takes_covariance: the handler's third argument (default: it needs one for some config).
    """
    rule = covariance if callable(covariance) else (lambda config, value=bool(covariance): value)
    takes = bool(covariance) if takes_covariance is None else takes_covariance

    def decorate(handler: Callable[..., Any] | None) -> Callable[..., Any] | None:
        entry = Quantizer(name, config_type, handler, takes, rule,
                          _BY_NAME[name].qat_grid if name in _BY_NAME else None)
        if _BY_NAME.get(name, entry).config_type is not config_type:
            raise ValueError(f"quantizer name {name!r} is taken by {_BY_NAME[name].config_type.__name__}")
        _BY_TYPE[config_type] = entry
        _BY_NAME[name] = entry
        return handler

    return decorate


def register_qat_grid(name: str) -> Callable[[type], type]:
    """Decorator: the class that trains a QATLinear on the grid of the registered quantizer `name`."""
    def decorate(cls: type) -> type:
        if name not in _BY_NAME:
            raise ValueError(f"no quantizer {name!r} to attach a QAT grid to")
        entry = dataclasses.replace(_BY_NAME[name], qat_grid=cls)
        _BY_NAME[name] = _BY_TYPE[entry.config_type] = entry
        return cls
    return decorate


def qat_grids() -> dict[str, type]:
    """Quantizer name -> QAT grid class, for the quantizers that can be trained."""
    return {name: e.qat_grid for name, e in _BY_NAME.items() if e.qat_grid is not None}


def _load_builtin() -> None:
    for module in _BUILTIN:
        importlib.import_module(f"codesign.compress.{module}")


def quantizer_for(config: Any) -> Quantizer:
    """The registered quantizer of a config object; ValueError for an unregistered type."""
    entry = _BY_TYPE.get(type(config))
    if entry is None:
        _load_builtin()
        entry = _BY_TYPE.get(type(config))
    if entry is None:
        raise ValueError(f"no quantizer for config type {type(config).__name__}")
    return entry


def quantizer_names() -> list[str]:
    """Names of every registered quantizer."""
    _load_builtin()
    return sorted(_BY_NAME)


def needs_covariance(config: Any) -> bool:
    """True when the config's quantizer weights its error by the layer's input second moment E[x xᵀ]."""
    return quantizer_for(config).covariance_rule(config)


def quantize(weight: torch.Tensor, config: Any, covariance: torch.Tensor | None = None) -> Any:
    """Quantize W[N, K] with the quantizer registered for the config's class (covariance: E[x xᵀ], [K, K])."""
    entry = quantizer_for(config)
    if entry.handler is None:
        raise ValueError(f"{entry.name} trains on data: it has no one-shot weight quantizer "
                         "(codesign.compress.qat.qat_model)")
    if entry.takes_covariance:
        return entry.handler(weight, config, covariance)
    return entry.handler(weight, config)


def config_to_dict(config: Any) -> dict:
    """{"quantizer": name, "version": V, **fields} (nested registered configs as dicts)."""
    entry = quantizer_for(config)
    fields = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if type(value) in _BY_TYPE or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
            value = config_to_dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        fields[f.name] = value
    return {"quantizer": entry.name, "version": getattr(config, "VERSION", 1), **fields}


def config_from_dict(data: dict) -> Any:
    """The config config_to_dict gave `data` for; ValueError for an unknown quantizer or another version."""
    if not isinstance(data, dict) or "quantizer" not in data:
        raise ValueError("a quantizer config must be a mapping with a 'quantizer' name")
    _load_builtin()
    entry = _BY_NAME.get(data["quantizer"])
    if entry is None:
        raise ValueError(f"unknown quantizer {data['quantizer']!r}: choose one of {', '.join(sorted(_BY_NAME))}")
    version = getattr(entry.config_type, "VERSION", 1)
    if data.get("version", 1) != version:
        raise ValueError(f"{entry.name} config version {data.get('version')!r}; this codesign reads version {version}")
    known = {f.name: f for f in dataclasses.fields(entry.config_type)}
    unknown = sorted(set(data) - set(known) - {"quantizer", "version"})
    if unknown:
        raise ValueError(f"unknown {entry.name} config field {unknown[0]!r}")
    values = {}
    for name, value in data.items():
        if name in ("quantizer", "version"):
            continue
        if isinstance(value, dict) and "quantizer" in value:
            value = config_from_dict(value)
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return entry.config_type(**values)
