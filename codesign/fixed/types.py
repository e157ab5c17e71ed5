"""``FixedType``: an ``ap_fixed`` / ``ap_ufixed`` type, with parsing, printing and conversions."""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import kernel
from .modes import OMode, QMode

__all__ = ["FixedType", "MAX_WIDTH"]

MAX_WIDTH = kernel.MAX_WIDTH

_TYPE_RE = re.compile(r"^\s*(ap_fixed|ap_ufixed|ap_int|ap_uint)\s*<(.*)>\s*$", re.DOTALL)
_INT_RE = re.compile(r"^[+-]?\d+$")


@dataclass(frozen=True)
class FixedType:
    """``ap_fixed<width, int_bits, qmode, omode>`` (``signed``) or ``ap_ufixed<...>``.

    A value is held as its raw integer ``r``; it stands for ``r * 2**-frac`` with
    ``frac = width - int_bits``. ``int_bits`` may be zero or negative (purely fractional
    types) but not larger than ``width``; ``width`` is 1..62 so raw values fit int64.

    ``ap_int<W>`` / ``ap_uint<W>`` are read as ``ap_fixed<W,W>`` / ``ap_ufixed<W,W>``:
    they hold the same values and give the same result types in ``+``, ``-`` and ``*``.
    Two ap_int behaviours are not modelled: assigning a fractional value *to* an ap_int
    truncates toward zero (C style) rather than by AP_TRN, and ``-x`` of an ``ap_int<1>``
    is an ``ap_int<3>`` (here two bits; the value is the same).
    """

    width: int
    int_bits: int
    signed: bool = True
    qmode: QMode = QMode.AP_TRN
    omode: OMode = OMode.AP_WRAP

    def __post_init__(self) -> None:
        width = _check_int("width", self.width)
        int_bits = _check_int("int_bits", self.int_bits)
        if width < 1:
            raise ValueError(f"fixed-point width must be >= 1, got width={width}")
        if width > MAX_WIDTH:
            raise ValueError(
                f"fixed-point width {width} exceeds the supported maximum of {MAX_WIDTH} bits"
            )
        if int_bits > width:
            raise ValueError(
                f"int_bits={int_bits} exceeds width={width}; integer bits must be <= width"
            )
        if not isinstance(self.signed, (bool, np.bool_)):
            raise TypeError(f"signed must be a bool, got {self.signed!r}")
        # frozen: normalise through object.__setattr__ so equal types compare and hash equal
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "int_bits", int_bits)
        object.__setattr__(self, "signed", bool(self.signed))
        object.__setattr__(self, "qmode", QMode.coerce(self.qmode))
        object.__setattr__(self, "omode", OMode.coerce(self.omode))

    # ----------------------------------------------------------------- properties
    @property
    def frac(self) -> int:
        """Number of fractional bits, ``width - int_bits``."""
        return self.width - self.int_bits

    @property
    def min_raw(self) -> int:
        """Smallest raw integer of the type."""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_raw(self) -> int:
        """Largest raw integer of the type."""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def lsb(self) -> float:
        """Value of one raw step, ``2**-frac``."""
        return math.ldexp(1.0, -self.frac)

    @property
    def min_value(self) -> float:
        """Smallest representable value (as a float)."""
        return math.ldexp(float(self.min_raw), -self.frac)

    @property
    def max_value(self) -> float:
        """Largest representable value (as a float)."""
        return math.ldexp(float(self.max_raw), -self.frac)

    # ----------------------------------------------------------------- text form
    @classmethod
    def parse(cls, text: str) -> FixedType:
        """Parse a C++ spelling such as ``ap_fixed<16,6,AP_RND_CONV,AP_SAT>`` or ``ap_uint<8>``."""
        if not isinstance(text, str):
            raise TypeError(f"FixedType.parse expects a str, got {type(text).__name__}")
        m = _TYPE_RE.match(text)
        if m is None:
            raise ValueError(
                f"cannot parse fixed-point type {text!r}: expected ap_fixed<W,I[,Q[,O[,N]]]>, "
                f"ap_ufixed<...>, ap_int<W> or ap_uint<W>"
            )
        name, body = m.group(1), m.group(2)
        args = [a.strip() for a in body.split(",")]
        if any(a == "" for a in args):
            raise ValueError(f"cannot parse fixed-point type {text!r}: empty template argument")
        if name in ("ap_int", "ap_uint"):
            if len(args) != 1:
                raise ValueError(
                    f"cannot parse fixed-point type {text!r}: {name} takes exactly one "
                    f"argument (the width), got {len(args)}"
                )
            w = _parse_int(text, "width", args[0])
            return _build(text, w, w, name == "ap_int", QMode.AP_TRN, OMode.AP_WRAP)
        if len(args) < 2 or len(args) > 5:
            raise ValueError(
                f"cannot parse fixed-point type {text!r}: {name} takes 2 to 5 arguments "
                f"<W,I[,Q[,O[,N]]]>, got {len(args)}"
            )
        w = _parse_int(text, "width", args[0])
        i = _parse_int(text, "integer bits", args[1])
        q = _parse_mode(text, QMode, args[2]) if len(args) > 2 else QMode.AP_TRN
        o = _parse_mode(text, OMode, args[3]) if len(args) > 3 else OMode.AP_WRAP
        if len(args) > 4:
            n = _parse_int(text, "saturation bits N", args[4])
            if n != 0:
                raise ValueError(
                    f"unsupported fixed-point type {text!r}: saturation bits N={n}; "
                    f"only N=0 is supported"
                )
        return _build(text, w, i, name == "ap_fixed", q, o)

    def __str__(self) -> str:
        args = [str(self.width), str(self.int_bits)]
        # trailing default modes are omitted, as one writes them in C++
        if self.omode != OMode.AP_WRAP:
            args += [self.qmode.name, self.omode.name]
        elif self.qmode != QMode.AP_TRN:
            args.append(self.qmode.name)
        return f"{'ap_fixed' if self.signed else 'ap_ufixed'}<{','.join(args)}>"

    def __repr__(self) -> str:
        return f"FixedType.parse({str(self)!r})"

    # ----------------------------------------------------------------- variants
    def replace(self, **changes: Any) -> FixedType:
        """Copy with some fields changed (validated like the constructor)."""
        return dataclasses.replace(self, **changes)

    def with_modes(self, qmode: QMode | str | None = None,
                   omode: OMode | str | None = None) -> FixedType:
        """Copy with the given quantization and/or overflow mode."""
        return self.replace(qmode=self.qmode if qmode is None else qmode,
                            omode=self.omode if omode is None else omode)

    # ----------------------------------------------------------------- conversions
    def quantize(self, x: npt.ArrayLike) -> np.ndarray:
        """Raw int64 values of ``T t = x;`` for doubles ``x``; rejects NaN and inf."""
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"quantize to {self} expects real numbers, got dtype {arr.dtype}")
        arr = np.asarray(arr, dtype=np.float64)
        finite = np.isfinite(arr)
        if not finite.all():
            bad = arr[~finite].ravel()[0]
            raise ValueError(
                f"cannot quantize {bad!r} to {self}: {int((~finite).sum())} value(s) are NaN or inf"
            )
        out = kernel.from_float_array(np.ascontiguousarray(arr).ravel(), self.frac, self.width,
                                      self.signed, int(self.qmode), int(self.omode))
        return out.reshape(arr.shape)

    def to_float(self, raw: npt.ArrayLike) -> np.ndarray:
        """Float64 values of raw integers of this type (exact up to 53 significant bits)."""
        r = self.check_raw(raw)
        # int64 -> float64 rounds half to even like ap_fixed::to_double; scaling is exact
        return np.ldexp(r.astype(np.float64), -self.frac)

    def cast(self, raw: npt.ArrayLike, from_type: FixedType) -> np.ndarray:
        """Raw values of ``T t = s;`` for raw values ``raw`` of ``from_type`` (assignment)."""
        if not isinstance(from_type, FixedType):
            raise TypeError(f"from_type must be a FixedType, got {from_type!r}")
        r = from_type.check_raw(raw)
        return self.from_raw(r, from_type.frac)

    def from_raw(self, raw: npt.ArrayLike, frac: int) -> np.ndarray:
        """Assign exact int64 values with ``frac`` fractional bits (quantize, then overflow)."""
        r = _as_int64(raw, "from_raw")
        frac = _check_int("frac", frac)
        flat = np.ascontiguousarray(r).ravel()
        out = kernel.fixed_cast_array(flat, frac - self.frac, self.width, self.signed,
                                      int(self.qmode), int(self.omode))
        return out.reshape(r.shape)

    def check_raw(self, raw: npt.ArrayLike) -> np.ndarray:
        """Return ``raw`` as an int64 array after checking it lies in [min_raw, max_raw]."""
        r = _as_int64(raw, f"raw values of {self}")
        if r.size:
            lo, hi = int(r.min()), int(r.max())
            if lo < self.min_raw or hi > self.max_raw:
                bad = lo if lo < self.min_raw else hi
                raise ValueError(
                    f"raw value {bad} is outside {self} (raw range {self.min_raw}..{self.max_raw})"
                )
        return r


