"""2-bit vector quantization in the LC-QAT style: a learned affine map over sign vectors.

Each vector v of 4 consecutive weights of a row is coded by 8 sign bits b in {-1, +1}^8 and
decoded as s * (A b + mu), with A [4, 8] and mu [4] learned per layer and s one fp16 scale per
(row, group). The 256 codewords are implicit, so the training forward W = s * (B A^T + mu)
is a dense, differentiable product with no codebook gather.

Post-training fit (exact block-coordinate descent on sum ||v - s (A b + mu)||^2, so the error
never increases): start from A that makes every pair of bits a 2-bit uniform level
(A[j, 2j] = 1, A[j, 2j+1] = 1/2, i.e. 2-bit integer quantization), then repeat
(1) codes: nearest of the 256 codewords for each vector, (2) A and mu: weighted least
squares from per-code sufficient statistics, (3) scales: least squares per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.compress.formats import check_group_size
from codesign.compress.qtensor import VQ_CODE_BITS, VQ_DIM, VQWeight, vq_sign_table
from codesign.compress.registry import register_quantizer
from codesign.compress.validate import check_weight

__all__ = ["VQConfig", "quantize_vq", "vq_training_weight", "initial_basis"]

_CHUNK = 1 << 14


@dataclass(frozen=True)
class VQConfig:
    """2-bit VQ: vectors of 4 weights, 8-bit codes.

    group_size: weights per fp16 scale along the input dimension; a multiple of 8 dividing K.
    iterations: rounds of (codes, affine map, scales) refits.
    """

    group_size: int = 64
    iterations: int = 10

    def __post_init__(self) -> None:
        if self.iterations < 0:
            raise ValueError(f"iterations must be >= 0, got {self.iterations}")


def initial_basis() -> tuple[torch.Tensor, torch.Tensor]:
    """A [4, 8] and mu [4] that decode each bit pair to a 2-bit uniform level in {±0.5, ±1.5}."""
    basis = torch.zeros(VQ_DIM, VQ_CODE_BITS)
    for j in range(VQ_DIM):
        basis[j, 2 * j] = 1.0
        basis[j, 2 * j + 1] = 0.5
    return basis, torch.zeros(VQ_DIM)


def vq_training_weight(
    signs: torch.Tensor, basis: torch.Tensor, offset: torch.Tensor, scales: torch.Tensor, group_size: int
) -> torch.Tensor:
    """W [N, K] = s * (signs @ A^T + mu): differentiable in A, mu and s; signs [N, K/4, 8] are fixed."""
    n, vectors, _ = signs.shape
    w = (signs @ basis.T + offset).reshape(n, vectors * VQ_DIM)
    return w * scales.repeat_interleave(group_size, dim=1)


def _encode(units: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
    """Nearest codeword index for each row of units [M, 4] (chunked distance matrix)."""
    norms = (codebook * codebook).sum(dim=1)
    out = torch.empty(units.shape[0], dtype=torch.long, device=units.device)
    for start in range(0, units.shape[0], _CHUNK):
        part = units[start : start + _CHUNK]
        out[start : start + _CHUNK] = torch.addmm(norms, part, codebook.T, alpha=-2).argmin(dim=1)
    return out


def _fit_affine(units: torch.Tensor, weights: torch.Tensor, codes: torch.Tensor, signs: torch.Tensor):
    """Weighted least squares for [A | mu] from the 256 per-code statistics."""
    n_codes = signs.shape[0]
    w_per_code = torch.zeros(n_codes, dtype=torch.float64, device=units.device).index_add_(0, codes, weights.double())
    wu_per_code = torch.zeros(n_codes, VQ_DIM, dtype=torch.float64, device=units.device).index_add_(
        0, codes, (weights[:, None] * units).double()
    )
    design = torch.cat([signs.double(), torch.ones(n_codes, 1, dtype=torch.float64, device=units.device)], dim=1)
    gram = design.T @ (w_per_code[:, None] * design)
    rhs = design.T @ wu_per_code
    # a tiny ridge keeps the solve defined when some bit never varies
    ridge = 1e-9 * gram.diagonal().mean().clamp(min=1e-30)
    theta = torch.linalg.solve(gram + ridge * torch.eye(gram.shape[0], dtype=gram.dtype, device=gram.device), rhs)
    return theta[:-1].T.float().contiguous(), theta[-1].float().contiguous()


@register_quantizer("vq", VQConfig)
def quantize_vq(weight: torch.Tensor, config: VQConfig = VQConfig()) -> VQWeight:
    """Quantize W[N, K] to 2-bit VQ codes with a learned per-layer affine codebook."""
    check_weight(weight)
    n, k = weight.shape
    check_group_size(config.group_size, k)
    groups = k // config.group_size
    per_group = config.group_size // VQ_DIM
    vectors = weight.float().reshape(n * groups, per_group, VQ_DIM)
    signs = vq_sign_table(weight.device)
    basis, offset = (t.to(weight.device) for t in initial_basis())
    amax = vectors.abs().amax(dim=(1, 2))
    scale = (torch.where(amax > 0, amax, torch.ones_like(amax)) / 1.5).to(torch.float16).float()

    def codes_for(scale_now: torch.Tensor, book: torch.Tensor) -> torch.Tensor:
        units = (vectors / scale_now[:, None, None]).reshape(-1, VQ_DIM)
        return _encode(units, book).view(n * groups, per_group)

    for _ in range(config.iterations):
        codes = codes_for(scale, signs @ basis.T + offset)
        units = (vectors / scale[:, None, None]).reshape(-1, VQ_DIM)
        weights = (scale * scale)[:, None].expand(-1, per_group).reshape(-1)
        basis, offset = _fit_affine(units, weights, codes.reshape(-1), signs)
        decoded = (signs @ basis.T + offset)[codes]
        num = (decoded * vectors).sum(dim=(1, 2))
        den = (decoded * decoded).sum(dim=(1, 2))
        fitted = (num / den.clamp(min=1e-30)).to(torch.float16).float()
        scale = torch.where((num > 0) & (fitted > 0), fitted, scale)
    codes = codes_for(scale, signs @ basis.T + offset)
    return VQWeight(
        codes=codes.view(n, k // VQ_DIM).to(torch.uint8).contiguous(),
        scales=scale.view(n, groups).to(torch.float16).contiguous(),
        basis=basis.contiguous(),
        offset=offset.contiguous(),
        group_size=config.group_size,
        shape=(n, k),
    )
