"""codesign.fixed against Xilinx's ap_fixed.h (hls4ml's copy), integer for integer.

oracle.cpp is compiled against the real headers once, then taken from codesign's cache
(keyed by the compiler, the source, the cases and every header). For every one of the
7 x 4 (quantization, overflow) mode pairs it converts more than 100,000 values (doubles into
several types, and raw values of wider or narrower types by assignment); the raw results
must equal ours exactly. Arithmetic, shifts, to_double and the result types of +, -, *
and unary - are compared the same way.
"""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from codesign.fixed import (
    FixedType,
    OMode,
    QMode,
    add,
    add_type,
    mul,
    mul_type,
    neg,
    neg_type,
    shift_left,
    shift_right,
    sub,
    sub_type,
)

from . import _oracle as orc

MODE_PAIRS = [(q, o) for q in QMode for o in OMode]
Case = tuple[str, np.ndarray, np.ndarray, np.ndarray]  # label, inputs, header raw, our raw
MIN_VALUES_PER_PAIR = 100_000

_HUGE = [1e300, 1.7976931348623157e308, 2.0**62, 2.0**63, 2.0**64, 2.0**100, 2.0**1023,
         9.2233720368547758e18, 1e20, 4.5e15, 2.0**53 + 2, 2.0**31, 2.0**32]
_TINY = [5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1e-300, 2.0**-100,
         2.0**-64, 2.0**-63, 2.0**-62]


def _rng(*key: int) -> np.random.Generator:
    return np.random.default_rng([20240917, *key])


