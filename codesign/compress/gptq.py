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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from codesign.compress.formats import pack_codes
from codesign.compress.kmeans import KMeansConfig
from codesign.compress.qtensor import VQ_DIM, ScalarQuantizedWeight, VQWeight
from codesign.compress.registry import quantize, register_quantizer
from codesign.compress.validate import check_weight
from codesign.compress.vq import _encode

__all__ = ["ErrorFeedbackConfig", "quantize_error_feedback", "inverse_hessian_factor"]


@dataclass(frozen=True)
class ErrorFeedbackConfig:
    """GPTQ-style error feedback over the grid of `base` (IntConfig, AsymIntConfig, KMeansConfig or VQConfig).

    block_size: columns per lazy batch update (a multiple of 4). damping: λ as a fraction of the mean
    Hessian diagonal. act_order: quantize columns by decreasing Hessian diagonal (scalar grids only).
    """

    VERSION: ClassVar[int] = 1

    base: Any = field(default_factory=lambda: KMeansConfig(bits=4))
    block_size: int = 128
    damping: float = 0.01
    act_order: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.block_size, bool) or not isinstance(self.block_size, int) or self.block_size < 4 \
                or self.block_size % VQ_DIM:
            raise ValueError(f"block size must be a positive multiple of 4, got {self.block_size!r}")
        if not self.damping > 0:
            raise ValueError(f"damping must be > 0, got {self.damping!r}")


def inverse_hessian_factor(covariance: torch.Tensor, damping: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(upper Cholesky factor U of (H + λI)⁻¹ in float64, mask of dead inputs (zero variance))."""
    h = covariance.double().clone()
    dead = h.diagonal() <= 0
    h[dead, dead] = 1.0
    h.diagonal().add_(damping * h.diagonal().mean())
    inverse = torch.cholesky_inverse(torch.linalg.cholesky(h))
    return torch.linalg.cholesky(inverse, upper=True), dead


def _scalar_levels(grid: ScalarQuantizedWeight, column: int) -> torch.Tensor:
    """[N, L] float64: the values column `column` of each row can take on the grid."""
    g = column // grid.group_size
    book = grid.codebook.double()
    book = book[:, g, :] if grid.per_group_codebook else book[None, :]
    if grid.zeros is not None:
        book = book - grid.zeros[:, g, None].double()
    return book * grid.scales[:, g, None].double()


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
        self._group, self._levels = -1, torch.empty(0)

    def __call__(self, position: int, columns: torch.Tensor) -> torch.Tensor:
        column = self.order[position]
        if column // self.grid.group_size != self._group:  # the levels change only from group to group
            self._group, self._levels = column // self.grid.group_size, _scalar_levels(self.grid, column)
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
    cov = covariance.to(weight.device).double()
    order = torch.argsort(cov.diagonal(), descending=True) if config.act_order else torch.arange(k, device=weight.device)
    u, dead = inverse_hessian_factor(cov[order][:, order], config.damping)
    w = weight.double()[:, order].clone()
    w[:, dead] = 0.0
    columns = _VQColumns(grid) if vq else _ScalarColumns(grid, order)
    _feedback(w, u, config.block_size, columns)
    method = f"{grid.method}+gptq"
    if vq:
        return VQWeight(columns.codes, grid.scales, grid.basis, grid.offset, grid.group_size, grid.shape, method)
    return ScalarQuantizedWeight(pack_codes(columns.codes, grid.bits), grid.scales, grid.codebook, grid.bits,
                                 grid.group_size, grid.shape, method, zeros=grid.zeros)
