"""Learner configs: the built-in defaults, overridden field by field from a TOML or YAML file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Mapping

import yaml

from codesign.kan.spec import KANSpec, MLPSpec, spec_from_mapping

__all__ = ["LEARNERS", "load_config", "config_fields", "spec_from_fields", "load_spec"]

# Learner name on the command line -> spec kind.
LEARNERS = {"kan_online": "kan", "mlp_online": "mlp"}


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a TOML (.toml) or YAML (.yaml/.yml) file into a dict, with one-line errors."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config file {path} does not exist")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ValueError(f"config file {path}: expected a .toml, .yaml or .yml file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise ValueError(f"config file {path} is not valid: {first}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config file {path}: expected a table of spec fields at the top level")
    return data


def config_fields(config: str | Path | None) -> dict[str, Any]:
    """The spec fields a config file sets: its top level, or its [spec] table."""
    if config is None:
        return {}
    data = load_config(config)
    data = data.get("spec", data)
    if not isinstance(data, dict):
        raise ValueError(f"config file {config}: the spec table must map field names to values")
    return data


def _name_bad_field(kind: str, fields: Mapping[str, Any], exc: Exception) -> str:
    """The spec's error, prefixed with the config field that causes it when the message names none."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if any(name in message for name in fields):
        return message
    for name, value in fields.items():
        try:
            spec_from_mapping(kind, {name: value})
        except (TypeError, ValueError) as single:
            return f"config field {name}={value!r}: {str(single).strip() or type(single).__name__}"
    return message


def spec_from_fields(learner: str, fields: Mapping[str, Any]) -> KANSpec | MLPSpec:
    """A named learner's built-in spec with the given fields on top; a bad field is named in the error."""
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    kind = LEARNERS[learner]
    try:
        return spec_from_mapping(kind, fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(_name_bad_field(kind, fields, exc)) from None


def load_spec(learner: str, config: str | Path | None = None) -> KANSpec | MLPSpec:
    """The spec of a named learner: built-in defaults, with a config file's fields on top."""
    return spec_from_fields(learner, config_fields(config))