def double_stimulus(t: FixedType, rng: np.random.Generator) -> np.ndarray:
    """Doubles for conversion into ``t``: ties, edges, out-of-range and huge values, +-0."""
    f, w = t.frac, t.width
    lo, hi, span = t.min_raw, t.max_raw, 1 << w
    edge_raw = np.array([lo, hi, 0, 1, -1, lo - 1, hi + 1, lo + 1, hi - 1, -hi, -hi - 1, -lo,
                         lo - span, hi + span, 2 * span, -2 * span, span // 2, -(span // 2)],
                        dtype=np.float64)
    offsets = np.array([0.0, 0.5, -0.5, 0.25, -0.25, 0.75, -0.75, 1.5, -1.5])
    edges = np.ldexp((edge_raw[:, None] + offsets[None, :]).ravel(), -f)

    # raw integers beyond 2**51 would lose the half-LSB offset in a double: keep ties exact
    k = rng.integers(max(lo - 2 * span, -(2**51)), min(hi + 2 * span, 2**51), size=4000,
                     endpoint=True)
    ties = np.ldexp(k.astype(np.float64) + 0.5, -f)
    quarter = np.ldexp(k[:2000].astype(np.float64) + rng.choice([0.25, 0.75], 2000), -f)
    grid = np.ldexp(k[2000:3000].astype(np.float64), -f)
    uniform = rng.uniform(4 * t.min_value - 1, 4 * t.max_value + 1, size=2000)
    mags = np.ldexp(rng.uniform(1.0, 2.0, size=2000),
                    rng.integers(-f - 8, t.int_bits + 8, size=2000))
    logu = mags * rng.choice([-1.0, 1.0], size=2000)
    bits = rng.integers(0, 2**64, size=600, dtype=np.uint64).view(np.float64)
    bits = bits[np.isfinite(bits)]
    special = np.array(_HUGE + _TINY + [0.0, -0.0, 1.0, 0.5, 0.1, 1 / 3, math.pi])
    special = np.concatenate([special, -special])
    return np.concatenate([edges, ties, quarter, grid, uniform, logu, bits, special])


def cast_stimulus(src: FixedType, dst: FixedType, rng: np.random.Generator) -> np.ndarray:
    """Raw source values: random, boundaries of the target range, ties of the dropped bits."""
    lo, hi = src.min_raw, src.max_raw
    parts = [np.array([v for v in (lo, hi, 0, 1, -1, lo + 1, hi - 1) if lo <= v <= hi],
                      dtype=np.int64)]
    if hi - lo < 1 << 13:  # small sources: every raw value
        parts.append(np.arange(lo, hi + 1, dtype=np.int64))
    parts.append(rng.integers(lo, hi, size=4000, endpoint=True))
    sh = src.frac - dst.frac
    # source values that land on, just inside and just outside the target's limits
    for b in (dst.min_raw, dst.max_raw, -dst.max_raw, 0, dst.min_raw - 1, dst.max_raw + 1):
        if sh >= 0:
            base = b << sh
            d = [0, 1, -1, 2, -2]
            if sh >= 1:
                h = 1 << (sh - 1)
                d += [h, -h, h - 1, -h + 1, h + 1, -h - 1, (1 << sh) - 1, -(1 << sh) + 1]
            vals = [base + x for x in d]
        else:
            vals = [(b >> -sh) + x for x in (0, 1, -1)]
        parts.append(np.array([v for v in vals if lo <= v <= hi], dtype=np.int64))
    if sh >= 1:
        k = rng.integers(lo >> sh, hi >> sh, size=2000, endpoint=True)
        ties = (k << sh) + (1 << (sh - 1)) if sh <= 62 else k
        parts.append(ties[(ties >= lo) & (ties <= hi)])
    return np.concatenate(parts).astype(np.int64)


def raw_stimulus(t: FixedType, rng: np.random.Generator, n: int) -> np.ndarray:
    lo, hi = t.min_raw, t.max_raw
    edges = np.array([v for v in (lo, hi, 0, 1, -1, lo + 1, hi - 1) if lo <= v <= hi],
                     dtype=np.int64)
    return np.concatenate([edges, rng.integers(lo, hi, size=n, endpoint=True)])


def pair_stimulus(ta: FixedType, tb: FixedType, rng: np.random.Generator,
                  n: int) -> np.ndarray:
    ea = np.array(sorted({ta.min_raw, ta.max_raw, 0, min(1, ta.max_raw)}), dtype=np.int64)
    eb = np.array(sorted({tb.min_raw, tb.max_raw, 0, min(1, tb.max_raw)}), dtype=np.int64)
    grid = np.stack(np.meshgrid(ea, eb, indexing="ij"), axis=-1).reshape(-1, 2)
    rand = np.stack([rng.integers(ta.min_raw, ta.max_raw, size=n, endpoint=True),
                     rng.integers(tb.min_raw, tb.max_raw, size=n, endpoint=True)], axis=1)
    return np.concatenate([grid, rand]).astype(np.int64)


def _int_type(ws: tuple[int, bool]) -> FixedType:
    return FixedType(ws[0], ws[0], ws[1])


# ------------------------------------------------------------------ session fixture
@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> orc.Oracle:
    """The compiled oracle (fails, never skips, when hls4ml or g++ is missing)."""
    try:
        return orc.build(tmp_path_factory.mktemp("ap_fixed_oracle"))
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def mode_results(oracle: orc.Oracle) -> dict[tuple[QMode, OMode], list[Case]]:
    """Per mode pair: (label, inputs, header raw results, our raw results) for every case."""
    conv_x = [double_stimulus(t, _rng(1, k)) for k, t in enumerate(orc.CONV_TYPES)]
    cast_x = [cast_stimulus(s, d, _rng(2, k)) for k, (s, d) in enumerate(orc.CAST_PAIRS)]
    blocks, meta = [], []
    for q, o in MODE_PAIRS:
        for k, t in enumerate(orc.CONV_TYPES):
            tq = t.with_modes(q, o)
            blocks.append((orc.CONV, k, int(q), int(o), conv_x[k]))
            meta.append(((q, o), f"double -> {tq}", conv_x[k], tq.quantize(conv_x[k])))
        for k, (s, d) in enumerate(orc.CAST_PAIRS):
            dq = d.with_modes(q, o)
            blocks.append((orc.CAST, k, int(q), int(o), cast_x[k]))
            meta.append(((q, o), f"{s} -> {dq}", cast_x[k], dq.cast(cast_x[k], s)))
    got = oracle.run(blocks)
    out: dict = {pair: [] for pair in MODE_PAIRS}
    for (pair, label, x, ours), theirs in zip(meta, got):
        out[pair].append((label, x, theirs[:, 0], ours))
    return out


def _mismatch_report(label: str, x: np.ndarray, theirs: np.ndarray, ours: np.ndarray) -> str:
    bad = np.flatnonzero(theirs != ours)
    lines = [f"{label}: {bad.size} of {x.shape[0]} differ"]
    for i in bad[:8]:
        xi = x[i]
        shown = float(xi).hex() if np.asarray(x).dtype == np.float64 else repr(xi.tolist())
        lines.append(f"  input {shown}: ap_fixed.h {int(theirs[i])}, ours {int(ours[i])}")
    return "\n".join(lines)


@pytest.mark.parametrize("q,o", MODE_PAIRS, ids=[f"{q.name}-{o.name}" for q, o in MODE_PAIRS])
def test_conversions_match_header(mode_results: dict, q: QMode, o: OMode) -> None:
    cases = mode_results[(q, o)]
    total = sum(x.shape[0] for _, x, _, _ in cases)
    assert total >= MIN_VALUES_PER_PAIR, f"only {total} values compared for {q.name}, {o.name}"
    reports = [_mismatch_report(*c) for c in cases if not np.array_equal(c[2], c[3])]
    assert not reports, "\n".join(reports)


# ------------------------------------------------------------------ mode-free checks
@pytest.fixture(scope="session")
def other_results(oracle: orc.Oracle) -> dict[str, list[Case]]:
    """to_double, shifts, +, -, *, unary -: (label, inputs, header raw, ours) per case."""
    blocks, meta = [], []
    for k, t in enumerate(orc.CONV_TYPES):
        rng = _rng(3, k)
        raw = raw_stimulus(t, rng, 3000)
        if t.width > 53:  # 61-bit values whose rounding to 53 significant bits is a tie
            m = rng.integers(2**52, 2**53, size=500)
            ties = ((m << 8) | 128) * rng.choice([-1, 1], size=500)
            raw = np.concatenate([raw, ties, ties + 1, ties - 1])
            raw = raw[(raw >= t.min_raw) & (raw <= t.max_raw)]
        if t.frac < 1000:  # the header's to_double has no subnormal results
            blocks.append((orc.TO_DOUBLE, k, 5, 3, raw))
            meta.append(("to_double", f"{t}.to_double()", raw,
                         t.to_float(raw).view(np.int64)[:, None]))

        r = raw_stimulus(t, rng, 3000)
        n = rng.integers(-t.width - 3, t.width + 4, size=r.size)
        n[:20] = [0, 1, -1, 63, 64, 65, 100, -63, -64, -100, 2, -2, t.width, -t.width,
                  t.width - 1, 1 - t.width, t.width + 1, -t.width - 1, 31, 32]
        pairs = np.stack([r, n], axis=1)
        left = shift_left(r, t, n)
        right = shift_right(r, t, n)
        assert left[1] == t and right[1] == t
        ours = np.stack([left[0], right[0], left[0], right[0]], axis=1)
        blocks.append((orc.SHIFT, k, 5, 3, pairs))
        meta.append(("shift", f"{t} << n, >> n (also with AP_RND_CONV, AP_SAT_SYM)", pairs, ours))

    for k, (ta, tb) in enumerate(orc.BIN_PAIRS):
        pairs = pair_stimulus(ta, tb, _rng(4, k), 4000)
        a, b = pairs[:, 0], pairs[:, 1]
        ours = np.stack([add(a, ta, b, tb)[0], sub(a, ta, b, tb)[0], mul(a, ta, b, tb)[0],
                         neg(a, ta)[0]], axis=1)
        blocks.append((orc.BIN, k, 5, 3, pairs))
        meta.append(("arith", f"{ta} (+ - *) {tb}, -a", pairs, ours))

    for k, (wi, tb) in enumerate(orc.MIX_PAIRS):
        ta = _int_type(wi)
        pairs = pair_stimulus(ta, tb, _rng(5, k), 4000)
        a, b = pairs[:, 0], pairs[:, 1]
        ours = np.stack([add(a, ta, b, tb)[0], sub(a, ta, b, tb)[0], mul(a, ta, b, tb)[0]],
                        axis=1)
        blocks.append((orc.MIX, k, 5, 3, pairs))
        meta.append(("arith", f"ap_{'' if wi[1] else 'u'}int<{wi[0]}> (+ - *) {tb}", pairs, ours))

    for k, (wa, wb) in enumerate(orc.INT_PAIRS):
        ta, tb = _int_type(wa), _int_type(wb)
        pairs = pair_stimulus(ta, tb, _rng(6, k), 4000)
        a, b = pairs[:, 0], pairs[:, 1]
        ours = np.stack([add(a, ta, b, tb)[0], sub(a, ta, b, tb)[0], mul(a, ta, b, tb)[0],
                         neg(a, ta)[0]], axis=1)
        blocks.append((orc.INT, k, 5, 3, pairs))
        meta.append(("arith", f"ap_int {wa} (+ - *) {wb}, -a", pairs, ours))

    got = oracle.run(blocks)
    out: dict = {"to_double": [], "shift": [], "arith": []}
    for (group, label, x, ours), theirs in zip(meta, got):
        out[group].append((label, x, theirs, ours))
    return out


@pytest.mark.parametrize("group", ["to_double", "shift", "arith"])
def test_other_operations_match_header(other_results: dict, group: str) -> None:
    reports = []
    for label, x, theirs, ours in other_results[group]:
        assert theirs.shape == ours.shape, label
        if not np.array_equal(theirs, ours):
            bad = np.flatnonzero((theirs != ours).any(axis=1))
            lines = [f"{label}: {bad.size} of {x.shape[0]} differ"]
            for i in bad[:8]:
                lines.append(f"  input {x[i].tolist()}: ap_fixed.h {theirs[i].tolist()}, "
                             f"ours {ours[i].tolist()}")
            reports.append("\n".join(lines))
    assert not reports, "\n".join(reports)


def test_result_types_match_header(oracle: orc.Oracle) -> None:
    def fields(t: FixedType) -> list[int]:
        return [t.width, t.int_bits, int(t.signed), int(t.qmode), int(t.omode)]

    lines = oracle.types()
    assert len(lines) == (len(orc.BIN_PAIRS) + len(orc.MIX_PAIRS) + len(orc.INT_PAIRS)
                          + len(orc.SPELLED_TYPES))
    for line in lines:
        tok = line.split()
        table, k = tok[0], int(tok[1])
        header = {tok[i]: [int(v) for v in tok[i + 1:i + 6]] for i in range(2, len(tok), 6)}
        if table == "spelled":
            t = orc.SPELLED_TYPES[k]
            assert header["type"] == fields(t), f"{t} compiles as {header['type']}"
            continue
        if table == "bin":
            ta, tb = orc.BIN_PAIRS[k]
        elif table == "mix":
            ta, tb = _int_type(orc.MIX_PAIRS[k][0]), orc.MIX_PAIRS[k][1]
        else:
            ta, tb = _int_type(orc.INT_PAIRS[k][0]), _int_type(orc.INT_PAIRS[k][1])
        ours = {"add": add_type(ta, tb), "sub": sub_type(ta, tb), "mul": mul_type(ta, tb),
                "neg": neg_type(ta)}
        for op, h in header.items():
            mine = fields(ours[op])
            if table == "int":
                mine[3:] = [-1, -1]  # ap_int has no modes; its values match ap_fixed<W,W>
            assert mine == h, f"{line}: {op} of {ta}, {tb} gives {ours[op]}, header {h}"


def test_oracle_prerequisites_are_installed() -> None:
    # hls4ml (for the headers) and g++ are project test dependencies: fail, do not skip
    try:
        orc.header_dir()
        orc.compiler()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


def test_oracle_case_tables_are_consistent() -> None:
    # the C++ include is generated from the same tables; every cast target is a CONV type
    assert all(d in orc.CONV_TYPES for _, d in orc.CAST_PAIRS)
    inc = orc.cases_include()
    assert inc.count("X(") == (len(orc.CONV_TYPES) + len(orc.CAST_PAIRS) + len(orc.BIN_PAIRS)
                               + len(orc.MIX_PAIRS) + len(orc.INT_PAIRS)
                               + len(orc.SPELLED_TYPES))


def test_the_cached_oracle_is_rebuilt_when_a_header_or_the_part_count_changes(tmp_path):
    headers = tmp_path / "ap_types"
    shutil.copytree(orc.header_dir(), headers)
    cxx = orc.compiler()
    key = orc._cache_folder(cxx, headers, 2)
    assert orc._cache_folder(cxx, headers, 2) == key
    assert orc._cache_folder(cxx, headers, 3) != key
    with open(headers / "ap_fixed.h", "a") as fh:
        fh.write("\n")
    assert orc._cache_folder(cxx, headers, 2) != key
