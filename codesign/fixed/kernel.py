"""Scalar numba kernels: the single implementation of ap_fixed quantization and overflow.

Every conversion in :mod:`codesign.fixed` (and in the bit-exact learners that jit-call these
functions) goes through :func:`fixed_cast`, which reproduces the assignment
``T t = v;`` of Xilinx's ``ap_fixed.h`` for a target ``T = ap_[u]fixed<W, I, Q, O>`` (N = 0):

1. quantization: the exact source value is brought to ``F = W - I`` fractional bits, rounding
   by ``Q`` when bits are dropped;
2. overflow: the (possibly one-step-larger) quantized value is brought to ``W`` bits by ``O``.

Caller's contract (checked by the Python layer, not here, to keep the kernels jit-friendly):

* ``v`` is any int64; ``width`` is in 1..62 (so every in-range result and every
  intermediate fits int64 with margin);
* ``signed`` is a bool (or 0/1), ``qmode`` / ``omode`` are the int values of
  :class:`~codesign.fixed.modes.QMode` / :class:`~codesign.fixed.modes.OMode`.

Modes are plain ints here so that the functions compile once and can be called from other
``@njit`` code without Python objects.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .modes import OMode, QMode

# an integer (a bool) inside numba is an int64 (a bool_); called from Python, the dispatcher takes and returns int (bool)
Int = int | np.int64
Bool = bool | np.bool_

__all__ = [
    "MAX_WIDTH",
    "fixed_cast",
    "from_float",
    "to_float",
    "fixed_cast_array",
    "from_float_array",
]

#: Widest type the kernels support (int64 arithmetic with headroom for carries and signs).
MAX_WIDTH = 62

# Plain int copies of the enum values: numba folds module-level ints into constants.
_RND = int(QMode.AP_RND)
_RND_ZERO = int(QMode.AP_RND_ZERO)
_RND_MIN_INF = int(QMode.AP_RND_MIN_INF)
_RND_INF = int(QMode.AP_RND_INF)
_RND_CONV = int(QMode.AP_RND_CONV)
_TRN = int(QMode.AP_TRN)
_TRN_ZERO = int(QMode.AP_TRN_ZERO)

_SAT = int(OMode.AP_SAT)
_SAT_ZERO = int(OMode.AP_SAT_ZERO)
_SAT_SYM = int(OMode.AP_SAT_SYM)
_WRAP = int(OMode.AP_WRAP)

_ONE = np.int64(1)
_MIN_NORMAL = 2.2250738585072014e-308  # smallest positive normal double


@njit(cache=True)
def _round_shift(v: Int, shift: int, qmode: int) -> Int:
    """Return ``v / 2**shift`` (shift >= 1) rounded by ``qmode``; valid for any int64 ``v``."""
    # floor quotient ``q``; ``cmp`` compares the dropped remainder with half an LSB (-1/0/+1)
    # and ``nz`` says whether any dropped bit is set.
    if shift <= 62:
        q = v >> shift
        rem = v & ((_ONE << shift) - 1)
        half = _ONE << (shift - 1)
        cmp = 1 if rem > half else (0 if rem == half else -1)
        nz = rem != 0
    elif v >= 0:
        # |v| < 2**63: the quotient is 0; only shift == 63 can reach the half point 2**62.
        q = np.int64(0)
        if shift == 63:
            d = v - (_ONE << 62)
            cmp = 1 if d > 0 else (0 if d == 0 else -1)
        else:
            cmp = -1
        nz = v != 0
    else:
        # the quotient is -1 and the remainder 2**shift + v, compared with 2**(shift - 1)
        q = np.int64(-1)
        if shift == 63:
            d = v + (_ONE << 62)
            cmp = 1 if d > 0 else (0 if d == 0 else -1)
        elif shift == 64 and v == np.int64(-9223372036854775807 - 1):
            cmp = 0
        else:
            cmp = 1
        nz = True

    neg = v < 0
    inc: Bool  # a local annotation: no bytecode, numba sees the same function
    if qmode == _TRN:
        inc = False
    elif qmode == _TRN_ZERO:
        inc = neg and nz
    elif qmode == _RND:
        inc = cmp >= 0
    elif qmode == _RND_ZERO:
        inc = cmp > 0 or (cmp == 0 and neg)
    elif qmode == _RND_INF:
        inc = cmp > 0 or (cmp == 0 and not neg)
    elif qmode == _RND_MIN_INF:
        inc = cmp > 0
    else:  # AP_RND_CONV: ties to the even neighbour
        inc = cmp > 0 or (cmp == 0 and (q & 1) == 1)
    return q + 1 if inc else q


@njit(cache=True)
def _limits(width: int, signed: bool) -> tuple[Int, Int]:
    if signed:
        hi = (_ONE << (width - 1)) - 1
        return -hi - 1, hi
    return np.int64(0), (_ONE << width) - 1


@njit(cache=True)
def _wrap(q: Int, width: int, signed: bool) -> Int:
    """Low ``width`` bits of ``q``, read as two's complement when ``signed``."""
    m = q & ((_ONE << width) - 1)
    if signed and m >= (_ONE << (width - 1)):
        m -= _ONE << width
    return m


