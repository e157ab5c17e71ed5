"""Float online learning: predict-then-update SGD, batch size 1, for the torch KAN and MLP.

A hand-written numpy forward/backward serves CPU KANs and MLPs (fast); any other module
goes through autograd. Both give the same predictions (tests/kan/test_float_model.py).
"""

from __future__ import annotations

import math
from typing import Literal, cast

import numpy as np
import torch
from torch import nn

from codesign.kan.bspline import cardinal_coefficients, cardinal_derivative_coefficients
from codesign.kan.float_model import KAN, MLP

__all__ = ["train_online"]


def _silu_np(z: np.ndarray) -> np.ndarray:
    """Numpy silu ``z * sigmoid(z)``."""
    out: np.ndarray = z / (1.0 + np.exp(-z))
    return out


def _silu_grad_np(z: np.ndarray) -> np.ndarray:
    """Derivative of silu."""
    s = 1.0 / (1.0 + np.exp(-z))
    out: np.ndarray = s * (1.0 + z * (1.0 - s))
    return out


def _train_online_kan(model: KAN, x: np.ndarray, y: np.ndarray, lr: float) -> np.ndarray:
    """Hand-written forward/backward of a KAN for one-sample SGD (parameters' dtype)."""
    dt = np.dtype(str(model.kan_layers()[0].coef.dtype).replace("torch.", ""))
    G, k = model.grid_size, model.spline_order
    lo, hi = model.grid_range
    inv_h = 1.0 / ((hi - lo) / G)
    m_val = cardinal_coefficients(k).T.astype(dt)  # row p: power-p coefficients of b_0..b_k
    m_der = cardinal_derivative_coefficients(k).T.astype(dt)
    n_basis = G + k
    offsets = np.arange(k + 1)
    powers = np.arange(k + 1, dtype=dt)
    lr = dt.type(lr)

    # Flat (out, in * (G+k)) copies; coefficient of edge (o, i), basis m sits at i*(G+k) + m.
    coefs = [
        layer.coef.detach().cpu().numpy().astype(dt, copy=True).reshape(layer.out_features, -1)
        for layer in model.kan_layers()
    ]
    bases = [
        None
        if layer.base_weight is None
        else layer.base_weight.detach().cpu().numpy().astype(dt, copy=True)
        for layer in model.kan_layers()
    ]
    row_starts = [(np.arange(layer.in_features) * n_basis)[:, None] + offsets for layer in model.kan_layers()]
    xs = x.astype(dt)
    ys = y.astype(dt)
    preds = np.empty((x.shape[0], model.out_features), dtype=np.float64)
    n_layers = len(coefs)

    with np.errstate(over="ignore"):  # exp overflow in the sigmoid just gives 0 or 1
        for n in range(xs.shape[0]):
            a = xs[n]
            cache = []
            for li in range(n_layers):
                s = (np.minimum(np.maximum(a, lo), hi) - lo) * inv_h
                cell = np.minimum(np.floor(s), G - 1)
                t = s - cell
                tp = t[:, None] ** powers  # (in, k+1): t**0 .. t**k
                bvals = (tp @ m_val).ravel()  # (in * (k+1),)
                fidx = (row_starts[li] + cell.astype(np.intp)[:, None]).ravel()
                local = coefs[li][:, fidx]  # (out, in * (k+1))
                out = local @ bvals
                sa = None
                if bases[li] is not None:
                    sig = 1.0 / (1.0 + np.exp(-a))
                    sa = a * sig
                    out = out + bases[li] @ sa
                    cache.append((a, tp, bvals, fidx, local, sa, sig))
                else:
                    cache.append((a, tp, bvals, fidx, local, None, None))
                a = out
            preds[n] = a
            g = a - ys[n]
            for li in range(n_layers - 1, -1, -1):
                a_in, tp, bvals, fidx, local, sa, sig = cache[li]
                if li > 0:
                    # d y_o / d x_i = sum_j local[o,i,j] (1/h) db_j/dt, zero outside the grid.
                    dvals = tp[:, :k] @ m_der
                    w = (g @ local).reshape(-1, k + 1)
                    g_in = (w * dvals).sum(axis=1) * inv_h
                    g_in *= (a_in >= lo) & (a_in <= hi)
                    if sa is not None:
                        g_in += (g @ bases[li]) * (sig * (1.0 + a_in * (1.0 - sig)))
                coefs[li][:, fidx] = local - lr * (g[:, None] * bvals)
                if sa is not None:
                    bases[li] -= lr * (g[:, None] * sa)
                if li > 0:
                    g = g_in

    with torch.no_grad():
        for layer, c, b in zip(model.kan_layers(), coefs, bases):
            layer.coef.copy_(torch.from_numpy(c.reshape(layer.coef.shape)))
            if b is not None:
                layer.base_weight.copy_(torch.from_numpy(b))
    return preds


def _act_np(name: str, z: np.ndarray) -> np.ndarray:
    """Numpy hidden activation."""
    out: np.ndarray
    if name == "relu":
        out = np.maximum(z, 0.0)
    elif name == "hardtanh":
        out = np.clip(z, -1.0, 1.0)
    elif name == "tanh":
        out = np.tanh(z)
    else:
        out = _silu_np(z)
    return out


