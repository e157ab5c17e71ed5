"""Vectorized ap_fixed arithmetic on raw int64 arrays, with the header's result-type rules.

``+``, ``-``, ``*`` and unary ``-`` are exact: their result type (default modes AP_TRN,
AP_WRAP, as the header's ``RType``) is wide enough for every operand pair. A result type
wider than :data:`~codesign.fixed.kernel.MAX_WIDTH` bits raises ``ValueError``. Shifts keep
the operand's type (modes included) and drop or wrap bits, as ``x << n`` / ``x >> n`` do
on an ``ap_fixed``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from . import kernel
from .modes import OMode, QMode
from .types import MAX_WIDTH, FixedType

__all__ = [
    "add_type",
    "sub_type",
    "mul_type",
    "neg_type",
    "add",
    "sub",
    "mul",
    "neg",
    "shift_left",
    "shift_right",
    "cast",
    "FixedArray",
]

Raw = npt.ArrayLike
Result = tuple[np.ndarray, FixedType]


# ------------------------------------------------------------------ result types
def _result_type(width: int, int_bits: int, signed: bool, what: str) -> FixedType:
    if width > MAX_WIDTH:
        name = "ap_fixed" if signed else "ap_ufixed"
        raise ValueError(
            f"exact result of {what} is {name}<{width},{int_bits}>, wider than the "
            f"supported {MAX_WIDTH} bits"
        )
    return FixedType(width, int_bits, signed)


def _sum_int_bits(ta: FixedType, tb: FixedType) -> int:
    # An unsigned operand next to a signed one needs one extra bit to stay non-negative.
    return max(ta.int_bits + (tb.signed and not ta.signed),
               tb.int_bits + (ta.signed and not tb.signed)) + 1


def add_type(ta: FixedType, tb: FixedType) -> FixedType:
    """Type of ``a + b`` (ap_fixed ``RType::plus``)."""
    i = _sum_int_bits(ta, tb)
    return _result_type(i + max(ta.frac, tb.frac), i, ta.signed or tb.signed,
                        f"{ta} + {tb}")


def sub_type(ta: FixedType, tb: FixedType) -> FixedType:
    """Type of ``a - b`` (ap_fixed ``RType::minus``: always signed)."""
    i = _sum_int_bits(ta, tb)
    return _result_type(i + max(ta.frac, tb.frac), i, True, f"{ta} - {tb}")


def mul_type(ta: FixedType, tb: FixedType) -> FixedType:
    """Type of ``a * b`` (ap_fixed ``RType::mult``)."""
    return _result_type(ta.width + tb.width, ta.int_bits + tb.int_bits,
                        ta.signed or tb.signed, f"{ta} * {tb}")


def neg_type(ta: FixedType) -> FixedType:
    """Type of ``-a`` (one bit wider and signed)."""
    return _result_type(ta.width + 1, ta.int_bits + 1, True, f"-{ta}")


# ------------------------------------------------------------------ arithmetic
def _align(raw: np.ndarray, t: FixedType, frac: int) -> np.ndarray:
    # exact because the caller's result type bounds the shifted magnitude by 2**62
    return raw << np.int64(frac - t.frac)


def add(a: Raw, ta: FixedType, b: Raw, tb: FixedType) -> Result:
    """Exact ``a + b`` on raw values; returns (raw, result type)."""
    rt = add_type(ta, tb)
    ra, rb = np.broadcast_arrays(ta.check_raw(a), tb.check_raw(b))
    return _align(ra, ta, rt.frac) + _align(rb, tb, rt.frac), rt


def sub(a: Raw, ta: FixedType, b: Raw, tb: FixedType) -> Result:
    """Exact ``a - b`` on raw values; returns (raw, result type)."""
    rt = sub_type(ta, tb)
    ra, rb = np.broadcast_arrays(ta.check_raw(a), tb.check_raw(b))
    return _align(ra, ta, rt.frac) - _align(rb, tb, rt.frac), rt


def mul(a: Raw, ta: FixedType, b: Raw, tb: FixedType) -> Result:
    """Exact ``a * b`` on raw values; returns (raw, result type)."""
    rt = mul_type(ta, tb)
    return ta.check_raw(a) * tb.check_raw(b), rt


def neg(a: Raw, ta: FixedType) -> Result:
    """Exact ``-a``; returns (raw, result type)."""
    rt = neg_type(ta)
    return -ta.check_raw(a), rt


def _shift(a: Raw, ta: FixedType, n: npt.ArrayLike, left: bool) -> Result:
    ra = ta.check_raw(a)
    nn = np.asarray(n)
    if nn.dtype.kind not in "iu":
        raise TypeError(f"shift amount must be an integer, got dtype {nn.dtype}")
    ra, nn = np.broadcast_arrays(ra, nn.astype(np.int64))
    # a left shift is fixed_cast with a negative shift; a right shift drops bits by floor
    # (AP_TRN); both wrap to the operand's width, which is what the header's shifts do
    sign = -1 if left else 1
    flat_a = np.ascontiguousarray(ra).ravel()
    flat_n = np.ascontiguousarray(nn).ravel()
    out = np.empty(flat_a.size, dtype=np.int64)
    trn, wrap = int(QMode.AP_TRN), int(OMode.AP_WRAP)
    for s in np.unique(flat_n):
        sel = flat_n == s
        out[sel] = kernel.fixed_cast_array(np.ascontiguousarray(flat_a[sel]), sign * int(s),
                                           ta.width, ta.signed, trn, wrap)
    return out.reshape(ra.shape), ta


def shift_left(a: Raw, ta: FixedType, n: npt.ArrayLike) -> Result:
    """``a << n`` on an ap_fixed: same type, high bits lost (wrap); ``n < 0`` shifts right."""
    return _shift(a, ta, n, left=True)


def shift_right(a: Raw, ta: FixedType, n: npt.ArrayLike) -> Result:
    """``a >> n`` on an ap_fixed: same type, floor (low bits lost); ``n < 0`` shifts left."""
    return _shift(a, ta, n, left=False)


def cast(a: Raw, ta: FixedType, tb: FixedType) -> np.ndarray:
    """Raw values of ``tb t = a;`` for raw ``a`` of type ``ta`` (tb's Q, then tb's O)."""
    return tb.cast(a, ta)


# ------------------------------------------------------------------ value wrapper
class FixedArray:
    """Raw int64 values together with their :class:`FixedType`; ``+ - * << >>`` follow ap_fixed."""

    __slots__ = ("raw", "type")

    def __init__(self, raw: Raw, type: FixedType) -> None:
        if not isinstance(type, FixedType):
            raise TypeError(f"type must be a FixedType, got {type!r}")
        self.raw = type.check_raw(raw)
        self.type = type

    @classmethod
    def from_float(cls, x: npt.ArrayLike, type: FixedType) -> FixedArray:
        """Quantize doubles to ``type``."""
        return cls(type.quantize(x), type)

    def to_float(self) -> np.ndarray:
        """Values as float64."""
        return self.type.to_float(self.raw)

    def cast(self, type: FixedType) -> FixedArray:
        """Assignment to another type."""
        return FixedArray(type.cast(self.raw, self.type), type)

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the raw array."""
        return self.raw.shape

    def __len__(self) -> int:
        return len(self.raw)

    def __getitem__(self, index: Any) -> FixedArray:  # any numpy index
        return FixedArray(self.raw[index], self.type)

    def __add__(self, other: FixedArray) -> FixedArray:
        if not isinstance(other, FixedArray):
            return NotImplemented
        return FixedArray(*add(self.raw, self.type, other.raw, other.type))

    def __sub__(self, other: FixedArray) -> FixedArray:
        if not isinstance(other, FixedArray):
            return NotImplemented
        return FixedArray(*sub(self.raw, self.type, other.raw, other.type))

    def __mul__(self, other: FixedArray) -> FixedArray:
        if not isinstance(other, FixedArray):
            return NotImplemented
        return FixedArray(*mul(self.raw, self.type, other.raw, other.type))

    def __neg__(self) -> FixedArray:
        return FixedArray(*neg(self.raw, self.type))

    def __lshift__(self, n: npt.ArrayLike) -> FixedArray:
        return FixedArray(*shift_left(self.raw, self.type, n))

    def __rshift__(self, n: npt.ArrayLike) -> FixedArray:
        return FixedArray(*shift_right(self.raw, self.type, n))

    def __repr__(self) -> str:
        return f"FixedArray({self.to_float()!r}, {self.type})"