@njit(cache=True)
def _saturate(negative: Bool, width: int, signed: bool, omode: int) -> Int:
    """Result of an out-of-range value of the given sign under a saturating mode."""
    if omode == _SAT_ZERO:
        return np.int64(0)
    lo, hi = _limits(width, signed)
    if not negative:
        return hi
    # ap_fixed builds the symmetric minimum as (1 << (W-1)) | 1: for W == 1 that is the
    # single bit, i.e. -1, the same as plain saturation.
    if omode == _SAT_SYM and signed and width > 1:
        return lo + 1
    return lo


@njit(cache=True)
def _overflow(q: Int, width: int, signed: bool, omode: int) -> Int:
    """Bring an exact int64 ``q`` to ``width`` bits by ``omode``."""
    if omode == _WRAP:
        return _wrap(q, width, signed)
    lo, hi = _limits(width, signed)
    if q > hi:
        return _saturate(False, width, signed, omode)
    if q < lo:
        return _saturate(True, width, signed, omode)
    if q == lo and omode == _SAT_SYM and signed and width > 1:
        return lo + 1  # the most negative code is excluded in symmetric saturation
    return q


@njit(cache=True)
def fixed_cast(v: Int, shift: int, width: int, signed: bool, qmode: int, omode: int) -> Int:
    """Assign raw ``v`` (F_in fractional bits) to a type with F_in - ``shift`` fractional bits.

    ``shift > 0`` drops ``shift`` low bits, rounding by ``qmode``; ``shift <= 0`` is an exact
    left shift. The result is then brought to ``width`` bits by ``omode``, exactly as the
    assignment between ap_fixed types does it.
    """
    if shift > 0:
        return _overflow(_round_shift(v, shift, qmode), width, signed, omode)
    k = -shift
    if v == 0:
        return np.int64(0)
    if k <= 62:
        top = v >> (62 - k)
        if top == 0 or top == -1:
            # |v * 2**k| <= 2**62: exact in int64.
            return _overflow(v << k, width, signed, omode)
    # |v * 2**k| >= 2**62 exceeds every supported range (width <= 62).
    if omode == _WRAP:
        if k >= width:
            return np.int64(0)
        low = v & ((_ONE << (width - k)) - 1)  # only these bits survive the shift
        return _wrap(low << k, width, signed)
    return _saturate(v < 0, width, signed, omode)


@njit(cache=True)
def from_float(x: float, frac: int, width: int, signed: bool, qmode: int, omode: int) -> Int:
    """Convert double ``x`` to a raw value with ``frac`` fractional bits, as ``ap_fixed(double)``.

    The double is taken as the exact binary number it is and assigned by :func:`fixed_cast`,
    so magnitudes far beyond int64 saturate or wrap correctly. Two header details are kept:
    a subnormal double is decoded as the header decodes it (exponent -1023 with an implicit
    leading one; visible only for types with more than ~1000 fractional bits), and a NaN or
    infinity acts as a huge value of its sign bit (it saturates, or wraps to 0). The Python
    layer rejects NaN and infinity before calling this.
    """
    if x == 0.0:  # also -0.0
        return np.int64(0)
    negative = math.copysign(1.0, x) < 0.0
    a = abs(x)
    if not math.isfinite(x):
        mant = _ONE << 52  # exponent field 2047: value 1.m * 2**1024
        f_in = -972
    elif a < _MIN_NORMAL:
        mant = (_ONE << 52) | np.int64(math.ldexp(a, 1074))
        f_in = 1075
    else:
        m, e = math.frexp(a)  # a = m * 2**e, 0.5 <= m < 1
        mant = np.int64(math.ldexp(m, 53))
        f_in = 53 - e
    if negative:
        mant = -mant
    return fixed_cast(mant, f_in - frac, width, signed, qmode, omode)


@njit(cache=True)
def to_float(v: Int, frac: int) -> float:
    """Value of raw ``v`` with ``frac`` fractional bits as a double (round half to even)."""
    # int64 -> double rounds to nearest-even; the power-of-two scaling is then exact.
    return math.ldexp(float(v), -frac)


@njit(cache=True)
def fixed_cast_array(v: np.ndarray, shift: int, width: int, signed: bool, qmode: int,
                     omode: int) -> np.ndarray:
    """:func:`fixed_cast` over a 1-D int64 array."""
    out = np.empty(v.size, dtype=np.int64)
    for i in range(v.size):
        out[i] = fixed_cast(v[i], shift, width, signed, qmode, omode)
    return out


@njit(cache=True)
def from_float_array(x: np.ndarray, frac: int, width: int, signed: bool, qmode: int,
                     omode: int) -> np.ndarray:
    """:func:`from_float` over a 1-D float64 array."""
    out = np.empty(x.size, dtype=np.int64)
    for i in range(x.size):
        out[i] = from_float(x[i], frac, width, signed, qmode, omode)
    return out
