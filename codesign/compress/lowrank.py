"""Activation-aware low-rank compression in the Swift-SVD style: W ≈ U_r (U_r^T W).

For a layer y = W x, the rank-r weight minimizing E||y - Ŵ x||^2 is U_r U_r^T W, with U_r the top-r
eigenvectors of the output second moment C = E[y y^T] (accumulated over calibration batches, one
eigendecomposition per layer; closed form, no SVD of W, no inverse of the input covariance).
Stored: L = U_r [N, r] and R = U_r^T W [r, K], both fp16.

Ranks across layers: the budget is the memory of `bits` bits per weight (r (N + K) fp16 values
<= N K bits / 16, summed over layers). Each layer's rank is proportional to its effective rank
(Roy & Vetterli: exp of the entropy of the normalized singular values of its outputs, sqrt of C's
eigenvalues) times its importance (1 - cos(block input, block output) of its transformer block,
normalized to mean 1), scaled so the total fits the budget and clipped to 1..min(N, K).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch

__all__ = ["LowRankLinear", "output_spectrum", "effective_rank", "allocate_ranks", "swift_svd_factors", "swift_svd_compress"]


class LowRankLinear(torch.nn.Module):
    """y = (x R^T) L^T + b with L [N, r] and R [r, K] stored in fp16."""

    def __init__(self, left: torch.Tensor, right: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        if left.dim() != 2 or right.dim() != 2 or left.shape[1] != right.shape[0]:
            raise ValueError(f"factors must be [N, r] and [r, K], got {tuple(left.shape)} and {tuple(right.shape)}")
        self.register_buffer("left", left.detach().to(torch.float16).contiguous())
        self.register_buffer("right", right.detach().to(torch.float16).contiguous())
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
        self.out_features, self.in_features = left.shape[0], right.shape[1]

    @property
    def rank(self) -> int:
        """r."""
        return self.left.shape[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., K] -> [..., N] in float32."""
        y = (x.float() @ self.right.float().T) @ self.left.float().T
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}"


def output_spectrum(output_cov: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(eigenvalues descending, eigenvectors as columns) of the output second moment (float64)."""
    evals, evecs = torch.linalg.eigh(output_cov.double())
    return evals.flip(0).clamp(min=0), evecs.flip(1)


def effective_rank(eigenvalues: torch.Tensor) -> float:
    """exp(entropy) of the normalized singular values sqrt(λ) (1 for a rank-1 layer, n for a flat spectrum)."""
    sigma = eigenvalues.double().clamp(min=0).sqrt()
    total = sigma.sum()
    if total <= 0:
        return 1.0
    p = sigma / total
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def allocate_ranks(
    shapes: Mapping[str, tuple[int, int]],
    eranks: Mapping[str, float],
    importance: Mapping[str, float],
    budget_params: float,
) -> dict[str, int]:
    """Ranks r_l ∝ erank_l · importance_l, the largest scale with sum r_l (N_l + K_l) <= budget_params."""
    names = list(shapes)
    mean_imp = sum(max(importance[n], 1e-12) for n in names) / len(names)
    weight = {n: eranks[n] * max(importance[n], 1e-12) / mean_imp for n in names}
    cap = {n: min(shapes[n]) for n in names}

    def ranks_at(scale: float) -> dict[str, int]:
        return {n: int(min(cap[n], max(1, round(scale * weight[n])))) for n in names}

    def cost(ranks: Mapping[str, int]) -> int:
        return sum(ranks[n] * sum(shapes[n]) for n in names)

    if cost(ranks_at(0.0)) > budget_params:
        raise ValueError(f"a budget of {budget_params:.0f} parameters cannot give every layer rank 1")
    low, high = 0.0, 1.0
    while cost(ranks_at(high)) <= budget_params and any(r < cap[n] for n, r in ranks_at(high).items()):
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cost(ranks_at(mid)) <= budget_params else (low, mid)
    return ranks_at(low)


def swift_svd_factors(weight: torch.Tensor, eigenvectors: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """L = U_r [N, r] and R = U_r^T W [r, K] (float64) from the output eigenvectors (descending)."""
    n, k = weight.shape
    if not 1 <= rank <= min(n, k):
        raise ValueError(f"rank {rank} must lie in 1..{min(n, k)} for a [{n}x{k}] layer")
    basis = eigenvectors[:, :rank].double()
    return basis, basis.T @ weight.double()


@torch.no_grad()
def swift_svd_compress(
    linears: Mapping[str, torch.nn.Linear],
    output_cov: Mapping[str, torch.Tensor],
    importance: Mapping[str, float],
    bits: float,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, LowRankLinear]:
    """LowRankLinear for every layer, ranks allocated for a memory budget of `bits` bits per weight."""
    if not 0 < bits < 16:
        raise ValueError(f"low-rank budget must be between 0 and 16 bits per weight, got {bits}")
    missing = [n for n in linears if n not in output_cov]
    if missing:
        raise ValueError(f"no output covariance for layer {missing[0]}")
    spectra = {}
    for i, name in enumerate(linears):
        if progress is not None:
            progress(i, len(linears), name)
        spectra[name] = output_spectrum(output_cov[name])
    shapes = {n: tuple(m.weight.shape) for n, m in linears.items()}
    eranks = {n: effective_rank(spectra[n][0]) for n in linears}
    budget = sum(n * k for n, k in shapes.values()) * bits / 16
    ranks = allocate_ranks(shapes, eranks, importance, budget)
    out = {}
    for name, linear in linears.items():
        left, right = swift_svd_factors(linear.weight, spectra[name][1], ranks[name])
        out[name] = LowRankLinear(left, right, linear.bias)
    return out
