"""Error feedback (GPTQ-style) on any of our grids: integer (symmetric or with zero points), k-means LUT, VQ.

The grid — scales, codebook, zero points, VQ map — comes from the base quantizer run on W; error
feedback then chooses the codes. Columns are taken in order (largest Hessian diagonal first with
act_order); each column's codes are the nearest grid values of the current, already corrected
weights, and the column's error, divided by its pivot of the Cholesky factor U of H⁻¹
(H = E[x xᵀ] + λI), is spread over the columns not yet quantized: W[:, j:] -= e · U[i, j:] (OBS).
Updates inside a block of `block_size` columns are applied at once per column; the rest of the
matrix is updated once per block (GPTQ's lazy batch update). A VQ grid quantizes 4 columns together
and feeds each of their errors back in turn. Groups keep the base quantizer's scales (static groups),
so the stored format and the kernels are the base's.

Options of a scalar grid (all off by default, so the plain GPTQ path is unchanged):
scale_search, before the feedback, multiplies each group's scale by the factor from a small grid that
minimises the group's error weighted by the Hessian diagonal, sum_k H[k, k] (w_k - q_k)^2 with q the
nearest level (GPTQ's `mse` grid search and AWQ-style clipping; an integer grid keeps its zero point,
which a min-max range shrunk about zero leaves unchanged). refit_scales, after the feedback, keeps the
codes and solves each row's group scales by least squares under the damped H, minimising
(w - ŵ) H (w - ŵ)^T, the objective the feedback itself minimises; a row keeps its old scales wherever
the refit (rounded to fp16) is not lower. weighted_codebook (k-means grids) refits the codebook's
levels before the feedback by Lloyd iterations weighted by H[k, k] · scale^2 (a sensitivity-weighted
k-means, as SqueezeLLM weights by the Fisher diagonal), started from the base's levels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from codesign.compress.formats import pack_codes
from codesign.compress.kmeans import KMeansConfig, lloyd_max, nearest_level
from codesign.compress.qtensor import VQ_DIM, ScalarQuantizedWeight, VQWeight
from codesign.compress.registry import quantize, register_quantizer
from codesign.compress.validate import check_weight
from codesign.compress.vq import _encode

__all__ = ["ErrorFeedbackConfig", "SCALE_SEARCH_FACTORS", "quantize_error_feedback", "inverse_hessian_factor",
           "search_scales", "refit_scales", "weighted_error", "weighted_codebook"]

# factors of each group's scale tried by scale_search (1.0 included, so the search never loses)
SCALE_SEARCH_FACTORS: tuple[float, ...] = tuple(round(1.1 - 0.025 * i, 3) for i in range(21))  # 1.1 .. 0.6


@dataclass(frozen=True)
class ErrorFeedbackConfig:
    """GPTQ-style error feedback over the grid of `base` (IntConfig, AsymIntConfig, KMeansConfig or VQConfig).

    block_size: columns per lazy batch update (a multiple of 4). damping: λ as a fraction of the mean
    Hessian diagonal. act_order: quantize columns by decreasing Hessian diagonal (scalar grids only).
    scale_search: factors of each group's scale tried before the feedback, the one with the least
    Hessian-diagonal-weighted group error kept (empty: the base's scales; SCALE_SEARCH_FACTORS is the
    usual grid; scalar grids only). refit_scales: after the feedback, least-squares group scales for
    the fixed codes under the damped Hessian, kept per row where they lower the error (scalar grids only).
    refit_rounds: with refit_scales, rounds of feedback + refit, each after the first on the scales the
    last one refitted; every row keeps the codes and scales of its round of least error.
    weighted_codebook: k-means grids only: before the feedback, refit the levels by Lloyd weighted by
    H[k, k] · scale^2 (the Hessian-diagonal-weighted weight error), from the base's levels.
    """

    VERSION: ClassVar[int] = 1

    base: Any = field(default_factory=lambda: KMeansConfig(bits=4))
    block_size: int = 128
    damping: float = 0.01
    act_order: bool = False
    scale_search: tuple[float, ...] = ()
    refit_scales: bool = False
    refit_rounds: int = 1
    weighted_codebook: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 4 \
                or self.block_size % VQ_DIM:
            raise ValueError(f"block size must be a positive multiple of 4, got {self.block_size!r}")
        if not self.damping > 0:
            raise ValueError(f"damping must be > 0, got {self.damping!r}")
        if isinstance(self.refit_rounds, bool) or not isinstance(self.refit_rounds, int) or self.refit_rounds < 1:
            raise ValueError(f"refit_rounds must be a positive integer, got {self.refit_rounds!r}")
        object.__setattr__(self, "scale_search", tuple(self.scale_search))  # a JSON list reads back as a tuple
        if any(isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0 for f in self.scale_search):
            raise ValueError(f"scale_search factors must be positive numbers, got {self.scale_search!r}")


def inverse_hessian_factor(covariance: torch.Tensor, damping: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(upper Cholesky factor U of (H + λI)⁻¹ in float64, mask of dead inputs (zero variance))."""
    h = covariance.double().clone()
    dead = h.diagonal() <= 0
    h[dead, dead] = 1.0
    h.diagonal().add_(damping * h.diagonal().mean())
    inverse = torch.cholesky_inverse(torch.linalg.cholesky(h))
    return torch.linalg.cholesky(inverse, upper=True), dead


