"""Bit-exact fixed-point KAN online learner: the Python reference of docs/arithmetic.md.

All arithmetic is on int64 raw values. The per-sample loop is a numba kernel; the same code
runs as plain Python under NUMBA_DISABLE_JIT=1, and a test checks the two agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from codesign.kan.bspline import cardinal_basis_derivative_np, cardinal_basis_np
from codesign.kan.kan_online import (
    T_ACT,
    T_ERR,
    T_GRAD,
    grid_coordinate,
    layer_forward,
    layer_input_gradient,
    layer_update,
    read_rom,
    read_window,
)
from codesign.kan.learner_base import OnlineLearner, njit, note_clamp, pack_type, type_row
from codesign.kan.online_error import output_error
from codesign.kan.spec import KANSpec

__all__ = ["KANLearner", "basis_roms", "init_kan_coefficients"]

def basis_roms(spec: KANSpec) -> tuple[np.ndarray, np.ndarray]:
    """Basis and derivative ROMs, raw ints of shape (k+1, 2^A), sampled at address centres."""
    n = 1 << spec.lut_bits
    t = (np.arange(n, dtype=np.float64) + 0.5) / n
    values = cardinal_basis_np(t, spec.spline_order).T  # (k+1, n)
    slopes = cardinal_basis_derivative_np(t, spec.spline_order).T
    return spec.basis_t.quantize(values), spec.dbasis_t.quantize(slopes)


def basis_row_bounds(spec: KANSpec) -> tuple[int, int]:
    """The largest sum of |values| over one ROM address, for the basis and the derivative ROM (raw ints).

    A forward sum over one input is at most this times the largest |coefficient|, so the RTL sizes
    its exact accumulators from it (B-splines sum to one: about 2^F_B, not (k+1) 2^W_B).
    """
    brom, drom = basis_roms(spec)
    return int(np.abs(brom).sum(axis=0).max()), int(np.abs(drom).sum(axis=0).max())


def init_kan_coefficients(spec: KANSpec, seed: int = 0) -> list[np.ndarray]:
    """Float initial coefficients per layer, shape (out, in, G+k).

    Hidden edges start as random ramps (B-splines reproduce a line when the coefficients sit
    on the Greville abscissae), so every hidden unit passes a spread of values and gradients
    on from the first sample; the output layer starts at zero, so the first prediction is 0.
    """
    rng = np.random.default_rng(seed)
    lo, hi = spec.grid_range
    k, h = spec.spline_order, spec.cell_width
    knots = lo + (np.arange(spec.grid_size + 2 * k + 1) - k) * h
    greville = np.array([knots[m + 1 : m + k + 1].mean() for m in range(spec.n_coef)])
    greville = np.clip(greville, lo, hi)
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    coefs = []
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        if layer == len(spec.layer_shapes) - 1:
            coefs.append(np.zeros((n_out, n_in, spec.n_coef)))
            continue
        slope = rng.normal(0.0, 1.0 / np.sqrt(n_in), size=(n_out, n_in, 1))
        noise = rng.normal(0.0, 0.1 / np.sqrt(n_in), size=(n_out, n_in, spec.n_coef))
        coefs.append(slope * (greville - centre) / half + noise)
    return coefs


class KANLearner(OnlineLearner):
    """A KAN online learner on fixed-point integers, exactly as docs/arithmetic.md specifies."""

    spec: KANSpec

    def __init__(self, spec: KANSpec | None = None, coefficients: list[np.ndarray] | None = None, seed: int = 0):
        self.spec = spec if spec is not None else KANSpec()
        shapes = [(o, i, self.spec.n_coef) for i, o in self.spec.layer_shapes]
        if coefficients is None:
            coefficients = init_kan_coefficients(self.spec, seed)
        if len(coefficients) != len(shapes):
            raise ValueError(f"{len(coefficients)} coefficient arrays for {len(shapes)} layers")
        for layer, (c, shape) in enumerate(zip(coefficients, shapes)):
            if np.shape(c) != shape:
                raise ValueError(f"layer {layer} coefficients have shape {np.shape(c)}, expected {shape}")
        self.offsets = np.cumsum([0] + [int(np.prod(s)) for s in shapes]).astype(np.int64)
        self.coef = np.concatenate([self.spec.coef_t.quantize(np.ravel(c)) for c in coefficients])
        self.brom, self.drom = basis_roms(self.spec)
        self.types = np.stack(
            [pack_type(getattr(self.spec, n)) for n in ("act_t", "coef_t", "basis_t", "dbasis_t", "dphi_t", "err_t", "grad_t")]
        )
        g = self.spec.grid_constants()
        self.grid = np.array([g.lo_raw, g.inv_h_raw, g.inv_h_frac, g.u_shift, g.u_max, self.spec.lut_bits], dtype=np.int64)

    def signal_names(self) -> list[str]:
        """Instrumented signals: per layer the grid inputs, outputs, derivatives, input gradients, updates; the errors."""
        names = []
        for l, (n_in, n_out) in enumerate(self.spec.layer_shapes):
            names += [f"layer{l}.grid_in[i={i}]" for i in range(n_in)]
            names += [f"layer{l}.out[o={o}]" for o in range(n_out)]
            edges = [f"o={o},i={i}" for o in range(n_out) for i in range(n_in)]
            if l > 0:
                names += [f"layer{l}.dphi[{e}]" for e in edges]
                names += [f"layer{l}.grad_in[i={i}]" for i in range(n_in)]
            names += [f"layer{l}.coef_update[{e}]" for e in edges]
        names += [f"err[o={o}]" for o in range(self.spec.n_outputs)]
        return names

    def _signal_bases(self) -> np.ndarray:
        """First stats row of each signal kind per layer, in signal_names() order (-1: absent)."""
        shapes = self.spec.layer_shapes
        bases = np.full((len(shapes) + 1, 5), -1, dtype=np.int64)
        row = 0
        for l, (n_in, n_out) in enumerate(shapes):
            bases[l, 0], row = row, row + n_in
            bases[l, 1], row = row, row + n_out
            if l > 0:
                bases[l, 2], row = row, row + n_in * n_out
                bases[l, 3], row = row, row + n_in
            bases[l, 4], row = row, row + n_in * n_out
        bases[len(shapes), 0] = row
        return bases

    def coefficients_raw(self) -> list[np.ndarray]:
        """Raw coef_t integers per layer, shape (out, in, G+k) (a copy)."""
        return [
            self.coef[a:b].reshape(o, i, self.spec.n_coef).copy()
            for (a, b), (i, o) in zip(zip(self.offsets[:-1], self.offsets[1:]), self.spec.layer_shapes)
        ]

    def coefficients(self) -> list[np.ndarray]:
        """Float coefficients per layer, shape (out, in, G+k)."""
        return [self.spec.coef_t.to_float(c) for c in self.coefficients_raw()]

    def run_raw(self, x_raw: np.ndarray, y_raw: np.ndarray, train: bool | np.ndarray = True,
                stats: np.ndarray | None = None, lr_shifts: int | np.ndarray | None = None) -> np.ndarray:
        """Stream raw act_t integers (n, n_in), (n, n_out) through the learner (a shift per sample); returns raw predictions."""
        x_raw, y_raw, train_arr, pred, widths = self._kernel_arrays(x_raw, y_raw, train)
        _kan_stream(
            x_raw, y_raw, train_arr, self.coef, widths, self.offsets, self.spec.n_coef,
            self.brom, self.drom, self.types, self.grid, self._lr_shifts(lr_shifts, x_raw.shape[0]), pred,
            stats, self._signal_bases(),
        )
        return pred


@njit(cache=True)
def _kan_stream(x: np.ndarray, y: np.ndarray, train: np.ndarray, coef: np.ndarray, widths: np.ndarray, offsets: np.ndarray,
                n_coef: int, brom: np.ndarray, drom: np.ndarray, types: np.ndarray, grid: np.ndarray, lr_shifts: np.ndarray,
                pred: np.ndarray, stats: np.ndarray | None, sig: np.ndarray) -> None:
    """Predict-then-update over a stream; coef is updated in place (docs/arithmetic.md §3-§7).

    The operations are those of kan_online.py and online_error.py (named as in hls/codesign/kan_online.h and
    online_error.h), in §7's order.
    stats/sig: a profile's table (None: not profiling) and the first row of each signal kind.
    """
    n_layers = widths.shape[0] - 1
    w_max = widths.max()
    k1 = brom.shape[0]
    acts = np.zeros((n_layers + 1, w_max), dtype=np.int64)
    cells = np.zeros((n_layers, w_max), dtype=np.int64)
    addrs = np.zeros((n_layers, w_max), dtype=np.int64)
    clamped = np.zeros((n_layers, w_max), dtype=np.int64)
    basis = np.zeros((n_layers, w_max, k1), dtype=np.int64)
    dbasis = np.zeros((n_layers, w_max, k1), dtype=np.int64)
    windows = np.zeros((n_layers, w_max, w_max, k1), dtype=np.int64)
    grads = np.zeros((n_layers + 1, w_max), dtype=np.int64)
    err_t = type_row(types, T_ERR)
    for t in range(x.shape[0]):
        # §2-§3 forward
        for i in range(widths[0]):
            acts[0, i] = x[t, i]
        for l in range(n_layers):
            n_in, n_out = widths[l], widths[l + 1]
            for i in range(n_in):
                cells[l, i], addrs[l, i], clamped[l, i] = grid_coordinate(acts[l, i], grid)
                note_clamp(acts[l, i], types[T_ACT, 1], clamped[l, i], stats, sig[l, 0] + i, t)
            read_rom(addrs, brom, basis, l, n_in)
            read_window(coef, cells, windows, l, offsets[l], n_in, n_out, n_coef)
            layer_forward(windows, basis, acts, l, n_in, n_out, types, stats, sig[l, 1], t)
        for o in range(widths[n_layers]):
            pred[t, o] = acts[n_layers, o]
        if train[t] == 0:
            continue
        # §4 error at the output
        output_error(acts, y, grads, n_layers, widths[n_layers], types[T_ACT, 1], err_t, stats, sig[n_layers, 0], t)
        # §5 backward with the pre-update coefficients (the windows), then §6 the sparse update, layer by layer
        for l in range(n_layers - 1, -1, -1):
            n_in, n_out = widths[l], widths[l + 1]
            f_g = types[T_ERR, 1] if l == n_layers - 1 else types[T_GRAD, 1]
            if l > 0:
                read_rom(addrs, drom, dbasis, l, n_in)
                layer_input_gradient(windows, dbasis, clamped, grads, l, n_in, n_out, f_g, types, grid, stats, sig[l, 2],
                                     sig[l, 3], t)
            layer_update(coef, cells, windows, basis, grads, l, offsets[l], n_in, n_out, n_coef, f_g, lr_shifts[t], types,
                         stats, sig[l, 4], t)
