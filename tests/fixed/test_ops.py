"""Result-type rules and exact arithmetic of codesign.fixed.ops."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from codesign.fixed import (
    FixedArray,
    FixedType,
    OMode,
    QMode,
    add,
    add_type,
    cast,
    mul,
    mul_type,
    neg,
    neg_type,
    shift_left,
    shift_right,
    sub,
    sub_type,
)

P = FixedType.parse


@pytest.mark.parametrize(
    "a,b,plus,minus,times",
    [
        # same signedness: one carry bit, fractions aligned to the finer operand
        ("ap_fixed<16,6>", "ap_fixed<8,3>", "ap_fixed<17,7>", "ap_fixed<17,7>", "ap_fixed<24,9>"),
        ("ap_ufixed<8,8>", "ap_ufixed<6,-1>", "ap_ufixed<16,9>", "ap_fixed<16,9>",
         "ap_ufixed<14,7>"),
        # an unsigned operand beside a signed one needs one more integer bit
        ("ap_fixed<8,3>", "ap_ufixed<10,2>", "ap_fixed<12,4>", "ap_fixed<12,4>", "ap_fixed<18,5>"),
        ("ap_ufixed<10,2>", "ap_fixed<12,4>", "ap_fixed<13,5>", "ap_fixed<13,5>", "ap_fixed<22,6>"),
        ("ap_fixed<7,-2>", "ap_fixed<9,9>", "ap_fixed<19,10>", "ap_fixed<19,10>", "ap_fixed<16,7>"),
        ("ap_fixed<1,1>", "ap_ufixed<1,1>", "ap_fixed<3,3>", "ap_fixed<3,3>", "ap_fixed<2,2>"),
        # ap_int<8> + ap_uint<5> as the header computes it: ap_int<9>
        ("ap_int<8>", "ap_uint<5>", "ap_fixed<9,9>", "ap_fixed<9,9>", "ap_fixed<13,13>"),
    ],
)
def test_result_types(a: str, b: str, plus: str, minus: str, times: str) -> None:
    ta, tb = P(a), P(b)
    assert add_type(ta, tb) == P(plus)
    assert sub_type(ta, tb) == P(minus)
    assert mul_type(ta, tb) == P(times)


def test_result_types_use_default_modes() -> None:
    ta = P("ap_fixed<8,3,AP_RND_CONV,AP_SAT>")
    tb = P("ap_ufixed<8,3,AP_RND,AP_SAT_SYM>")
    for rt in (add_type(ta, tb), sub_type(ta, tb), mul_type(ta, tb), neg_type(ta)):
        assert (rt.qmode, rt.omode) == (QMode.AP_TRN, OMode.AP_WRAP)
    assert neg_type(P("ap_ufixed<8,3>")) == P("ap_fixed<9,4>")


def test_too_wide_results_raise() -> None:
    msg = r"exact result of ap_fixed<32,6> \* ap_fixed<31,6> is ap_fixed<63,12>"
    with pytest.raises(ValueError, match=msg):
        mul_type(P("ap_fixed<32,6>"), P("ap_fixed<31,6>"))
    with pytest.raises(ValueError, match="wider than the supported 62 bits"):
        add_type(P("ap_fixed<40,-20>"), P("ap_fixed<40,40>"))
    with pytest.raises(ValueError, match="62 bits"):
        neg_type(P("ap_fixed<62,2>"))
    with pytest.raises(ValueError, match="62 bits"):
        add(0, P("ap_ufixed<62,62>"), 0, P("ap_ufixed<62,62>"))


def _exact(raw: np.ndarray, t: FixedType) -> list[Fraction]:
    return [Fraction(int(r), 1 << t.frac) if t.frac >= 0 else Fraction(int(r) << -t.frac)
            for r in np.ravel(raw)]


@pytest.mark.parametrize(
    "a,b",
    [("ap_fixed<16,6>", "ap_fixed<8,3>"), ("ap_fixed<8,3>", "ap_ufixed<10,2>"),
     ("ap_ufixed<12,-2>", "ap_ufixed<9,9>"), ("ap_fixed<31,10>", "ap_ufixed<31,31>")],
)
def test_arithmetic_is_exact(a: str, b: str) -> None:
    ta, tb = P(a), P(b)
    rng = np.random.default_rng(3)
    ra = np.concatenate([[ta.min_raw, ta.max_raw, 0],
                         rng.integers(ta.min_raw, ta.max_raw, 500, endpoint=True)])
    rb = np.concatenate([[tb.max_raw, tb.min_raw, 0],
                         rng.integers(tb.min_raw, tb.max_raw, 500, endpoint=True)])
    xa, xb = _exact(ra, ta), _exact(rb, tb)
    for fn, op in ((add, lambda x, y: x + y), (sub, lambda x, y: x - y), (mul, lambda x, y: x * y)):
        raw, rt = fn(ra, ta, rb, tb)
        assert raw.dtype == np.int64
        rt.check_raw(raw)  # within the result type
        assert _exact(raw, rt) == [op(x, y) for x, y in zip(xa, xb)]
    raw, rt = neg(ra, ta)
    assert _exact(raw, rt) == [-x for x in xa]


def test_broadcasting() -> None:
    ta, tb = P("ap_fixed<8,4>"), P("ap_fixed<8,4>")
    raw, rt = add(np.array([[1], [2]]), ta, np.array([10, 20, 30]), tb)
    assert raw.shape == (2, 3) and raw.tolist() == [[11, 21, 31], [12, 22, 32]]
    raw, _ = mul(3, ta, [1, 2], tb)
    assert raw.tolist() == [3, 6]


def test_shifts_keep_type_and_wrap() -> None:
    t = P("ap_fixed<8,4,AP_RND_CONV,AP_SAT>")
    raw = np.array([0x35, -0x35, 127, -128])
    left, lt = shift_left(raw, t, 2)
    right, rt = shift_right(raw, t, 2)
    assert lt == t and rt == t  # the operand's type, modes included
    assert left.tolist() == [-44, 44, -4, 0]  # bits above bit 7 are lost, no saturation
    assert right.tolist() == [13, -14, 31, -32]  # floor, no rounding
    assert shift_left(raw, t, -2)[0].tolist() == right.tolist()
    assert shift_right(raw, t, -2)[0].tolist() == left.tolist()
    assert shift_left(raw, t, 8)[0].tolist() == [0, 0, 0, 0]
    assert shift_right(raw, t, 100)[0].tolist() == [0, -1, 0, -1]
    assert shift_left(raw, t, [0, 1, 2, 3])[0].tolist() == [0x35, -106, -4, 0]
    u = P("ap_ufixed<6,6>")
    assert shift_left([63, 5], u, 1)[0].tolist() == [62, 10]
    assert shift_right([63, 5], u, 1)[0].tolist() == [31, 2]
    with pytest.raises(TypeError):
        shift_left(raw, t, 1.5)


def test_cast_function() -> None:
    src, dst = P("ap_fixed<12,4>"), P("ap_fixed<6,2,AP_RND,AP_SAT>")
    assert cast([0x18, 0x7FF], src, dst).tolist() == [2, 31]


def test_fixed_array() -> None:
    t = P("ap_fixed<8,4>")
    a = FixedArray.from_float([1.5, -2.25], t)
    b = FixedArray([16, 32], P("ap_ufixed<6,2>"))
    assert a.raw.tolist() == [24, -36] and a.shape == (2,) and len(a) == 2
    s = a + b
    assert s.type == add_type(t, b.type) and s.to_float().tolist() == [1.5 + 1.0, -2.25 + 2.0]
    assert (a - b).to_float().tolist() == [0.5, -4.25]
    assert (a * b).to_float().tolist() == [1.5, -4.5]
    assert (-a).to_float().tolist() == [-1.5, 2.25]
    assert (a << 1).type == t and (a << 1).to_float().tolist() == [3.0, -4.5]
    assert (a >> 1).to_float().tolist() == [0.75, -1.125]
    c = a.cast(P("ap_fixed<4,2,AP_RND,AP_SAT>"))
    assert c.to_float().tolist() == [1.5, -2.0]
    assert a[1].raw.tolist() == -36
    assert "ap_fixed<8,4>" in repr(a)
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]
    with pytest.raises(ValueError, match="outside"):
        FixedArray([200], t)
