"""The numba kernels against an exact big-integer model, including int64 edge cases.

The oracle test checks the semantics against ap_fixed.h; this test checks that the int64
implementation stays exact where the oracle's types do not reach: shifts of 63 bits and more,
raw values near the int64 limits, every width from 1 to 62, and doubles of any exponent.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from codesign.fixed import MAX_WIDTH, FixedType, OMode, QMode, fixed_cast, from_float, to_float
from codesign.fixed.kernel import fixed_cast_array, from_float_array

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def ref_round(num: int, den_log2: int, q: QMode) -> int:
    """``num / 2**den_log2`` rounded by ``q`` (exact, Python ints)."""
    if den_log2 <= 0:
        return num << -den_log2
    return ref_round_fraction(Fraction(num, 1 << den_log2), q)


def ref_round_fraction(x: Fraction, q: QMode) -> int:
    fl = math.floor(x)
    rem = x - fl
    half = Fraction(1, 2)
    neg = x < 0
    if q == QMode.AP_TRN:
        inc = False
    elif q == QMode.AP_TRN_ZERO:
        inc = neg and rem != 0
    elif q == QMode.AP_RND:
        inc = rem >= half
    elif q == QMode.AP_RND_ZERO:
        inc = rem > half or (rem == half and neg)
    elif q == QMode.AP_RND_INF:
        inc = rem > half or (rem == half and not neg)
    elif q == QMode.AP_RND_MIN_INF:
        inc = rem > half
    else:
        inc = rem > half or (rem == half and fl % 2 == 1)
    return fl + int(inc)


def ref_overflow(v: int, width: int, signed: bool, o: OMode) -> int:
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    sym = o == OMode.AP_SAT_SYM and signed and width > 1
    if o == OMode.AP_WRAP:
        m = v % (1 << width)
        return m - (1 << width) if signed and m > hi else m
    if lo <= v <= hi:
        return lo + 1 if sym and v == lo else v
    if o == OMode.AP_SAT_ZERO:
        return 0
    if v > hi:
        return hi
    return lo + 1 if sym else lo


def ref_fixed_cast(v: int, shift: int, width: int, signed: bool, q: QMode, o: OMode) -> int:
    return ref_overflow(ref_round(v, shift, q), width, signed, o)


def header_exact_value(x: float) -> Fraction:
    """The value ap_fixed(double) sees: exact, except subnormals decoded with a leading one."""
    if x == 0:
        return Fraction(0)
    a = abs(x)
    if a < 2.2250738585072014e-308:
        v = Fraction((1 << 52) + int(math.ldexp(a, 1074)), 1 << 1075)
    else:
        v = Fraction(a)
    return -v if x < 0 else v


def ref_from_float(x: float, frac: int, width: int, signed: bool, q: QMode, o: OMode) -> int:
    return ref_overflow(ref_round_fraction(header_exact_value(x) * Fraction(2) ** frac, q),
                        width, signed, o)


def _interesting_ints(rng: np.random.Generator, n: int) -> list[int]:
    pows = [s * ((1 << k) + d) for k in range(0, 63) for d in (-1, 0, 1) for s in (1, -1)]
    pows = [p for p in pows if INT64_MIN <= p <= INT64_MAX]
    fixed = [0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, 3 << 61, -(3 << 61)]
    rand = rng.integers(INT64_MIN, INT64_MAX, size=n, endpoint=True).tolist()
    small = rng.integers(-5000, 5000, size=n).tolist()
    return fixed + pows + rand + small


def test_fixed_cast_matches_exact_model() -> None:
    rng = np.random.default_rng(7)
    values = _interesting_ints(rng, 1500)
    modes = [(q, o) for q in QMode for o in OMode]
    checked = 0
    for v in values:
        for _ in range(4):
            shift = int(rng.choice([rng.integers(-70, 71), rng.integers(-3, 4),
                                    rng.choice([62, 63, 64, 65, 200, -62, -63, -64, -200])]))
            width = int(rng.integers(1, MAX_WIDTH + 1))
            signed = bool(rng.integers(0, 2))
            q, o = modes[int(rng.integers(len(modes)))]
            got = int(fixed_cast(v, shift, width, signed, int(q), int(o)))
            want = ref_fixed_cast(v, shift, width, signed, q, o)
            assert got == want, (v, shift, width, signed, q.name, o.name)
            checked += 1
    assert checked > 10_000


@pytest.mark.parametrize("q", list(QMode), ids=lambda q: q.name)
def test_fixed_cast_array_equals_scalar(q: QMode) -> None:
    rng = np.random.default_rng(int(q))
    v = rng.integers(-(2**40), 2**40, size=2000)
    for o in OMode:
        for shift in (-5, 0, 3, 17, 70):
            arr = fixed_cast_array(v, shift, 16, True, int(q), int(o))
            one = [fixed_cast(int(x), shift, 16, True, int(q), int(o)) for x in v[:50]]
            assert arr[:50].tolist() == one
            assert arr.tolist() == [ref_fixed_cast(int(x), shift, 16, True, q, o) for x in v]


def test_from_float_matches_exact_model() -> None:
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**64, size=3000, dtype=np.uint64).view(np.float64)
    xs = [float(x) for x in bits if np.isfinite(x)]
    xs += [float(x) for x in rng.normal(0, 100, 2000)]
    xs += [float(x) for x in np.ldexp(rng.uniform(-2, 2, 2000), rng.integers(-80, 80, 2000))]
    xs += [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
           -1.7976931348623157e308, 2.0**62, -(2.0**62), 2.0**63, 0.5, -0.5, 1.5, -2.5]
    modes = [(q, o) for q in QMode for o in OMode]
    for i, x in enumerate(xs):
        width = int(rng.integers(1, MAX_WIDTH + 1))
        frac = int(rng.choice([rng.integers(-10, 80), rng.integers(1060, 1090)]))
        signed = bool(rng.integers(0, 2))
        q, o = modes[i % len(modes)]
        got = int(from_float(x, frac, width, signed, int(q), int(o)))
        want = ref_from_float(x, frac, width, signed, q, o)
        assert got == want, (x.hex(), frac, width, signed, q.name, o.name)
    arr = np.array(xs[:500])
    assert from_float_array(arr, 10, 16, True, 4, 0).tolist() == [
        ref_from_float(x, 10, 16, True, QMode.AP_RND_CONV, OMode.AP_SAT) for x in xs[:500]]


def test_from_float_subnormal_follows_header() -> None:
    # ap_fixed(double) decodes the smallest subnormal 2**-1074 as (2**52 + 1) * 2**-1075,
    # about 2**-1023: visible only with more than ~1000 fractional bits.
    t = FixedType(62, -1020)
    assert t.frac == 1082
    assert int(t.quantize(5e-324)) == ((1 << 52) + 1) << 7
    assert int(t.quantize(math.ldexp(1.0, -1022))) == 1 << 60


def test_non_finite_in_kernel_acts_as_huge() -> None:
    # the Python API rejects them; the kernel behaves like the header (a huge magnitude)
    for o, pos, neg in [(OMode.AP_SAT, 127, -128), (OMode.AP_WRAP, 0, 0),
                        (OMode.AP_SAT_ZERO, 0, 0), (OMode.AP_SAT_SYM, 127, -127)]:
        assert from_float(math.inf, 4, 8, True, 5, int(o)) == pos
        assert from_float(-math.inf, 4, 8, True, 5, int(o)) == neg
        assert from_float(math.nan, 4, 8, True, 5, int(o)) == pos
        assert from_float(-math.nan, 4, 8, True, 5, int(o)) == neg


def test_to_float_rounds_half_even_and_scales_exactly() -> None:
    assert to_float(3, 2) == 0.75
    assert to_float(-(1 << 61), 0) == -(2.0**61)
    assert to_float((1 << 60) + (1 << 7), 0) == 2.0**60  # tie to even
    assert to_float((1 << 60) + (3 << 7), 0) == 2.0**60 + 2.0**9


def test_kernels_callable_from_other_jitted_code() -> None:
    from numba import njit

    @njit
    def accumulate(xs, frac, width):
        acc = 0
        for x in xs:
            acc += from_float(x, frac, width, True, 4, 0)
        return fixed_cast(acc, 2, width, True, 4, 0)

    xs = np.array([0.3, -1.7, 2.25])
    raw = [from_float(x, 6, 12, True, 4, 0) for x in xs]
    assert accumulate(xs, 6, 12) == fixed_cast(sum(raw), 2, 12, True, 4, 0)
