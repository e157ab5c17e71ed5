"""The operations of the KAN online learner, one numba function each, named as in the HLS and the RTL.

Each function here is the Python reference of the HLS function of the same name in
``hls/codesign/kan_grid.h`` / ``kan_online.h`` (docs/arithmetic.md, table "Operations"); the
kernel ``fixed_learner._kan_stream`` is these calls in the order of §7. They work on int64 raw
values, on one layer whose arrays are sized for the widest layer (``n_in``/``n_out`` say how
much of them is used), and record a profile through ``probe`` when given a ``stats`` table (None: not profiling).

Layouts: ``coef`` is flat (layer, o, i, m) from ``offset``. The other arrays hold every layer,
and ``l`` picks layer l's row (no array views in the per-sample loop: each would cost the kernel
two reference-count updates): ``cell``/``addr``/``clamped`` (layer, input); ``basis``/``dbasis``
(layer, input, j); ``window`` (layer, o, i, j), the coefficients ``cell_i + j`` of edge (o, i);
``acts`` and ``grads`` (layer boundary, unit): row l is layer l's input, row l + 1 its output.
"""

from __future__ import annotations

import numpy as np

from codesign.kan.learner_base import njit, probe, type_row

__all__ = ["grid_coordinate", "read_rom", "read_window", "layer_forward", "layer_input_gradient", "layer_update"]

# Rows of the packed type table (learner_base.pack_type per type, in this order).
T_ACT, T_COEF, T_BASIS, T_DBASIS, T_DPHI, T_ERR, T_GRAD = range(7)
# Entries of the packed grid constants (KANLearner.grid).
G_LO_RAW, G_INV_H_RAW, G_INV_H_FRAC, G_U_SHIFT, G_U_MAX, G_LUT_BITS = range(6)


@njit(cache=True)
def grid_coordinate(x: int, grid: np.ndarray) -> tuple[int, int, int]:
    """(cell, ROM address, clamped) of one raw act_t input on the uniform grid (§2)."""
    prod = (x - grid[G_LO_RAW]) * grid[G_INV_H_RAW]
    u_shift = grid[G_U_SHIFT]
    u = prod >> u_shift if u_shift >= 0 else prod << -u_shift
    clamped = 0
    if u < 0:
        u = 0
        clamped = 1
    elif u > grid[G_U_MAX]:
        u = grid[G_U_MAX]
        clamped = 1
    lut_bits = grid[G_LUT_BITS]
    return u >> lut_bits, u & ((1 << lut_bits) - 1), clamped


@njit(cache=True)
def read_rom(addr: np.ndarray, rom: np.ndarray, values: np.ndarray, l: int, n_in: int) -> None:
    """values[l, i, j] = rom[j, addr[l, i]]: the k+1 basis values (or derivatives) of every input (§3)."""
    for i in range(n_in):
        a = addr[l, i]
        for j in range(rom.shape[0]):
            values[l, i, j] = rom[j, a]


@njit(cache=True)
def read_window(coef: np.ndarray, cell: np.ndarray, window: np.ndarray, l: int, offset: int, n_in: int, n_out: int,
                n_coef: int) -> None:
    """window[l, o, i, j] = c[o][i][cell_i + j]: the k+1 active coefficients of every edge."""
    for o in range(n_out):
        for i in range(n_in):
            base = offset + (o * n_in + i) * n_coef + cell[l, i]
            for j in range(window.shape[3]):
                window[l, o, i, j] = coef[base + j]


@njit(cache=True)
def layer_forward(window: np.ndarray, basis: np.ndarray, acts: np.ndarray, l: int, n_in: int, n_out: int,
                  types: np.ndarray, stats: np.ndarray | None, sid: int, t: int) -> None:
    """y_o = acts[l + 1, o] = cast_act_t(sum_i sum_j B_j(a_i) c[o][i][cell_i + j]) (§3); signal sid + o."""
    f_acc = types[T_BASIS, 1] + types[T_COEF, 1]
    act_t = type_row(types, T_ACT)
    for o in range(n_out):
        acc = 0
        for i in range(n_in):
            for j in range(basis.shape[2]):
                acc += basis[l, i, j] * window[l, o, i, j]
        acts[l + 1, o] = probe(acc, f_acc, act_t, stats, sid + o, t)


@njit(cache=True)
def layer_input_gradient(window: np.ndarray, dbasis: np.ndarray, clamped: np.ndarray, grads: np.ndarray, l: int,
                         n_in: int, n_out: int, f_g: int, types: np.ndarray, grid: np.ndarray,
                         stats: np.ndarray | None, sid_dphi: int, sid_grad: int, t: int) -> None:
    """g_i = cast_grad_t(sum_o g_o cast_dphi_t(sum_j D_j(a_i) c[o][i][cell_i + j]) / h), 0 if clamped (§5).

    g_o = grads[l + 1, o] and g_i = grads[l, i]; f_g: fractional bits of g_o (err_t for the last
    layer, grad_t otherwise). Signals: dphi of
    edge (o, i) at sid_dphi + o n_in + i, g_i at sid_grad + i (a clamped input records neither).
    """
    f_dacc = types[T_DBASIS, 1] + types[T_COEF, 1]
    f_s = f_g + types[T_DPHI, 1] + grid[G_INV_H_FRAC]
    dphi_t, grad_t, inv_h = type_row(types, T_DPHI), type_row(types, T_GRAD), grid[G_INV_H_RAW]
    for i in range(n_in):
        if clamped[l, i] == 1:
            grads[l, i] = 0
            continue
        s = 0
        for o in range(n_out):
            dacc = 0
            for j in range(dbasis.shape[2]):
                dacc += dbasis[l, i, j] * window[l, o, i, j]
            dphi = probe(dacc, f_dacc, dphi_t, stats, sid_dphi + o * n_in + i, t)
            s += grads[l + 1, o] * dphi
        grads[l, i] = probe(s * inv_h, f_s, grad_t, stats, sid_grad + i, t)


@njit(cache=True)
def layer_update(coef: np.ndarray, cell: np.ndarray, window: np.ndarray, basis: np.ndarray, grads: np.ndarray, l: int,
                 offset: int, n_in: int, n_out: int, n_coef: int, f_g: int, lr_shift: int, types: np.ndarray,
                 stats: np.ndarray | None, sid: int, t: int) -> None:
    """c[o][i][cell_i + j] = cast_coef_t(c - 2^-lr_shift g_o B_j(a_i)), c from the window, g_o = grads[l + 1, o] (§6).

    Signal of edge (o, i): sid + o n_in + i.
    """
    f_coef = types[T_COEF, 1]
    f_delta = f_g + types[T_BASIS, 1] + lr_shift
    f_full = max(f_coef, f_delta)
    up_c, up_d = f_full - f_coef, f_full - f_delta
    coef_t = type_row(types, T_COEF)
    for o in range(n_out):
        g = grads[l + 1, o]
        for i in range(n_in):
            base = offset + (o * n_in + i) * n_coef + cell[l, i]
            for j in range(basis.shape[2]):
                full = (window[l, o, i, j] << up_c) - ((g * basis[l, i, j]) << up_d)
                coef[base + j] = probe(full, f_full, coef_t, stats, sid + o * n_in + i, t)
