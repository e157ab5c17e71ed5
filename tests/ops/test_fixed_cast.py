"""fixed_cast (cast_T of docs/arithmetic.md): codesign.fixed.fixed_cast, the ap_fixed.h assignment and rtl/fixed_cast.sv.

All 7 rounding x 4 overflow modes of three shapes (a signed drop, an unsigned target, a left shift)
on the same inputs: the extremes of the source, zero, exact ties of the dropped bits, random values.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from codesign.fixed.kernel import fixed_cast_array
from codesign.fpga.simulator import bench_dir
from tests.ops.hls_library import HERE, compile_shared
from tests.ops.rtl_vectors import pack, run_module, unpack
from tests.ops.vectors import assert_equal

# (w_in, shift, w_out, signed); the target keeps F_OUT fractional bits, the source F_OUT + shift.
SHAPES = [(24, 7, 10, 1), (20, 9, 8, 0), (12, -3, 10, 1)]
F_OUT = 4
N_MODES = 28


def _inputs(w_in: int, shift: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = -(1 << (w_in - 1)), (1 << (w_in - 1)) - 1
    values = [lo, lo + 1, -1, 0, 1, hi - 1, hi]
    if shift > 0:  # ties of the dropped bits, one above and below, either sign
        half = 1 << (shift - 1)
        for base in (0, 5 << shift, -(5 << shift), 3 << shift):
            values += [base + half, base + half - 1, base + half + 1, base - half]
    rand = rng.integers(lo, hi, size=400, endpoint=True, dtype=np.int64)
    return np.clip(np.concatenate([np.array(values, dtype=np.int64), rand]), lo, hi)


def _python(v: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    _, shift, w_out, signed = shape
    return np.stack([fixed_cast_array(v, shift, w_out, bool(signed), q, o) for q in range(7) for o in range(4)], axis=1)


def _python_wide(v: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    """Each rounding mode into a 62-bit AP_SAT type, which no input here overflows (codesign.kan.learner_base.probe)."""
    return np.stack([fixed_cast_array(v, shape[1], 62, True, q, 0) for q in range(7)], axis=1)


@pytest.fixture(scope="module")
def hls_fixed_cast(tmp_path_factory) -> ctypes.CDLL:
    shapes = " ".join(f"X({k},{w_in},{w_in - F_OUT - shift},{w_out},{w_out - F_OUT},{signed})"
                      for k, (w_in, shift, w_out, signed) in enumerate(SHAPES))
    lib = compile_shared(HERE / "fixed_cast_ops.cpp", tmp_path_factory.mktemp("hls_fixed_cast"), "fixed_cast_ops",
                         [f"-DFIXED_CAST_SHAPES={shapes}"])
    lib.ops_fixed_cast.argtypes = [ctypes.c_int, ctypes.c_longlong, *[np.ctypeslib.ndpointer(np.int64)] * 2]
    return lib


def test_fixed_cast_python_equals_ap_fixed_assignment(hls_fixed_cast):
    rng = np.random.default_rng(5)
    for k, shape in enumerate(SHAPES):
        v = _inputs(shape[0], shape[1], rng)
        out = np.zeros((v.size, N_MODES), dtype=np.int64)
        assert hls_fixed_cast.ops_fixed_cast(k, v.size, v, out) == 0
        assert_equal(f"shape {shape} (vector, mode q*4+o)", _python(v, shape), out, "hls")


def test_fixed_cast_python_equals_fixed_cast_sv(tmp_path_factory):
    rng = np.random.default_rng(6)
    inputs = [_inputs(shape[0], shape[1], rng) for shape in SHAPES]
    n = max(v.size for v in inputs)
    rows = np.stack([v[np.arange(n) % v.size] for v in inputs], axis=1)  # (n, shapes)
    params = {"N_SHAPES": len(SHAPES)}
    for col, name in enumerate(("W_IN_TABLE", "SHIFT_TABLE", "W_OUT_TABLE", "SIGNED_TABLE")):
        params[name] = f"{32 * len(SHAPES)}'h{pack(np.array([[s[col] for s in SHAPES]]), 32)[0]:x}"
    out = run_module(["pipe_reg.sv", "fixed_cast.sv", bench_dir() / "fixed_cast_harness.sv"], "fixed_cast_harness",
                     params, {"v_all": pack(rows, 64)}, ["q_all"], tmp_path_factory.getbasetemp() / "ops_fixed_cast")
    sv = unpack(out["q_all"], 32, len(SHAPES) * N_MODES, False).reshape(n, len(SHAPES), N_MODES)
    overflows = 0
    for k, shape in enumerate(SHAPES):
        py = _python(rows[:, k], shape)
        assert_equal(f"shape {shape} (vector, mode q*4+o)", py & ((1 << shape[2]) - 1), sv[:, k] & ((1 << 31) - 1), "sv")
        # the overflow flag: the value differs from the same rounding into a type too wide to overflow
        wide = np.repeat(_python_wide(rows[:, k], shape), 4, axis=1)
        assert_equal(f"shape {shape} overflow (vector, mode q*4+o)", (py != wide).astype(np.int64), sv[:, k] >> 31, "sv")
        overflows += int((py != wide).sum())
    assert overflows > 0  # the extremes overflow every shape