# --------------------------------------------------------------------- helpers
def _check_int(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _as_int64(raw: npt.ArrayLike, what: str) -> np.ndarray:
    arr = np.asarray(raw)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype == object:
        # Python ints beyond int64 land here; convert one by one to report them clearly
        try:
            arr = np.asarray(raw, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            raise ValueError(f"{what} must be integers that fit int64") from None
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: value {int(arr.max())} does not fit int64")
    return arr.astype(np.int64, copy=False)


def _parse_int(text: str, what: str, arg: str) -> int:
    if not _INT_RE.match(arg):
        raise ValueError(
            f"cannot parse fixed-point type {text!r}: {what} {arg!r} is not an integer"
        )
    return int(arg)


def _parse_mode(text: str, enum: type[QMode] | type[OMode], arg: str) -> Any:
    try:
        return enum[arg]
    except KeyError:
        kind = "quantization" if enum is QMode else "overflow"
        extra = " (sign-magnitude wrap is not supported)" if arg == "AP_WRAP_SM" else ""
        names = ", ".join(m.name for m in enum)
        raise ValueError(
            f"cannot parse fixed-point type {text!r}: unknown {kind} mode {arg!r}{extra}; "
            f"expected one of {names}"
        ) from None


def _build(text: str, w: int, i: int, signed: bool, q: QMode, o: OMode) -> FixedType:
    try:
        return FixedType(w, i, signed, q, o)
    except ValueError as exc:
        raise ValueError(f"invalid fixed-point type {text!r}: {exc}") from None
