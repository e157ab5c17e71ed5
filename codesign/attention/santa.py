"""SANTA decode attention: exact softmax(q·Kᵀ), then S value rows sampled from it and summed.

o = Σ_j p_j v_j is estimated by (1/S) Σ_j n_j v_j, where n_j counts how many of S sample points
fall into key j's slice [C_{j-1}, C_j) of the CDF C_j = Σ_{i<=j} p_i. Every variant puts each
point uniformly in [0, 1) marginally, so E[n_j] = S p_j and the estimate is unbiased:

- multinomial: S independent uniforms (variance (E_p[v²] - o²) / S, i.e. RMS error ∝ 1/√S);
- stratified:  one uniform point in each stratum [s/S, (s+1)/S);
- systematic:  one uniform offset shared by all strata, (s + u)/S — the points fall into any
  contiguous block of keys (a kernel tile) in proportion to the block's mass.

The uniforms are Philox draws, u = tl.rand(seed, (b * Hq + h) * S_max + s) (systematic uses
s = 0 only); codesign.attention.philox reproduces them bit for bit, so the torch reference and the
Triton kernel draw the same points. The reference builds the CDF in float64, the kernel in
float32 tile by tile: their counts agree except for a point lying within rounding of a CDF
boundary, which then moves to the neighbouring key.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from codesign.attention.philox import philox_uniform
from codesign.attention.validate import check_heads, check_lengths, check_query, check_samples
from codesign.kernels.dispatch import run_kernel_or_reference

__all__ = [
    "VARIANTS",
    "santa_attention",
    "santa_reference",
    "decode_attention_reference",
    "santa_masked_attention",
    "sample_points",
    "sample_counts",
]

VARIANTS = ("multinomial", "stratified", "systematic")
Samples = int | torch.Tensor | Sequence[int]


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"unknown SANTA variant {variant!r}: choose one of {', '.join(VARIANTS)}")


def _check_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int, int, int]:
    bsz, hq, dim = check_query(q)
    for name, t in (("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a [batch, kv_heads, keys, head_dim] tensor")
    if k.shape != v.shape:
        raise ValueError(f"k and v shapes differ: {tuple(k.shape)} vs {tuple(v.shape)}")
    if k.shape[0] != bsz or k.shape[3] != dim:
        raise ValueError(f"k shape {tuple(k.shape)} does not match q shape {tuple(q.shape)} (batch, head_dim)")
    check_heads(hq, k.shape[1])
    return bsz, hq, k.shape[1], k.shape[2], dim


def sample_points(variant: str, uniforms: torch.Tensor, n_samples: torch.Tensor) -> torch.Tensor:
    """Sorted sample points in [0, 1) (float64, +inf past each row's S) from uniforms [..., S_max]."""
    _check_variant(variant)
    s_max = uniforms.shape[-1]
    index = torch.arange(s_max, device=uniforms.device, dtype=torch.float64)
    total = n_samples.to(device=uniforms.device, dtype=torch.float64)[..., None]
    u = uniforms.to(torch.float64)
    if variant == "multinomial":
        points = u
    elif variant == "stratified":
        points = (index + u) / total
    else:
        points = (index + u[..., :1]) / total
    points = torch.where(index < total, points, torch.inf)
    return points.sort(dim=-1).values if variant == "multinomial" else points


def sample_counts(probs: torch.Tensor, visible: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """int64 counts [..., N]: how many sorted points fall into each visible key's CDF slice.

    probs [..., N] (zero where not visible), visible [..., N] bool with at least one key per row.
    The CDF is forced to exactly 1 from the last visible key on, so the counts sum to S.
    """
    cdf = probs.to(torch.float64).cumsum(-1)
    positions = torch.arange(probs.shape[-1], device=probs.device)
    last = torch.where(visible, positions, -1).amax(-1, keepdim=True)
    cdf = torch.where(positions >= last, 1.0, cdf)
    below = torch.searchsorted(points.contiguous(), cdf.contiguous(), side="left")
    return torch.diff(below, dim=-1, prepend=torch.zeros_like(below[..., :1]))


def _scores(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    keys = k.repeat_interleave(group, dim=1).float()
    return torch.einsum("bhd,bhnd->bhn", q.float(), keys) * scale


def _probs(q: torch.Tensor, k: torch.Tensor, lengths: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    scores = _scores(q, k, scale)
    visible = torch.arange(k.shape[2], device=q.device)[None, None, :] < lengths.to(q.device)[:, None, None]
    scores = scores.masked_fill(~visible, -torch.inf)
    return torch.softmax(scores.double(), dim=-1), visible.expand_as(scores)


def decode_attention_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
    lengths: torch.Tensor | Sequence[int] | None = None, scale: float | None = None,
) -> torch.Tensor:
    """Exact decode attention softmax(scale q·Kᵀ) V over each sequence's first lengths[b] keys, in q's dtype."""
    bsz, hq, hkv, n_keys, dim = _check_cache(q, k, v)
    lengths = check_lengths(lengths, bsz, n_keys)
    scale = dim**-0.5 if scale is None else scale
    probs, _ = _probs(q, k, lengths, scale)
    values = v.repeat_interleave(hq // hkv, dim=1).double()
    return torch.einsum("bhn,bhnd->bhd", probs, values).to(q.dtype)


def santa_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_samples: Samples,
    lengths: torch.Tensor | Sequence[int] | None = None,
    variant: str = "systematic", seed: int = 0, scale: float | None = None, return_counts: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """The torch reference of santa_attention: same Philox draws, CDF in float64."""
    _check_variant(variant)
    bsz, hq, hkv, n_keys, dim = _check_cache(q, k, v)
    lengths = check_lengths(lengths, bsz, n_keys)
    samples = check_samples(n_samples, lengths)
    scale = dim**-0.5 if scale is None else scale
    probs, visible = _probs(q, k, lengths, scale)
    s_max = int(samples.max())
    offsets = torch.arange(bsz * hq * s_max, dtype=torch.int64).view(bsz, hq, s_max)
    uniforms = philox_uniform(seed, offsets).to(q.device)
    points = sample_points(variant, uniforms, samples[:, None].expand(bsz, hq).to(q.device))
    counts = sample_counts(probs, visible, points)
    values = v.repeat_interleave(hq // hkv, dim=1).double()
    out = torch.einsum("bhn,bhnd->bhd", counts.double(), values) / samples.to(q.device, torch.float64)[:, None, None]
    out = out.to(q.dtype)
    return (out, counts) if return_counts else out


def santa_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, n_samples: Samples,
    lengths: torch.Tensor | Sequence[int] | None = None,
    *, variant: str = "systematic", seed: int = 0, scale: float | None = None, kernel: str = "auto",
    block_n: int = 64, chunk: int | None = None, return_counts: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """SANTA decode attention: q [B, Hq, D], k/v cache [B, Hkv, N, D], S samples per query head.

    lengths[b] keys of sequence b are valid (ragged batches); n_samples is one S or one per
    sequence, 1 <= S <= lengths[b]. Triton kernel or torch reference per codesign.kernels.dispatch.
    return_counts also returns the integer sample counts [B, Hq, N].
    """
    _check_variant(variant)
    bsz, hq, hkv, n_keys, dim = _check_cache(q, k, v)
    lengths = check_lengths(lengths, bsz, n_keys)
    samples = check_samples(n_samples, lengths)
    scale = dim**-0.5 if scale is None else float(scale)
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")

    def run_triton():
        from codesign.kernels.santa import santa_decode

        if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
            raise ValueError("q, k and v must be contiguous in head_dim")
        out, counts = santa_decode(
            q, k, v, lengths.to(device=q.device, dtype=torch.int32), samples.to(device=q.device, dtype=torch.int32),
            variant=variant, seed=int(seed), scale=scale, block_n=block_n, chunk=chunk, return_counts=return_counts,
        )
        return (out, counts.long()) if return_counts else out

    def run_reference():
        return santa_reference(q, k, v, samples, lengths, variant, seed, scale, return_counts)

    return run_kernel_or_reference(kernel, q, run_triton, run_reference, "attention")


def santa_masked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor, ratio: float,
    variant: str = "systematic", generator: torch.Generator | None = None, scale: float | None = None,
) -> torch.Tensor:
    """Every query row as a SANTA decode step over its visible keys, with S = ceil(n_visible / ratio).

    q [B, Hq, T, D], k/v [B, Hkv, N, D], visible [B, 1 or Hq, T, N] bool. One row per position of a
    teacher-forced sequence is exactly what token-by-token decoding computes, so a model whose
    attention is this function scores text as if every token had been decoded with SANTA. The
    uniforms come from `generator` (torch.rand), not Philox: the estimator is the same.
    """
    _check_variant(variant)
    if ratio < 1:
        raise ValueError(f"ratio n/S must be >= 1, got {ratio}")
    bsz, hq, rows, dim = q.shape
    check_heads(hq, k.shape[1])
    scale = dim**-0.5 if scale is None else scale
    group = hq // k.shape[1]
    scores = torch.einsum("bhtd,bhnd->bhtn", q.float(), k.repeat_interleave(group, dim=1).float()) * scale
    visible = visible.expand(bsz, hq, rows, k.shape[2])
    if not bool(visible.any(-1).all()):
        raise ValueError("every query row needs at least one visible key")
    probs = torch.softmax(scores.masked_fill(~visible, -torch.inf).double(), dim=-1)
    n_visible = visible.sum(-1)
    samples = torch.clamp(torch.ceil(n_visible / ratio), min=1).long()
    s_max = int(samples.max())
    uniforms = torch.rand((bsz, hq, rows, s_max), generator=generator, dtype=torch.float32, device="cpu").to(q.device)
    counts = sample_counts(probs, visible, sample_points(variant, uniforms, samples))
    values = v.repeat_interleave(group, dim=1).to(torch.float64)
    out = torch.einsum("bhtn,bhnd->bhtd", counts.to(torch.float64), values) / samples[..., None]
    return out.to(q.dtype)