def _act_grad_np(name: str, z: np.ndarray) -> np.ndarray:
    """Derivative of the hidden activation (torch's conventions at the kinks)."""
    if name == "relu":
        return (z > 0).astype(z.dtype)
    if name == "hardtanh":
        return ((z > -1.0) & (z < 1.0)).astype(z.dtype)
    if name == "tanh":
        out: np.ndarray = 1.0 - np.tanh(z) ** 2
        return out
    return _silu_grad_np(z)


def _train_online_mlp(model: MLP, x: np.ndarray, y: np.ndarray, lr: float) -> np.ndarray:
    """Hand-written forward/backward of an MLP for one-sample SGD (parameters' dtype)."""
    dt = np.dtype(str(model.linear_layers()[0].weight.dtype).replace("torch.", ""))
    lr = dt.type(lr)
    ws = [layer.weight.detach().cpu().numpy().astype(dt, copy=True) for layer in model.linear_layers()]
    bs = [
        None if layer.bias is None else layer.bias.detach().cpu().numpy().astype(dt, copy=True)
        for layer in model.linear_layers()
    ]
    name = model.activation
    xs, ys = x.astype(dt), y.astype(dt)
    preds = np.empty((x.shape[0], model.out_features), dtype=np.float64)
    n_layers = len(ws)
    for n in range(xs.shape[0]):
        a = xs[n]
        inputs, pre = [], []
        for li in range(n_layers):
            inputs.append(a)
            z = ws[li] @ a
            if bs[li] is not None:
                z = z + bs[li]
            pre.append(z)
            a = _act_np(name, z) if li < n_layers - 1 else z
        preds[n] = a
        g = a - ys[n]
        for li in range(n_layers - 1, -1, -1):
            g_in = (g @ ws[li]) * _act_grad_np(name, pre[li - 1]) if li > 0 else None
            ws[li] -= lr * np.outer(g, inputs[li])
            if bs[li] is not None:
                bs[li] -= lr * g
            g = g_in
    with torch.no_grad():
        for layer, w, b in zip(model.linear_layers(), ws, bs):
            layer.weight.copy_(torch.from_numpy(w))
            if b is not None:
                layer.bias.copy_(torch.from_numpy(b))
    return preds


def _train_online_autograd(model: nn.Module, x: np.ndarray, y: np.ndarray, lr: float) -> np.ndarray:
    """Generic one-sample SGD through autograd, for any module."""
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters")
    dtype, device = params[0].dtype, params[0].device
    xs = torch.as_tensor(x, dtype=dtype, device=device)
    ys = torch.as_tensor(y, dtype=dtype, device=device)
    preds = np.empty(y.shape, dtype=np.float64)
    for n in range(xs.shape[0]):
        y_hat = model(xs[n : n + 1])
        if y_hat.shape != (1, ys.shape[1]):
            raise ValueError(
                f"model output shape {tuple(y_hat.shape)} does not match targets (1, {ys.shape[1]})"
            )
        preds[n] = y_hat.detach().cpu().double().numpy()[0]
        loss = 0.5 * ((y_hat - ys[n : n + 1]) ** 2).sum()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        with torch.no_grad():
            for p, gr in zip(params, grads):
                if gr is not None:
                    p.sub_(lr * gr)
    return preds


def train_online(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    lr: float,
    *,
    method: Literal["auto", "manual", "autograd"] = "auto",
) -> np.ndarray:
    """Predict-then-update SGD (batch 1, loss 0.5*||y_hat - y||^2); returns predictions (n, out)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n, in), got {x.shape}")
    if y.ndim != 2:
        raise ValueError(f"y must have shape (n, out), got {y.shape}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y need the same number of samples, got {x.shape[0]} and {y.shape[0]}")
    if not isinstance(lr, (int, float, np.floating, np.integer)) or not math.isfinite(lr) or lr < 0:
        raise ValueError(f"lr must be a finite number >= 0, got {lr!r}")
    if method not in ("auto", "manual", "autograd"):
        raise ValueError(f"method must be 'auto', 'manual' or 'autograd', got {method!r}")
    in_features = getattr(model, "in_features", None)
    out_features = getattr(model, "out_features", None)
    if in_features is not None and x.shape[1] != in_features:
        raise ValueError(f"x has {x.shape[1]} features but the model expects {in_features}")
    if out_features is not None and y.shape[1] != out_features:
        raise ValueError(f"y has {y.shape[1]} outputs but the model produces {out_features}")

    manual_ok = isinstance(model, (KAN, MLP)) and all(
        p.requires_grad and p.device.type == "cpu" and p.dtype in (torch.float32, torch.float64)
        for p in model.parameters()
    )
    if method == "manual" and not manual_ok:
        raise ValueError(
            f"method='manual' needs a CPU float32/float64 KAN or MLP, got {type(model).__name__}"
        )
    if method == "autograd" or (method == "auto" and not manual_ok):
        return _train_online_autograd(model, x, y, float(lr))
    if isinstance(model, KAN):
        return _train_online_kan(model, x, y, float(lr))
    with np.errstate(over="ignore"):  # exp overflow in the sigmoid just gives 0 or 1
        return _train_online_mlp(cast(MLP, model), x, y, float(lr))