def _unit_levels(grid: ScalarQuantizedWeight) -> torch.Tensor:
    """[N, G, L] float64: each group's levels before its scale (codebook less the zero point), sorted."""
    n, k = grid.shape
    book = grid.codebook.double()
    book = book if grid.per_group_codebook else book.expand(n, k // grid.group_size, -1)
    if grid.zeros is not None:
        book = book - grid.zeros.double()[..., None]
    return book


def weighted_error(weight: torch.Tensor, grid: ScalarQuantizedWeight, importance: torch.Tensor) -> torch.Tensor:
    """[N, G] error sum_k importance[k] (w - q)^2 of each group, q the nearest level of the grid's scales."""
    n, k = grid.shape
    groups = k // grid.group_size
    levels = _unit_levels(grid) * grid.scales.double()[..., None]
    grouped = weight.double().reshape(n * groups, grid.group_size)
    flat = levels.reshape(n * groups, -1)
    nearest = flat.gather(1, nearest_level(grouped, flat))
    diff2 = ((grouped - nearest) ** 2).view(n, groups, grid.group_size)
    return (diff2 * importance.double().view(1, groups, grid.group_size)).sum(dim=2)


def search_scales(weight: torch.Tensor, grid: ScalarQuantizedWeight, importance: torch.Tensor,
                  factors: tuple[float, ...]) -> ScalarQuantizedWeight:
    """The grid with each group's scale times the factor (or 1) of least importance-weighted error (fp16 scored)."""
    best_scales = grid.scales
    best = weighted_error(weight, grid, importance)
    for factor in factors:
        scales = (grid.scales.float() * factor).to(torch.float16)
        trial = dataclasses.replace(grid, scales=scales)
        err = weighted_error(weight, trial, importance)
        better = err < best
        best = torch.where(better, err, best)
        best_scales = torch.where(better, scales, best_scales)
    return dataclasses.replace(grid, scales=best_scales.contiguous())


def weighted_codebook(weight: torch.Tensor, grid: ScalarQuantizedWeight, importance: torch.Tensor,
                      iterations: int = 25) -> ScalarQuantizedWeight:
    """The k-means grid with its levels refit by Lloyd weighted by importance[k] · scale^2, from its own levels."""
    n, k = grid.shape
    size, levels = grid.group_size, 1 << grid.bits
    scales = grid.scales.float().repeat_interleave(size, dim=1)
    units = weight.float() / scales
    if grid.zeros is not None:  # levels live in code units: w / scale + zero point
        units = units + grid.zeros.float().repeat_interleave(size, dim=1)
    mass = importance.float().clamp(min=0)[None, :] * scales * scales
    rows = n * (k // size) if grid.per_group_codebook else 1
    book = lloyd_max(units.reshape(rows, -1), levels, iterations, init=grid.codebook.float().reshape(rows, levels),
                     weights=mass.reshape(rows, -1)).to(torch.float16)
    return dataclasses.replace(grid, codebook=book.view(grid.codebook.shape).contiguous())


def _row_errors(weight: torch.Tensor, units: torch.Tensor, scales: torch.Tensor, hessian: torch.Tensor) -> torch.Tensor:
    """[N] (w - ŵ) H (w - ŵ)^T of each row, ŵ = units [N, G, size] times scales [N, G]."""
    diff = weight.double() - (units * scales.double()[..., None]).reshape(weight.shape)
    return ((diff @ hessian) * diff).sum(dim=1)


def _code_units(grid: ScalarQuantizedWeight, codes: torch.Tensor) -> torch.Tensor:
    """[N, G, size] float64: each weight's level before its group scale, for codes [N, K]."""
    n, k = grid.shape
    return _unit_levels(grid).gather(2, codes.long().view(n, k // grid.group_size, grid.group_size))


def refit_scales(weight: torch.Tensor, codes: torch.Tensor, grid: ScalarQuantizedWeight,
                 hessian: torch.Tensor) -> torch.Tensor:
    """[N, G] fp16 group scales minimising each row's (w - ŵ) H (w - ŵ)^T for fixed codes [N, K] (per row: only if lower)."""
    n, k = grid.shape
    size = grid.group_size
    groups = k // size
    h = hessian.double()
    units = _code_units(grid, codes)  # ŵ = scale * unit
    w = weight.double()
    # normal equations per row: A[g, h] = u_g H_gh u_h^T, b[g] = u_g (H w^T)_g
    rhs = ((w @ h).view(n, groups, size) * units).sum(dim=2)
    gram = torch.empty(n, groups, groups, dtype=torch.float64, device=weight.device)
    for g in range(groups):
        part = units[:, g, :] @ h[g * size:(g + 1) * size, :]  # [N, K]
        gram[:, g, :] = (part.view(n, groups, size) * units).sum(dim=2)
    ridge = 1e-12 * gram.diagonal(dim1=1, dim2=2).mean(dim=1).clamp(min=1e-30)
    gram = gram + ridge[:, None, None] * torch.eye(groups, dtype=torch.float64, device=weight.device)
    solved = torch.linalg.solve(gram, rhs[..., None])[..., 0].to(torch.float16)
    old = grid.scales
    before, after = _row_errors(w, units, old, h), _row_errors(w, units, solved, h)
    usable = torch.isfinite(solved).all(dim=1) & (solved > 0).all(dim=1) & (after < before)
    return torch.where(usable[:, None], solved, old).contiguous()


def _feedback(w: torch.Tensor, u: torch.Tensor, block: int, quantize_columns) -> torch.Tensor:
    """Run error feedback over the columns of w (already permuted); quantize_columns(i, cols) -> quantized [N, c]."""
    k = w.shape[1]
    step = quantize_columns.width
    for start in range(0, k, block):
        stop = min(start + block, k)
        w1 = w[:, start:stop].clone()
        u1 = u[start:stop, start:stop]
        errors = torch.zeros_like(w1)
        for i in range(0, stop - start, step):
            q = quantize_columns(start + i, w1[:, i:i + step])
            for t in range(step):
                err = (w1[:, i + t] - q[:, t]) / u1[i + t, i + t]
                w1[:, i + t:] -= err[:, None] * u1[i + t, i + t:][None, :]
                errors[:, i + t] = err
        w[:, stop:] -= errors @ u[start:stop, stop:]
    return w


class _ScalarColumns:
    """Nearest grid codes for one column at a time (records the codes in original column order)."""

    width = 1

    def __init__(self, grid: ScalarQuantizedWeight, order: torch.Tensor) -> None:
        self.grid, self.order = grid, order.tolist()
        self.codes = torch.zeros(grid.shape, dtype=torch.uint8, device=grid.scales.device)
        self._units, self._scales = _unit_levels(grid), grid.scales.double()
        self._group, self._levels = -1, torch.empty(0)

    def __call__(self, position: int, columns: torch.Tensor) -> torch.Tensor:
        column = self.order[position]
        g = column // self.grid.group_size
        if g != self._group:  # the levels change only from group to group
            self._group, self._levels = g, self._units[:, g, :] * self._scales[:, g, None]
        levels = self._levels
        code = (columns[:, :1] - levels).abs().argmin(dim=1)
        self.codes[:, column] = code.to(torch.uint8)
        return levels.gather(1, code[:, None])


class _VQColumns:
    """Nearest of the 256 codewords for 4 columns at a time."""

    width = VQ_DIM

    def __init__(self, grid: VQWeight) -> None:
        self.grid = grid
        self.book = grid.codebook().double()
        self.codes = torch.zeros(grid.codes.shape, dtype=torch.uint8, device=grid.codes.device)

    def __call__(self, position: int, columns: torch.Tensor) -> torch.Tensor:
        scale = self.grid.scales[:, position // self.grid.group_size].double()[:, None]
        safe = torch.where(scale > 0, scale, torch.ones_like(scale))
        code = _encode((columns / safe).float(), self.book.float())
        self.codes[:, position // VQ_DIM] = code.to(torch.uint8)
        return self.book[code] * scale


@register_quantizer("gptq", ErrorFeedbackConfig, covariance=True)
def quantize_error_feedback(weight: torch.Tensor, config: ErrorFeedbackConfig,
                            covariance: torch.Tensor | None) -> ScalarQuantizedWeight | VQWeight:
    """Quantize W[N, K] on the base config's grid with codes chosen by error feedback under E[x xᵀ] [K, K]."""
    check_weight(weight)
    n, k = weight.shape
    if covariance is None:
        raise ValueError("error feedback (gptq) needs calibration activations (a covariance)")
    if tuple(covariance.shape) != (k, k):
        raise ValueError(f"covariance must be [{k}, {k}] for K={k}, got {tuple(covariance.shape)}")
    grid = quantize(weight, config.base)
    if not isinstance(grid, (ScalarQuantizedWeight, VQWeight)):
        raise ValueError(f"error feedback needs a grid quantizer as base, got {type(config.base).__name__}")
    vq = isinstance(grid, VQWeight)
    if vq and config.act_order:
        raise ValueError("act_order applies to scalar grids (a VQ vector's 4 columns stay together)")
    if vq and (config.scale_search or config.refit_scales):
        raise ValueError("scale_search and refit_scales apply to scalar grids, not VQ")
    cov = covariance.to(weight.device).double()
    if config.weighted_codebook:
        if not isinstance(config.base, KMeansConfig):
            raise ValueError(f"weighted_codebook applies to k-means grids, not {type(config.base).__name__}")
        grid = weighted_codebook(weight, grid, cov.diagonal())
    if config.scale_search:
        grid = search_scales(weight, grid, cov.diagonal().clamp(min=0), config.scale_search)
    order = torch.argsort(cov.diagonal(), descending=True) if config.act_order else torch.arange(k, device=weight.device)
    u, dead = inverse_hessian_factor(cov[order][:, order], config.damping)
    w = weight.double()[:, order].clone()
    w[:, dead] = 0.0
    columns = _VQColumns(grid) if vq else _ScalarColumns(grid, order)
    _feedback(w.clone(), u, config.block_size, columns)
    method = f"{grid.method}+gptq"
    if vq:
        return VQWeight(columns.codes, grid.scales, grid.basis, grid.offset, grid.group_size, grid.shape, method)
    codes, scales = columns.codes, grid.scales
    if config.refit_scales:
        damped = cov.clone()
        damped.diagonal().add_(config.damping * damped.diagonal().mean())
        scales = refit_scales(weight, codes, grid, damped)
        best = _row_errors(weight, _code_units(grid, codes), scales, damped)
        for _ in range(config.refit_rounds - 1):  # feedback again on the refitted scales; each row keeps its best round
            grid = dataclasses.replace(grid, scales=scales)
            columns = _ScalarColumns(grid, order)
            _feedback(w.clone(), u, config.block_size, columns)
            trial = refit_scales(weight, columns.codes, grid, damped)
            err = _row_errors(weight, _code_units(grid, columns.codes), trial, damped)
            better = err < best
            best = torch.where(better, err, best)
            codes = torch.where(better[:, None], columns.codes, codes)
            scales = torch.where(better[:, None], trial, scales).contiguous()
    return ScalarQuantizedWeight(pack_codes(codes, grid.bits), scales, grid.codebook, grid.bits,
                                 grid.group_size, grid.shape, method, zeros=grid.zeros)
