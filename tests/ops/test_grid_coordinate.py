"""grid_coordinate (§2): the Python function, the HLS function and rtl/kan_grid.sv on the same inputs."""

from __future__ import annotations

import numpy as np

from codesign.kan.kan_online import grid_coordinate
from tests.ops.conftest import SPECS
from tests.ops.rtl_vectors import run_module
from tests.ops.vectors import corners, random_raw, reference_tables


def grid_inputs(spec, rng: np.random.Generator) -> np.ndarray:
    """The act_t corners, both grid ends and every cell edge (and one step either side), then random values."""
    g = spec.grid_constants()
    h_raw = spec.cell_width * 2.0**spec.act_t.frac
    edges = np.round(g.lo_raw + np.arange(spec.grid_size + 1) * h_raw).astype(np.int64)
    near = np.concatenate([edges - 1, edges, edges + 1])
    lo, hi = int(corners(spec.act_t)[0]), int(corners(spec.act_t)[-1])
    x = np.concatenate([corners(spec.act_t), np.clip(near, lo, hi), random_raw(spec.act_t, 300, rng)])
    return x


def _python(spec, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _, grid, _, _ = reference_tables(spec)
    rows = np.array([grid_coordinate(int(v), grid) for v in x], dtype=np.int64)
    return rows[:, 0], rows[:, 1], rows[:, 2]


def test_grid_coordinate_python_equals_hls(spec_name, hls_ops):
    spec = SPECS[spec_name]
    x = grid_inputs(spec, np.random.default_rng(1))
    for name, py, hls in zip(("cell", "addr", "clamped"), _python(spec, x), hls_ops.grid_coordinate(x)):
        bad = np.flatnonzero(py != hls)
        assert bad.size == 0, f"{name} differs at x={x[bad[:5]]}: python {py[bad[:5]]} hls {hls[bad[:5]]}"


def test_grid_coordinate_python_equals_kan_grid_sv(tmp_path_factory):
    # One Verilator build: the spec whose 1/h is a multiply (const_mult) rather than a shift; the
    # default spec's kan_grid runs in every learner co-simulation (tests/sim/test_learner_cosim.py).
    spec_name = "g6_k2"
    spec = SPECS[spec_name]
    g = spec.grid_constants()
    x = grid_inputs(spec, np.random.default_rng(2))
    w = spec.act_t.width
    params = dict(W_ACT=w, LO_RAW=g.lo_raw, INV_H=g.inv_h_raw, U_SHIFT=g.u_shift, A=spec.lut_bits, G=spec.grid_size,
                  W_CELL=max(1, (spec.grid_size - 1).bit_length()))
    out = run_module(["pipe_reg.sv", "const_mult.sv", "kan_grid.sv"], "kan_grid", params,
                     {"x": [int(v) & ((1 << w) - 1) for v in x]}, ["cell_idx", "addr_raw", "low", "high", "clamped"],
                     tmp_path_factory.getbasetemp() / f"kan_grid_{spec_name}")
    _assert_grid_equal(spec, x, out)


def _assert_grid_equal(spec, x, out):
    """kan_grid's outputs against the Python grid coordinate; its ROM address is addr_raw unless low / high clamp it."""
    low, high = (np.array(out[k], dtype=np.int64) for k in ("low", "high"))
    addr = np.where(low == 1, 0, np.where(high == 1, (1 << spec.lut_bits) - 1, np.array(out["addr_raw"], dtype=np.int64)))
    for name, py, sv in zip(("cell_idx", "addr", "clamped"), _python(spec, x),
                            (np.array(out["cell_idx"], dtype=np.int64), addr, np.array(out["clamped"], dtype=np.int64))):
        bad = np.flatnonzero(py != sv)
        assert bad.size == 0, f"{name} differs at x={x[bad[:5]]}: python {py[bad[:5]]} sv {sv[bad[:5]]}"
    assert np.array_equal(low | high, np.array(out["clamped"], dtype=np.int64))


def test_kan_grid_sv_from_the_offset_equals_python(tmp_path_factory):
    # OFFSET_IN: the input is {above, x - lo} as a folded layer receives it from the previous layer's cast (the
    # default spec's cells are a power of two): the offset one bit wider than act_t, so that it can exceed it, and
    # whether the grid clamps it high (u > U_MAX), which that cast compares beside its chain
    spec = SPECS["default"]
    g = spec.grid_constants()
    assert g.power_of_two
    x = grid_inputs(spec, np.random.default_rng(3))
    w_offset = spec.act_t.width + 1
    offset = x - g.lo_raw
    above = ((offset >> g.u_shift) if g.u_shift >= 0 else (offset << -g.u_shift)) > g.u_max
    words = [int(a) << w_offset | (int(v) & ((1 << w_offset) - 1)) for a, v in zip(above, offset)]
    params = dict(W_ACT=spec.act_t.width, LO_RAW=g.lo_raw, INV_H=g.inv_h_raw, U_SHIFT=g.u_shift, A=spec.lut_bits,
                  G=spec.grid_size, W_CELL=max(1, (spec.grid_size - 1).bit_length()), OFFSET_IN=1, W_X=w_offset + 1)
    out = run_module(["pipe_reg.sv", "const_mult.sv", "kan_grid.sv"], "kan_grid", params, {"x": words},
                     ["cell_idx", "addr_raw", "low", "high", "clamped"], tmp_path_factory.getbasetemp() / "kan_grid_offset_in")
    assert above.any() and (offset < 0).any()  # both clamps are exercised
    _assert_grid_equal(spec, x, out)
