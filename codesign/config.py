"""Learner configs: the built-in defaults, overridden field by field from a TOML or YAML file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from codesign.kan.spec import KANSpec, MLPSpec, spec_from_mapping

__all__ = ["LEARNERS", "load_config", "load_spec"]

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


def load_spec(learner: str, config: str | Path | None = None) -> KANSpec | MLPSpec:
    """The spec of a named learner: built-in defaults, with a config file's fields on top."""
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    data = load_config(config) if config is not None else {}
    # A config may hold the fields at the top level or under a [spec] table.
    data = data.get("spec", data)
    return spec_from_mapping(LEARNERS[learner], data)
