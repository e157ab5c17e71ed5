"""Rules of the learner spec's fields: type, range, unit and meaning, in one place.

Each field of :class:`~codesign.kan.spec.KANSpec` and :class:`~codesign.kan.spec.MLPSpec`
carries its rule in the dataclass field's metadata. The same rule checks a value (with a
one-line error naming the field, the value, the expected type and range) and describes the
field in the generated schema ``docs/config.md`` (``python -m codesign.config``), so the
validation and the documentation cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from codesign.fixed import FixedType

__all__ = [
    "FieldRule", "IntRule", "RealRule", "WidthsRule", "GridRangeRule", "TypeRule", "ChoiceRule",
    "spec_field", "field_rule", "check_fields", "plain_value",
]


def _kind(value: Any) -> str:
    """What a value is, in the words of an error message."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, numbers.Integral):
        return "an integer"
    if isinstance(value, numbers.Real):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


@dataclass(frozen=True)
class FieldRule(ABC):
    """The type, range, unit and meaning of one spec field (each kind of field is a subclass)."""

    doc: str
    unit: str = ""

    @abstractmethod
    def type_name(self) -> str:
        """The expected type, as the schema table names it."""

    @abstractmethod
    def range_text(self) -> str:
        """The allowed values, as the schema table writes them."""

    @abstractmethod
    def check(self, name: str, value: Any) -> Any:
        """The value in its normal form, or a ValueError naming the field, the value and what is expected."""

    def expected(self) -> str:
        """What a value must be, as an error message says it."""
        return f"{self.type_name()} in {self.range_text()}"

    def fail(self, name: str, value: Any, why: str = "") -> ValueError:
        """The one-line error of a bad value."""
        return ValueError(f"{name}={value!r}: expected {self.expected()}, got {why or _kind(value)}")


@dataclass(frozen=True)
class IntRule(FieldRule):
    """An integer in low..high; booleans and floats are refused."""

    low: int = 0
    high: int = 0

    def type_name(self) -> str:
        return "an integer"

    def range_text(self) -> str:
        return f"{self.low}..{self.high}"

    def check(self, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise self.fail(name, value)
        if not self.low <= int(value) <= self.high:
            raise self.fail(name, value, "a value out of range")
        return int(value)


@dataclass(frozen=True)
class RealRule(FieldRule):
    """A finite number in low..high (an integer is taken as that number); booleans are refused."""

    low: float = 0.0
    high: float = 0.0

    def type_name(self) -> str:
        return "a number"

    def range_text(self) -> str:
        return f"{self.low:g}..{self.high:g}"

    def check(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise self.fail(name, value)
        if not (math.isfinite(float(value)) and self.low <= float(value) <= self.high):
            raise self.fail(name, value, "a value out of range")
        return float(value)


@dataclass(frozen=True)
class WidthsRule(FieldRule):
    """A list of at least two integer layer widths, each in low..high."""

    low: int = 1
    high: int = 1

    def type_name(self) -> str:
        return "a list of integers"

    def expected(self) -> str:
        return f"{self.type_name()} ({self.range_text()})"

    def range_text(self) -> str:
        return f"[n_in, hidden..., n_out], at least 2 widths, each {self.low}..{self.high}"

    def check(self, name: str, value: Any) -> tuple[int, ...]:
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
            raise self.fail(name, value)
        if len(value) < 2:
            raise ValueError(f"{name}={value!r}: need at least an input and an output width")
        for w in value:
            if isinstance(w, bool) or not isinstance(w, numbers.Integral) or not self.low <= int(w) <= self.high:
                raise ValueError(f"{name}={value!r}: every width must be a positive integer in "
                                 f"{self.low}..{self.high}, got {w!r} ({_kind(w)})")
        return tuple(int(w) for w in value)


@dataclass(frozen=True)
class GridRangeRule(FieldRule):
    """Two finite numbers lo < hi."""

    def type_name(self) -> str:
        return "a list of two numbers"

    def expected(self) -> str:
        return f"{self.type_name()} ({self.range_text()})"

    def range_text(self) -> str:
        return "[lo, hi], finite, lo < hi, both exactly representable in act_t"

    def check(self, name: str, value: Any) -> tuple[float, float]:
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self.fail(name, value)
        if any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in value):
            raise self.fail(name, value, "a list holding " + ", ".join(_kind(v) for v in value))
        lo, hi = (float(v) for v in value)
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise ValueError(f"{name}={value!r}: need finite lo < hi")
        return lo, hi


@dataclass(frozen=True)
class TypeRule(FieldRule):
    """An ap_fixed/ap_ufixed type string (or FixedType) of at most max_width bits."""

    signed: bool | None = True  # True: must be signed; None: either
    min_int_bits: int | None = None
    max_width: int = 32

    def type_name(self) -> str:
        return "a type string"

    def range_text(self) -> str:
        kind = "ap_fixed<W,I[,Q,O]>" if self.signed else "ap_fixed or ap_ufixed<W,I[,Q,O]>"
        extra = f", I >= {self.min_int_bits}" if self.min_int_bits is not None else ""
        return f"{kind}, W <= {self.max_width}{extra}"

    def check(self, name: str, value: Any) -> FixedType:
        if isinstance(value, str):
            try:
                t = FixedType.parse(value)
            except ValueError as exc:
                raise ValueError(f"{name}={value!r}: {exc}") from None
        elif isinstance(value, FixedType):
            t = value
        else:
            raise ValueError(f"{name}={value!r}: expected an ap_fixed type string such as "
                             f"'ap_fixed<16,6>', got {_kind(value)}")
        if t.width > self.max_width:
            raise ValueError(f"{name}={t}: widths above {self.max_width} bits are not supported by the learner")
        if self.signed and not t.signed:
            raise ValueError(f"{name}={t}: must be a signed type (values and updates change sign)")
        if self.min_int_bits is not None and t.int_bits < self.min_int_bits:
            raise ValueError(f"{name}={t}: needs >= {self.min_int_bits} integer bit(s) ({self.doc})")
        return t


@dataclass(frozen=True)
class ChoiceRule(FieldRule):
    """One of a few names."""

    choices: tuple[str, ...] = ()

    def type_name(self) -> str:
        return "a string"

    def range_text(self) -> str:
        return " or ".join(repr(c) for c in self.choices)

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or value not in self.choices:
            raise ValueError(f"{name}={value!r}: must be {self.range_text()}")
        return value


def plain_value(value: Any) -> Any:
    """A spec value as plain data (type strings, lists), as configs and reports write it."""
    if isinstance(value, tuple):
        return [plain_value(v) for v in value]
    if isinstance(value, (int, float, str)):
        return value
    return str(value)


def spec_field(default: Any = dataclasses.MISSING, rule: FieldRule | None = None,
               factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field whose metadata holds its rule: give a default, or a factory for a mutable one."""
    meta = {"rule": rule}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def field_rule(f: dataclasses.Field[Any]) -> FieldRule:
    """The rule of a spec field (every spec field has one)."""
    rule = f.metadata.get("rule")
    if not isinstance(rule, FieldRule):
        raise TypeError(f"spec field {f.name} has no rule in its metadata")
    return rule


def check_fields(spec: Any) -> None:
    """Check every field of a frozen spec by its rule and store the normal form (ints, floats, tuples, types)."""
    for f in dataclasses.fields(spec):
        object.__setattr__(spec, f.name, field_rule(f).check(f.name, getattr(spec, f.name)))
