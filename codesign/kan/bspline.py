"""Uniform-grid B-spline bases for KAN edges (torch and numpy float64 forms).

Conventions (shared with the fixed-point learners):

* ``G`` cells of width ``h = (hi - lo) / G`` cover ``[lo, hi]``; spline order
  ``k`` is the polynomial degree (``k = 1`` linear, ``k = 3`` cubic).
* Each edge has ``G + k`` basis functions ``B_m``, ``m = 0 .. G+k-1``, on the
  extended knot vector ``t_m = lo + (m - k) h``, ``m = 0 .. G+2k``; ``B_m`` is
  supported on ``[t_m, t_{m+k+1}]``.
* For ``x`` in cell ``c = floor((x - lo) / h)`` with local coordinate
  ``t = (x - lo) / h - c`` in ``[0, 1)`` the nonzero bases are ``m = c .. c+k``
  and ``B_{c+j}(x) = b_j(t) = N_k(t + k - j)`` with ``N_k`` the cardinal
  B-spline of order ``k`` on ``[0, k+1]``.
* Inputs are clamped to ``[lo, hi]``; ``x = hi`` is cell ``G-1`` with ``t = 1``,
  which gives the limit from the left.
* ``d B_{c+j} / dx = (1 / h) * d b_j / dt``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported by the functions that use it: the fixed-point build path never loads it
    from torch import Tensor

__all__ = [
    "validate_grid",
    "knot_vector",
    "cardinal_coefficients",
    "cardinal_derivative_coefficients",
    "cardinal_basis",
    "cardinal_basis_derivative",
    "cardinal_basis_np",
    "cardinal_basis_derivative_np",
    "locate_np",
    "bspline_basis",
    "bspline_basis_np",
    "cox_de_boor",
]


def _is_int(value: object) -> bool:
    """Return True for a genuine integer (bool excluded)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_order(order: int) -> None:
    """Raise ValueError unless ``order`` is an integer >= 1."""
    if not _is_int(order) or order < 1:
        raise ValueError(f"spline order must be an integer >= 1, got {order!r}")


def validate_grid(grid_size: int, order: int, lo: float, hi: float) -> None:
    """Raise ValueError if the grid size, spline order or range is invalid."""
    if not _is_int(grid_size) or grid_size < 1:
        raise ValueError(f"grid_size must be an integer >= 1, got {grid_size!r}")
    _check_order(order)
    try:
        lo_f, hi_f = float(lo), float(hi)
    except (TypeError, ValueError):
        raise ValueError(f"grid range must be two numbers, got ({lo!r}, {hi!r})") from None
    if not (math.isfinite(lo_f) and math.isfinite(hi_f)):
        raise ValueError(f"grid range must be finite, got ({lo!r}, {hi!r})")
    if lo_f >= hi_f:
        raise ValueError(f"grid range needs lo < hi, got lo={lo!r}, hi={hi!r}")


def knot_vector(grid_size: int, order: int, lo: float, hi: float) -> np.ndarray:
    """Extended uniform knot vector ``t_m = lo + (m - k) h``, ``m = 0 .. G+2k``."""
    validate_grid(grid_size, order, lo, hi)
    h = (float(hi) - float(lo)) / grid_size
    m = np.arange(grid_size + 2 * order + 1, dtype=np.float64)
    return float(lo) + (m - order) * h


@cache
def _cardinal_fractions(order: int) -> tuple[tuple[Fraction, ...], ...]:
    """Exact power coefficients of the local pieces ``b_j(t)``, row j, column p."""
    k = order
    rows = []
    for j in range(k + 1):
        piece = k - j  # b_j(t) = N_k(piece + t)
        coeffs = [Fraction(0)] * (k + 1)
        # N_k(x) = 1/k! sum_l (-1)^l C(k+1, l) (x - l)_+^k; on [piece, piece+1]
        # only l <= piece contribute, with x - l = t + (piece - l).
        for lshift in range(piece + 1):
            w = Fraction((-1) ** lshift * math.comb(k + 1, lshift), math.factorial(k))
            d = piece - lshift
            for p in range(k + 1):
                coeffs[p] += w * math.comb(k, p) * Fraction(d) ** (k - p)
        rows.append(tuple(coeffs))
    return tuple(rows)


def cardinal_coefficients(order: int) -> np.ndarray:
    """Matrix ``M`` (k+1, k+1) with ``b_j(t) = sum_p M[j, p] t**p`` (float64)."""
    _check_order(order)
    return np.array(
        [[float(c) for c in row] for row in _cardinal_fractions(order)], dtype=np.float64
    )


def cardinal_derivative_coefficients(order: int) -> np.ndarray:
    """Matrix ``D`` (k+1, k) with ``d b_j/dt = sum_p D[j, p] t**p`` (float64)."""
    m = cardinal_coefficients(order)
    powers = np.arange(1, order + 1, dtype=np.float64)
    return m[:, 1:] * powers


def _horner_np(t: np.ndarray, coeffs: np.ndarray) -> np.ndarray:
    """Evaluate the polynomials given by rows of ``coeffs`` at ``t``: (..., rows)."""
    t = t[..., None]
    out = np.broadcast_to(coeffs[:, -1], t.shape[:-1] + (coeffs.shape[0],)).copy()
    for p in range(coeffs.shape[1] - 2, -1, -1):
        out = out * t + coeffs[:, p]
    return out


