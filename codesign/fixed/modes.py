"""Quantization and overflow modes of ``ap_fixed`` (names and order as in Xilinx's ap_decl.h)."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

__all__ = ["QMode", "OMode"]


_Mode = TypeVar("_Mode", bound=IntEnum)


class QMode(IntEnum):
    """Quantization (rounding) mode applied when fractional bits are dropped."""

    AP_RND = 0  # round half toward +inf
    AP_RND_ZERO = 1  # round half toward zero
    AP_RND_MIN_INF = 2  # round half toward -inf
    AP_RND_INF = 3  # round half away from zero
    AP_RND_CONV = 4  # round half to even
    AP_TRN = 5  # truncate toward -inf (floor); the default
    AP_TRN_ZERO = 6  # truncate toward zero

    @classmethod
    def coerce(cls, value: QMode | int | str) -> QMode:
        """Return ``value`` as a QMode, accepting a member, its int value or its name."""
        return _coerce(cls, value)


class OMode(IntEnum):
    """Overflow mode applied when the quantized value does not fit the width."""

    AP_SAT = 0  # clamp to [min, max]
    AP_SAT_ZERO = 1  # replace an out-of-range value by zero
    AP_SAT_SYM = 2  # clamp to [-max, max] for signed types, [0, max] for unsigned
    AP_WRAP = 3  # keep the low W bits (two's complement); the default

    @classmethod
    def coerce(cls, value: OMode | int | str) -> OMode:
        """Return ``value`` as an OMode, accepting a member, its int value or its name."""
        return _coerce(cls, value)


def _coerce(cls: type[_Mode], value: object) -> _Mode:
    # The enum values follow ap_decl.h so that they can be handed to C++ unchanged.
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        try:
            return cls[value.strip()]
        except KeyError:
            names = ", ".join(m.name for m in cls)
            raise ValueError(f"unknown {cls.__name__} {value!r}; expected one of {names}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{cls.__name__} must be a {cls.__name__}, int or name, got {value!r}")
    try:
        return cls(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a valid {cls.__name__} value") from None
