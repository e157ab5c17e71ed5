"""Learner configs: the built-in defaults, overridden field by field from a TOML or YAML file.

``python -m codesign.config > docs/config.md`` writes the config schema, generated from the
rules in the spec dataclasses' field metadata (:mod:`codesign.kan.spec_fields`).
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from codesign.kan.kinds import KINDS, spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.kan.spec_fields import field_rule, plain_value

__all__ = [
    "LEARNERS", "load_config", "config_fields", "spec_from_fields", "load_spec", "load_config_spec",
    "config_toml", "schema_markdown",
]

# Learner name on the command line -> spec kind.
LEARNERS = {kind.learner: kind.name for kind in KINDS.values()}


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
    outside = sorted(set(data) - {"spec"}) if "spec" in data else []
    if outside:  # fields beside a [spec] table would be silently ignored
        raise ValueError(f"config file {config}: {', '.join(outside)} outside the [spec] table; "
                         "put every field in [spec] or all at the top level")
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


def load_config_spec(
    learner: str, config: str | Path | None, clock_mhz: float | None = None
) -> tuple[KANSpec | MLPSpec, dict[str, Any]]:
    """The spec and the fields the config file sets; ``clock_mhz`` (a board's) is the clock unless the file sets one."""
    fields = config_fields(config)
    spec = spec_from_fields(learner, fields)
    if clock_mhz is not None and "clock_mhz" not in fields:
        spec = dataclasses.replace(spec, clock_mhz=clock_mhz)
    return spec, fields


def _toml_value(value: Any) -> str:
    """A TOML literal of a plain spec value (int, float, string, list of numbers)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # ints and strings: JSON's spelling is TOML's


def config_toml(spec: KANSpec | MLPSpec, header: str) -> str:
    """A config file (TOML) that sets every field of ``spec``, each with its meaning; loads back to ``spec``."""
    data = spec.to_dict()
    lines = [f"# {line}" for line in header.splitlines()]
    lines.append("# fields, types and ranges: docs/config.md")
    for f in dataclasses.fields(spec):
        rule = field_rule(f)
        unit = f" ({rule.unit})" if rule.unit else ""
        lines += [f"# {rule.doc}", f"{f.name} = {_toml_value(data[f.name])}  # {rule.range_text()}{unit}"]
    return "\n".join(lines) + "\n"


def _default_text(f: dataclasses.Field) -> str:
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    return "`" + _toml_value(plain_value(value)) + "`"


_SCHEMA_INTRO = """# Learner configs

<!-- Generated by `python -m codesign.config > docs/config.md` from the rules in the spec
dataclasses' field metadata (codesign/kan/spec.py, codesign/kan/spec_fields.py); do not edit.
tests/test_config_schema.py fails when this file is stale. -->

`--config FILE` (on `learn`, `profile`, `estimate`, `explore` and `build`) reads a TOML
(`.toml`) or YAML (`.yaml`, `.yml`) file whose top level, or whose `[spec]` table (not both), sets spec
fields. Each field overrides the learner's built-in default below; fields left out keep it.
An unknown field, a value of the wrong type (a boolean or a float where an integer is meant,
a number where a type string is meant, a string where a list is meant) or a value out of
range is refused with one line naming the field, the value and what is expected (exit 2).

Example files: `examples/kan_default.toml`, `examples/kan_1to1.toml`, `examples/kan_wide.yaml`,
`examples/mlp_default.toml`. `codesign build LEARNER [--config FILE] --print-config` (also on
`estimate` and `learn`) prints the effective config as TOML and exits without building; that
output, saved and passed back with `--config`, gives the same spec.

How each command uses the fields:

| command | fields |
|---|---|
| `build`, `estimate` | every field; `clock_mhz` is the target board's clock unless the config sets it |
| `learn`, `profile` | every field (`clock_mhz` does not change the arithmetic); a config's `widths` must match the task: a task that takes `n_inputs` (function_tracking) is generated at the first width, the last width must equal the task's outputs; without `widths` in the config, the task's input and output widths replace the default's first and last. With `--data FILE` (docs/data.md) the same holds for the file's inputs and outputs (also on `explore` and `build`) |
| `explore` | the config's spec is the base of the sweep, and a field it sets is not swept: `grid_size` fixes G (instead of `--grid`), `widths` fixes the hidden layers (instead of `--hidden`), any of `act_t`, `coef_t`, `err_t`, `grad_t` fixes the types (instead of `--bits`); giving both the field and the option is refused |

Fixed-point types are C++ spellings: `ap_fixed<W,I,Q,O>` (signed) or `ap_ufixed<W,I,Q,O>`,
W total bits, I integer bits (sign included), Q the rounding mode (`AP_RND_CONV`, `AP_RND`,
`AP_RND_ZERO`, `AP_RND_MIN_INF`, `AP_RND_INF`, `AP_TRN`, `AP_TRN_ZERO`), O the overflow mode
(`AP_SAT`, `AP_SAT_ZERO`, `AP_SAT_SYM`, `AP_WRAP`). Modes left out take C++'s defaults
(`AP_TRN`, `AP_WRAP`), not the learner's defaults (`AP_RND_CONV`, `AP_SAT`). The arithmetic
that the types parameterize is in docs/arithmetic.md. Beyond each field's own range, the
types together must keep every exact intermediate within 62 bits; a spec that does not is
refused with a line naming the intermediate.
"""


def schema_markdown() -> str:
    """docs/config.md: every field of every learner with its type, range, unit, default and meaning."""
    parts = [_SCHEMA_INTRO]
    for learner, kind in LEARNERS.items():
        cls = KINDS[kind].spec_class
        parts.append(f"\n## `{learner}` ({cls.__name__})\n\n{(cls.__doc__ or '').strip().splitlines()[0]}\n")
        parts.append("| field | type | allowed values | default | unit | meaning |")
        parts.append("|---|---|---|---|---|---|")
        for f in dataclasses.fields(cls):
            rule = field_rule(f)
            parts.append(f"| `{f.name}` | {rule.type_name()} | {rule.range_text()} | {_default_text(f)} | "
                         f"{rule.unit or '-'} | {rule.doc} |")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(schema_markdown(), end="")
