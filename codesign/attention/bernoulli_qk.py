"""Bernoulli qKᵀ sampling: the score stage reads only a random subset of the key features.

SANTA samples the value stage; the same paper proposes sparsifying the score stage with a
stochastic query. Each query feature i is kept with probability p_i and, when kept, divided by
p_i (q̃_i = q_i·B_i/p_i, B_i ~ Bernoulli(p_i)), so E[q̃] = q and every score q̃·k_j is an unbiased
estimate of q·k_j; a decode step then reads feature i of the keys only where B_i = 1.

p_i = min(1, a_i/τ) with a_i = |q_i| and τ set per query row so that Σ_i p_i = density·D
(water-filling: the strongest features are kept exactly, the rest with probability proportional
to their magnitude). A kept feature below saturation becomes ±τ, the paper's ternary query.
Under GQA the query heads of a KV head share one draw (a_i: the RMS of their |q_i|), so the
features read are the same for the whole group; each head keeps its own q_i/p_i, still unbiased.
This is a torch reference (no Triton kernel): it measures what the estimator costs in accuracy.
"""

from __future__ import annotations

import torch

__all__ = ["keep_probabilities", "bernoulli_queries"]


def _check_density(density: float) -> float:
    if isinstance(density, bool) or not isinstance(density, (int, float)) or not 0 < density <= 1:
        raise ValueError(f"density={density!r}: the share of query features kept must be in (0, 1]")
    return float(density)


def keep_probabilities(magnitude: torch.Tensor, density: float) -> torch.Tensor:
    """p [..., D] = min(1, a/τ) with Σ p = density·D per row (fewer where a row has fewer non-zero a); a >= 0."""
    density = _check_density(density)
    a = magnitude.double()
    dim = a.shape[-1]
    if density == 1:
        return torch.ones_like(a)
    ordered = a.sort(dim=-1, descending=True).values
    tail = ordered.flip(-1).cumsum(-1).flip(-1)  # tail[m] = mass of the features after the m strongest
    room = density * dim - torch.arange(dim, dtype=a.dtype, device=a.device)  # probability left for them
    tau = torch.where(room > 0, tail / room.clamp(min=1e-12), torch.inf)
    # the m strongest saturate: the smallest m whose next feature lies below the level of the rest
    consistent = (ordered <= tau) & (room > 0)
    level = tau.gather(-1, consistent.to(torch.int8).argmax(-1, keepdim=True))
    p = torch.where(level > 0, a / level, (a > 0).to(a.dtype))
    return p.clamp_(max=1.0)


def bernoulli_queries(q: torch.Tensor, density: float, kv_heads: int,
                      generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(q̃ like q, kept [B, Hkv, ..., D] bool): q [B, Hq, ..., D] sampled per row, one draw per KV head's group."""
    density = _check_density(density)
    if q.dim() < 3 or kv_heads < 1 or q.shape[1] % kv_heads:
        raise ValueError(f"q of shape {tuple(q.shape)}: expected [batch, query heads, ..., head_dim] with the query "
                         f"heads a multiple of kv_heads={kv_heads}")
    grouped = q.unflatten(1, (kv_heads, q.shape[1] // kv_heads))  # [B, Hkv, G, ..., D]
    magnitude = grouped.double().square().mean(2).sqrt()
    p = keep_probabilities(magnitude, density)
    uniform = torch.rand(p.shape, generator=generator, dtype=torch.float64, device="cpu").to(p.device)
    kept = uniform < p
    weight = torch.where(kept, 1.0 / p, 0.0).unsqueeze(2)
    return (grouped.double() * weight).to(q.dtype).flatten(1, 2), kept