def _horner_torch(t: Tensor, coeffs: np.ndarray) -> Tensor:
    """Torch version of :func:`_horner_np` (differentiable in ``t``)."""
    import torch  # noqa: PLC0415

    c = torch.as_tensor(coeffs, dtype=t.dtype, device=t.device)
    tt = t.unsqueeze(-1)
    out = c[:, -1].expand(*t.shape, c.shape[0])
    for p in range(c.shape[1] - 2, -1, -1):
        out = out * tt + c[:, p]
    return out


def _as_float_tensor(x: Tensor) -> Tensor:
    """Return ``x`` as a floating tensor (integers go to the default dtype)."""
    import torch  # noqa: PLC0415

    x = torch.as_tensor(x)
    if not torch.is_floating_point(x):
        x = x.to(torch.get_default_dtype())
    return x


def cardinal_basis(t: Tensor, order: int) -> Tensor:
    """Local basis values ``b_j(t)``, j = 0..k, shape (..., k+1), for t in [0, 1]."""
    _check_order(order)
    return _horner_torch(_as_float_tensor(t), cardinal_coefficients(order))


def cardinal_basis_derivative(t: Tensor, order: int) -> Tensor:
    """Local derivatives ``d b_j / dt``, j = 0..k, shape (..., k+1)."""
    _check_order(order)
    t = _as_float_tensor(t)
    return _horner_torch(t, cardinal_derivative_coefficients(order))


def cardinal_basis_np(t: np.ndarray, order: int) -> np.ndarray:
    """Float64 numpy version of :func:`cardinal_basis`, shape (..., k+1)."""
    _check_order(order)
    return _horner_np(np.asarray(t, dtype=np.float64), cardinal_coefficients(order))


def cardinal_basis_derivative_np(t: np.ndarray, order: int) -> np.ndarray:
    """Float64 numpy version of :func:`cardinal_basis_derivative`, shape (..., k+1)."""
    _check_order(order)
    t = np.asarray(t, dtype=np.float64)
    return _horner_np(t, cardinal_derivative_coefficients(order))


def locate_np(
    x: np.ndarray, grid_size: int, lo: float, hi: float
) -> tuple[np.ndarray, np.ndarray]:
    """Clamp ``x`` to [lo, hi] and return (cell index int64, local coordinate t)."""
    lo_f, hi_f = float(lo), float(hi)
    h = (hi_f - lo_f) / grid_size
    s = (np.clip(np.asarray(x, dtype=np.float64), lo_f, hi_f) - lo_f) / h
    cell = np.clip(np.floor(s), 0, grid_size - 1)
    return cell.astype(np.int64), s - cell


def bspline_basis(x: Tensor, grid_size: int, order: int, lo: float, hi: float) -> Tensor:
    """All ``G + k`` uniform B-spline basis values of clamped ``x``, shape (..., G+k)."""
    import torch  # noqa: PLC0415

    validate_grid(grid_size, order, lo, hi)
    x = _as_float_tensor(x)
    lo_f, hi_f = float(lo), float(hi)
    h = (hi_f - lo_f) / grid_size
    s = (torch.clamp(x, lo_f, hi_f) - lo_f) / h
    cell = torch.clamp(torch.floor(s.detach()), 0, grid_size - 1)
    vals = cardinal_basis(s - cell, order)
    idx = cell.to(torch.long).unsqueeze(-1) + torch.arange(order + 1, device=x.device)
    out = x.new_zeros(*x.shape, grid_size + order)
    return out.scatter(-1, idx, vals)


def bspline_basis_np(
    x: np.ndarray, grid_size: int, order: int, lo: float, hi: float
) -> np.ndarray:
    """Float64 numpy version of :func:`bspline_basis`, shape (..., G+k)."""
    validate_grid(grid_size, order, lo, hi)
    cell, t = locate_np(x, grid_size, lo, hi)
    vals = cardinal_basis_np(t, order)
    out = np.zeros(cell.shape + (grid_size + order,), dtype=np.float64)
    idx = cell[..., None] + np.arange(order + 1)
    np.put_along_axis(out, idx, vals, axis=-1)
    return out


def cox_de_boor(x: np.ndarray, knots: np.ndarray, order: int) -> np.ndarray:
    """Textbook recursive Cox-de Boor basis of degree ``order``, shape (..., n_knots-order-1)."""
    if not _is_int(order) or order < 0:
        raise ValueError(f"order must be an integer >= 0, got {order!r}")
    x = np.asarray(x, dtype=np.float64)
    knots = np.asarray(knots, dtype=np.float64)
    if knots.ndim != 1 or knots.size < order + 2:
        raise ValueError(f"need a 1-D knot vector of at least {order + 2} knots, got shape {knots.shape}")
    if np.any(np.diff(knots) < 0):
        raise ValueError("knot vector must be non-decreasing")

    def basis(i: int, p: int) -> np.ndarray:
        result: np.ndarray
        if p == 0:
            result = ((knots[i] <= x) & (x < knots[i + 1])).astype(np.float64)
            return result
        result = np.zeros_like(x)
        den_left = knots[i + p] - knots[i]
        if den_left > 0:
            result = result + (x - knots[i]) / den_left * basis(i, p - 1)
        den_right = knots[i + p + 1] - knots[i + 1]
        if den_right > 0:
            result = result + (knots[i + p + 1] - x) / den_right * basis(i + 1, p - 1)
        return result

    n_basis = knots.size - order - 1
    return np.stack([basis(i, order) for i in range(n_basis)], axis=-1)
