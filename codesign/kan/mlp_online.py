"""The operations of the MLP online learner, one numba function each, named as in ``hls/codesign/mlp_online.h``.

Each function here is the Python reference of the HLS function of the same name (docs/arithmetic.md
§8 and §10); the kernel ``mlp_learner._mlp_stream`` is these calls (and ``online_error.output_error``)
in the order of §7. They work on int64 raw values of one layer whose arrays are sized for the widest
layer (``n_in``/``n_out`` say how much is used), and record a profile through ``probe`` when given a
``stats`` table (None: not profiling).

Layouts: ``wts`` is flat from ``offset``, one row per neuron o: its n_in weights, then its bias.
``pre``, ``acts`` and ``grads`` are (layer boundary, unit): row l is layer l's input, row l + 1 its
output (``pre``: the cast sums before the activation).
"""

from __future__ import annotations

import numpy as np

from codesign.kan.learner_base import njit, probe, type_row

__all__ = ["dense_forward", "activation_mask", "dense_input_gradient", "dense_update"]

# Rows of the packed type table (learner_base.pack_type per type, in this order).
T_ACT, T_COEF, T_ERR, T_GRAD = range(4)
ACT_RELU, ACT_HARDTANH = 0, 1


@njit(cache=True)
def dense_forward(wts: np.ndarray, acts: np.ndarray, pre: np.ndarray, l: int, offset: int, n_in: int, n_out: int,
                  hidden: bool, activation: int, types: np.ndarray, stats: np.ndarray | None, sid: int, t: int) -> None:
    """pre[l + 1, o] = z_o = cast_act_t(sum_i w_oi x_i + (b_o << F_act)), acts[l + 1, o] = act(z_o) if hidden (§8); signal sid + o."""
    f_act, f_coef = types[T_ACT, 1], types[T_COEF, 1]
    act_t = type_row(types, T_ACT)
    one = np.int64(1) << f_act
    for o in range(n_out):
        row = offset + o * (n_in + 1)
        acc = wts[row + n_in] << f_act  # bias, aligned to the products' f_coef + f_act bits
        for i in range(n_in):
            acc += wts[row + i] * acts[l, i]
        z = probe(acc, f_coef + f_act, act_t, stats, sid + o, t)
        pre[l + 1, o] = z
        if hidden:
            if activation == ACT_RELU:
                z = max(z, 0)
            else:
                z = min(max(z, -one), one)
        acts[l + 1, o] = z


@njit(cache=True)
def activation_mask(pre: np.ndarray, grads: np.ndarray, l: int, n_out: int, hidden: bool, activation: int,
                    f_act: int) -> None:
    """grads[l + 1, o] = 0 where the activation is flat at z_o = pre[l + 1, o] (ReLU: z <= 0; hardtanh: |z| >= 1) (§8)."""
    if not hidden:  # the last layer is linear: every gradient passes
        return
    one = np.int64(1) << f_act
    for o in range(n_out):
        z = pre[l + 1, o]
        active = z > 0 if activation == ACT_RELU else (z > -one and z < one)
        if not active:
            grads[l + 1, o] = 0


@njit(cache=True)
def dense_input_gradient(wts: np.ndarray, grads: np.ndarray, l: int, offset: int, n_in: int, n_out: int, f_g: int,
                         types: np.ndarray, stats: np.ndarray | None, sid: int, t: int) -> None:
    """grads[l, i] = cast_grad_t(sum_o g_o w_oi), g_o = grads[l + 1, o] (f_g fractional bits), pre-update weights (§8); signal sid + i."""
    grad_t, f_coef = type_row(types, T_GRAD), types[T_COEF, 1]
    for i in range(n_in):
        s = 0
        for o in range(n_out):
            s += grads[l + 1, o] * wts[offset + o * (n_in + 1) + i]
        grads[l, i] = probe(s, f_g + f_coef, grad_t, stats, sid + i, t)


@njit(cache=True)
def dense_update(wts: np.ndarray, acts: np.ndarray, grads: np.ndarray, l: int, offset: int, n_in: int, n_out: int,
                 f_g: int, lr_shift: int, types: np.ndarray, stats: np.ndarray | None, sid: int, t: int) -> None:
    """w_oi = cast_coef_t(w_oi - 2^-lr_shift g_o x_i), b_o likewise with x = 1.0 (§8); signal sid + o (n_in + 1) + i."""
    f_act, f_coef = types[T_ACT, 1], types[T_COEF, 1]
    coef_t = type_row(types, T_COEF)
    one = np.int64(1) << f_act
    f_delta = f_g + f_act + lr_shift
    f_full = max(f_coef, f_delta)
    for o in range(n_out):
        g = grads[l + 1, o]
        row = offset + o * (n_in + 1)
        for i in range(n_in + 1):
            xin = acts[l, i] if i < n_in else one  # the bias sees a constant input of 1.0
            full = (wts[row + i] << (f_full - f_coef)) - ((g * xin) << (f_full - f_delta))
            wts[row + i] = probe(full, f_full, coef_t, stats, sid + o * (n_in + 1) + i, t)
