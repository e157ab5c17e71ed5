"""Quantization-error reconstruction W ≈ Q + L R: plain SVD, activation-scaled SVD, and SRR.

- plain (ZeroQuant-V2's LoRC): L R = best rank-r approximation of E = W - Q.
- scaled (LQER / QERA): L R minimizes ||(E - L R) S||_F, S = Σ^{1/2} from the calibration
  second moment Σ = E[x x^T] ("full", QERA's exact solution) or S = diag(rms x) ("diag", LQER).
  ||(W - Ŵ) S||_F^2 = E||x (W - Ŵ)^T||^2 is the layer's output error.
- srr (Structured Residual Reconstruction): keep the top-k singular subspace of W S exactly,
  quantize only the residual, and spend the remaining rank r - k on its quantization error.
  k comes from `choose_preserved_rank` (docs/compress.md derives it), and a guard keeps k = 0
  (the scaled method) when that measures better.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from codesign.compress.kmeans import KMeansConfig
from codesign.compress.qtensor import LowRankQuantizedWeight
from codesign.compress.registry import needs_covariance, quantize, register_quantizer
from codesign.compress.validate import check_weight

__all__ = ["QERConfig", "QER_METHODS", "activation_scaling", "choose_preserved_rank", "quantize_qer"]

QER_METHODS = ("plain", "scaled", "srr")


@dataclass(frozen=True)
class QERConfig:
    """Q + L R reconstruction.

    method: "plain", "scaled" or "srr" (see the module docstring).
    rank: r, columns of L (rows of R); 0 <= r <= min(N, K).
    base: the config of Q's quantizer (any registered one-shot quantizer: KMeansConfig, IntConfig, VQConfig, ...).
    scaling: "full" (S = Σ^{1/2}) or "diag" (S = diag(sqrt Σ_kk)); scaled and srr only.
    preserved_rank: SRR's k; None picks it per layer with the criterion plus the k = 0 guard.
    damping: ridge added to Σ, as a fraction of its mean diagonal, before taking roots.
    """

    method: str = "srr"
    rank: int = 32
    base: Any = field(default_factory=lambda: KMeansConfig(bits=3))
    scaling: str = "full"
    preserved_rank: int | None = None
    damping: float = 0.01

    def __post_init__(self) -> None:
        if self.method not in QER_METHODS:
            raise ValueError(f"unknown QER method {self.method!r}: choose one of {', '.join(QER_METHODS)}")
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 0:
            raise ValueError(f"rank must be a non-negative integer, got {self.rank!r}")
        if self.scaling not in ("full", "diag"):
            raise ValueError(f"scaling must be 'full' or 'diag', got {self.scaling!r}")
        if self.preserved_rank is not None and not 0 <= self.preserved_rank <= self.rank:
            raise ValueError(f"preserved_rank {self.preserved_rank} must lie in 0..rank={self.rank}")
        if self.damping < 0:
            raise ValueError(f"damping must be >= 0, got {self.damping}")


def activation_scaling(
    covariance: torch.Tensor, mode: str = "full", damping: float = 0.01
) -> tuple[torch.Tensor, torch.Tensor]:
    """S and S^{-1} [K, K] (float64) with S S^T = Σ + damping·mean(diag Σ)·I ('full') or its diagonal ('diag')."""
    cov = covariance.double()
    k = cov.shape[0]
    cov = cov + damping * cov.diagonal().mean().clamp(min=1e-30) * torch.eye(k, dtype=cov.dtype, device=cov.device)
    if mode == "diag":
        root = cov.diagonal().clamp(min=1e-30).sqrt()
        return torch.diag(root), torch.diag(1 / root)
    evals, evecs = torch.linalg.eigh(cov)
    evals = evals.clamp(min=evals.max() * 1e-12)
    return (evecs * evals.sqrt()) @ evecs.T, (evecs / evals.sqrt()) @ evecs.T


def choose_preserved_rank(weight_spectrum: torch.Tensor, error_spectrum: torch.Tensor, rank: int) -> int:
    """SRR's k in 0..rank minimizing tail_W(k) · (1 - captured_E(rank - k)).

    tail_W(k): energy of the scaled weight outside its top-k subspace — what quantization sees
    (the quantization error scales with it). captured_E(m): fraction of the scaled quantization
    error's energy in its top-m singular directions — what the remaining rank can win back,
    taken from the error of quantizing W itself (k = 0).
    """
    energy_w = weight_spectrum.double() ** 2
    energy_e = error_spectrum.double() ** 2
    total_w = energy_w.sum()
    tail = total_w - torch.cat([energy_w.new_zeros(1), energy_w.cumsum(0)])[: rank + 1]
    captured = torch.cat([energy_e.new_zeros(1), energy_e.cumsum(0)])[: rank + 1] / energy_e.sum().clamp(min=1e-300)
    if tail.shape[0] < rank + 1 or captured.shape[0] < rank + 1:
        raise ValueError(f"rank {rank} exceeds the spectrum length")
    score = tail * (1 - captured.flip(0))  # captured.flip(0)[k] = captured(rank - k)
    return int(score.argmin())


def _top_factors(matrix: torch.Tensor, s_inv: torch.Tensor | None, rank: int):
    u, sig, vh = torch.linalg.svd(matrix, full_matrices=False)
    left = u[:, :rank] * sig[:rank]
    right = vh[:rank] if s_inv is None else vh[:rank] @ s_inv
    return left, right, sig


def _scaled_norm(diff: torch.Tensor, s: torch.Tensor | None) -> float:
    return float((diff if s is None else diff @ s).norm())


def _srr(w: torch.Tensor, config: QERConfig, s: torch.Tensor, s_inv: torch.Tensor, k: int,
         covariance: torch.Tensor | None):
    """Preserve rank k of W S, quantize the rest, reconstruct its error with rank r - k."""
    keep_l, keep_r, _ = _top_factors(w @ s, s_inv, k)
    residual = w - keep_l @ keep_r
    base = quantize(residual.float().contiguous(), config.base, covariance)
    err_l, err_r, _ = _top_factors((residual - base.dequantize().double()) @ s, s_inv, config.rank - k)
    return base, torch.cat([keep_l, err_l], dim=1), torch.cat([keep_r, err_r], dim=0)


def _pack(base, left, right, k: int, method: str) -> LowRankQuantizedWeight:
    return LowRankQuantizedWeight(
        base=base,
        left=left.to(torch.float16).contiguous(),
        right=right.to(torch.float16).contiguous(),
        preserved_rank=k,
        method=method,
    )


@register_quantizer("qer", QERConfig, covariance=lambda config: config.method != "plain" or needs_covariance(config.base),
                    takes_covariance=True)
def quantize_qer(
    weight: torch.Tensor, config: QERConfig = QERConfig(), covariance: torch.Tensor | None = None
) -> LowRankQuantizedWeight:
    """Quantize W[N, K] as Q + L R; scaled and srr need the activations' second moment [K, K]."""
    check_weight(weight)
    n, k_in = weight.shape
    if config.rank > min(n, k_in):
        raise ValueError(f"rank {config.rank} is larger than the layer allows (min(N, K) = {min(n, k_in)})")
    w = weight.double()
    s: torch.Tensor | None = None
    s_inv: torch.Tensor | None = None
    if config.method != "plain":
        if covariance is None:
            raise ValueError(f"QER method {config.method!r} needs calibration activations (a covariance)")
        if tuple(covariance.shape) != (k_in, k_in):
            raise ValueError(f"covariance must be [{k_in}, {k_in}] for K={k_in}, got {tuple(covariance.shape)}")
        s, s_inv = activation_scaling(covariance.to(weight.device), config.scaling, config.damping)

    base = quantize(weight, config.base, covariance)
    error = w - base.dequantize().double()
    left, right, err_spectrum = _top_factors(error if s is None else error @ s, s_inv, config.rank)
    if config.method != "srr":
        return _pack(base, left, right, 0, config.method)

    k = config.preserved_rank
    if k is None:
        w_spectrum = torch.linalg.svdvals(w @ s)
        k = choose_preserved_rank(w_spectrum, err_spectrum, config.rank)
    if k == 0:
        return _pack(base, left, right, 0, "srr")
    srr_base, srr_left, srr_right = _srr(w, config, s, s_inv, k, covariance)
    if config.preserved_rank is None:
        # guard: keep whichever of k and k = 0 reconstructs the layer's output better, as stored
        cand = _pack(srr_base, srr_left, srr_right, k, "srr")
        zero = _pack(base, left, right, 0, "srr")
        if _scaled_norm(w - zero.dequantize().double(), s) <= _scaled_norm(w - cand.dequantize().double(), s):
            return zero
        return cand
    return _pack(srr_base, srr_left, srr_right, k, "srr")
