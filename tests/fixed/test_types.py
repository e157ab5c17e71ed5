"""FixedType: validation, parsing, printing, properties and conversions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from codesign.fixed import MAX_WIDTH, FixedType, OMode, QMode

P = FixedType.parse


@pytest.mark.parametrize(
    "text,expected",
    [
        ("ap_fixed<16,6>", FixedType(16, 6)),
        ("ap_fixed<16, 6, AP_RND_CONV, AP_SAT>",
         FixedType(16, 6, True, QMode.AP_RND_CONV, OMode.AP_SAT)),
        ("  ap_ufixed < 8 , 3 , AP_RND >  ", FixedType(8, 3, False, QMode.AP_RND)),
        ("ap_fixed<8,-2,AP_TRN,AP_SAT_SYM,0>",
         FixedType(8, -2, True, QMode.AP_TRN, OMode.AP_SAT_SYM)),
        ("ap_int<8>", FixedType(8, 8, True)),
        ("ap_uint< 12 >", FixedType(12, 12, False)),
        ("ap_fixed<\n18,\t2>", FixedType(18, 2)),
    ],
)
def test_parse(text: str, expected: FixedType) -> None:
    assert P(text) == expected


@pytest.mark.parametrize(
    "t,text",
    [
        (FixedType(16, 6), "ap_fixed<16,6>"),
        (FixedType(16, 6, qmode=QMode.AP_RND), "ap_fixed<16,6,AP_RND>"),
        (FixedType(16, 6, qmode=QMode.AP_RND_CONV, omode=OMode.AP_SAT),
         "ap_fixed<16,6,AP_RND_CONV,AP_SAT>"),
        (FixedType(16, 6, omode=OMode.AP_SAT), "ap_fixed<16,6,AP_TRN,AP_SAT>"),
        (FixedType(10, 2, False), "ap_ufixed<10,2>"),
        (FixedType(8, 8), "ap_fixed<8,8>"),
        (FixedType(7, -3, False, QMode.AP_TRN_ZERO), "ap_ufixed<7,-3,AP_TRN_ZERO>"),
    ],
)
def test_str_is_canonical_and_round_trips(t: FixedType, text: str) -> None:
    assert str(t) == text
    assert P(text) == t
    assert P(str(t)) == t
    assert eval(repr(t), {"FixedType": FixedType}) == t


def test_round_trip_all_modes() -> None:
    for q in QMode:
        for o in OMode:
            for signed in (True, False):
                t = FixedType(12, 4, signed, q, o)
                assert P(str(t)) == t
                assert P(str(t).replace(",", " , ")) == t


def test_default_modes_spelled_out_parse_to_defaults() -> None:
    assert P("ap_fixed<16,6,AP_TRN,AP_WRAP,0>") == FixedType(16, 6)
    assert str(P("ap_fixed<16,6,AP_TRN,AP_WRAP>")) == "ap_fixed<16,6>"


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "cannot parse"),
        ("fixed<16,6>", "expected ap_fixed"),
        ("ap_fixed<16,6", "expected ap_fixed"),
        ("ap_fixed 16,6", "expected ap_fixed"),
        ("ap_fixed<16>", "takes 2 to 5 arguments"),
        ("ap_fixed<1,2,3,4,5,6>", "takes 2 to 5 arguments"),
        ("ap_fixed<16,,6>", "empty template argument"),
        ("ap_fixed<a,6>", "width 'a' is not an integer"),
        ("ap_fixed<16,6.5>", "integer bits '6.5' is not an integer"),
        ("ap_fixed<16,6,AP_FOO>", "unknown quantization mode 'AP_FOO'"),
        ("ap_fixed<16,6,AP_SAT>", "unknown quantization mode 'AP_SAT'"),
        ("ap_fixed<16,6,AP_RND,AP_RND>", "unknown overflow mode 'AP_RND'"),
        ("ap_fixed<16,6,AP_RND,AP_WRAP_SM>", "sign-magnitude wrap is not supported"),
        ("ap_fixed<16,6,AP_RND,AP_SAT,1>", "saturation bits N=1"),
        ("ap_fixed<16,6,AP_RND,AP_SAT,x>", "saturation bits N 'x' is not an integer"),
        ("ap_int<8,2>", "ap_int takes exactly one argument"),
        ("ap_fixed<8,9>", "int_bits=9 exceeds width=8"),
        ("ap_fixed<0,0>", "width must be >= 1, got width=0"),
        ("ap_ufixed<-3,-4>", "got width=-3"),
        ("ap_fixed<63,10>", "exceeds the supported maximum of 62"),
    ],
)
def test_parse_errors_are_one_line_and_name_the_string(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        P(text)
    msg = str(info.value)
    assert fragment in msg
    assert repr(text) in msg
    assert "\n" not in msg


def test_parse_rejects_non_string() -> None:
    with pytest.raises(TypeError):
        P(16)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "args,fragment",
    [
        ((0, 0), "width=0"),
        ((-1, -5), "width=-1"),
        ((8, 9), "int_bits=9 exceeds width=8"),
        ((MAX_WIDTH + 1, 0), f"width {MAX_WIDTH + 1} exceeds"),
    ],
)
def test_constructor_validation(args: tuple, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        FixedType(*args)


def test_constructor_types() -> None:
    with pytest.raises(TypeError):
        FixedType(8.0, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FixedType(8, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        FixedType(8, 3, signed=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown QMode 'AP_ROUND'"):
        FixedType(8, 3, qmode="AP_ROUND")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a valid OMode"):
        FixedType(8, 3, omode=9)  # type: ignore[arg-type]
    t = FixedType(np.int64(8), np.int32(3), qmode="AP_RND", omode=0)  # type: ignore[arg-type]
    assert t == FixedType(8, 3, True, QMode.AP_RND, OMode.AP_SAT)
    assert type(t.width) is int and t.qmode is QMode.AP_RND
    assert hash(t) == hash(FixedType(8, 3, True, QMode.AP_RND, OMode.AP_SAT))


def test_properties() -> None:
    t = P("ap_fixed<16,6>")
    assert (t.frac, t.min_raw, t.max_raw) == (10, -32768, 32767)
    assert t.lsb == 2.0**-10
    assert (t.min_value, t.max_value) == (-32.0, 32.0 - 2.0**-10)
    u = P("ap_ufixed<10,2>")
    assert (u.frac, u.min_raw, u.max_raw) == (8, 0, 1023)
    assert (u.min_value, u.max_value) == (0.0, 4 - 2.0**-8)
    n = P("ap_fixed<7,-2>")
    assert (n.frac, n.max_value) == (9, 63 / 512)
    one = P("ap_fixed<1,1>")
    assert (one.min_raw, one.max_raw, one.min_value) == (-1, 0, -1.0)
    wide = P("ap_ufixed<62,62>")
    assert wide.max_raw == 2**62 - 1


def test_with_modes_and_replace() -> None:
    t = P("ap_fixed<16,6>")
    assert t.with_modes(QMode.AP_RND_CONV, OMode.AP_SAT) == P("ap_fixed<16,6,AP_RND_CONV,AP_SAT>")
    assert t.with_modes(omode="AP_SAT") == P("ap_fixed<16,6,AP_TRN,AP_SAT>")
    assert t.replace(width=18, signed=False) == P("ap_ufixed<18,6>")
    with pytest.raises(ValueError, match="int_bits=20 exceeds width=16"):
        t.replace(int_bits=20)


def test_quantize_basic_and_shape() -> None:
    t = P("ap_fixed<8,4,AP_RND_CONV,AP_SAT>")
    x = np.array([[0.0, 0.03125, 0.09375], [-0.03125, 100.0, -100.0]])
    raw = t.quantize(x)
    assert raw.dtype == np.int64 and raw.shape == (2, 3)
    assert raw.tolist() == [[0, 0, 2], [0, 127, -128]]
    assert t.quantize(1.5).shape == () and int(t.quantize(1.5)) == 24
    assert t.quantize([]).shape == (0,)
    assert t.quantize([True, 2]).tolist() == [16, 32]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_quantize_rejects_nan_and_inf(bad: float) -> None:
    t = P("ap_fixed<16,6>")
    with pytest.raises(ValueError, match="NaN or inf") as info:
        t.quantize([1.0, bad, 2.0])
    assert "ap_fixed<16,6>" in str(info.value)


def test_quantize_rejects_non_numbers() -> None:
    with pytest.raises(TypeError):
        P("ap_fixed<16,6>").quantize(["a"])


def test_to_float_and_raw_checks() -> None:
    t = P("ap_fixed<8,3>")
    assert t.to_float([-128, 0, 127]).tolist() == [-4.0, 0.0, 127 / 32]
    with pytest.raises(ValueError,
                       match=r"raw value 128 is outside ap_fixed<8,3> \(raw range -128..127\)"):
        t.to_float([0, 128])
    with pytest.raises(ValueError, match="raw value -1 is outside"):
        P("ap_ufixed<8,3>").to_float([-1])
    with pytest.raises(TypeError, match="must be integers"):
        t.to_float([0.5])
    with pytest.raises(ValueError, match="fit int64"):
        t.to_float([2**70])
    assert t.to_float(np.array([3], dtype=np.uint8)).tolist() == [3 / 32]


def test_quantize_to_float_round_trip() -> None:
    t = P("ap_fixed<20,5,AP_RND_CONV,AP_SAT>")
    raw = np.arange(t.min_raw, t.max_raw + 1, 997)
    assert np.array_equal(t.quantize(t.to_float(raw)), raw)


def test_cast() -> None:
    src = P("ap_fixed<12,4>")
    raw = np.array([0x7FF, -0x800, 0x18, -0x18, 0x08, -0x08])  # 7.99.., -8, 0.09375, ...
    dst = P("ap_fixed<6,2,AP_RND,AP_SAT>")
    # 12,4 has 8 fractional bits; 6,2 has 4: drop 4 bits rounding half up, then saturate
    assert dst.cast(raw, src).tolist() == [31, -32, 2, -1, 1, 0]
    assert P("ap_fixed<6,2>").cast(raw, src).tolist() == [-1, 0, 1, -2, 0, -1]
    assert P("ap_ufixed<6,2,AP_TRN,AP_SAT>").cast(raw, src).tolist() == [63, 0, 1, 0, 0, 0]
    with pytest.raises(TypeError):
        dst.cast(raw, "ap_fixed<12,4>")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="outside ap_fixed<12,4>"):
        dst.cast([4096], src)


def test_from_raw_exact_values() -> None:
    t = P("ap_fixed<8,4,AP_RND_INF,AP_SAT_SYM>")
    # exact values with 6 fractional bits -> 4 fractional bits
    assert t.from_raw([2, -2, 6, -6, 10000, -10000], 6).tolist() == [1, -1, 2, -2, 127, -127]
