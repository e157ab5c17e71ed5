"""Triton SANTA decode attention: exact q·Kᵀ, then S sampled value rows summed with integer counts.

Two launches, split over the sequence like flash-decoding (grid: batch x KV head x chunk; the
query heads of a GQA group share every K/V tile, padded to 16 rows for tl.dot):

1. santa_scores_kernel reads K once: it writes the scaled scores of each query head to a float32
   buffer and the chunk's softmax statistics (max m_c, sum l_c = Σ exp(s - m_c)).
2. santa_sample_kernel turns the statistics of all chunks into each chunk's probability mass and
   its slice [lo, hi) of the CDF (one cumsum that every program computes identically, so chunk
   boundaries agree bit for bit; the last chunk's hi is set to exactly 1). Walking its keys, it
   forms the CDF value C_j of every key and F(C_j) = the number of sample points below C_j;
   key j's count is F(C_j) - F(C_{j-1}). Value rows with a non-zero count in any head of the group
   are loaded (masked loads: unsampled rows are not read) and added count times.

Sample points (sorted, in [0, 1)), uniforms from Philox tl.rand(seed, offset) with
offset = (b * Hq + h) * s_max + s:
- systematic:  (s + u_0) / S              F(C) = ⌊CS⌋ + [u_0 < CS - ⌊CS⌋]
- stratified:  (s + u_s) / S              F(C) = ⌊CS⌋ + [u_⌊CS⌋ < CS - ⌊CS⌋]  (u drawn on the spot)
- multinomial: sorted u_s (sorted by the launcher, passed in)   F(C) by binary search
Systematic points land in each chunk in proportion to its mass: per-tile budgets proportional to
tile mass, with every sample weighted 1/S (pure counts).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from codesign.kernels.dispatch import is_interpreted, split_k_chunk

__all__ = [
    "VARIANT_IDS",
    "santa_scores_kernel",
    "santa_sample_kernel",
    "philox_uniform_kernel",
    "santa_decode",
    "sample_uniforms",
]

VARIANT_IDS = {"multinomial": 0, "stratified": 1, "systematic": 2}
_NEG = -1.0e30  # finite "minus infinity": keeps exp(m_a - m_b) defined for empty chunks


@triton.jit
def philox_uniform_kernel(out_ptr, seed, total, BLOCK: tl.constexpr):
    """out[i] = tl.rand(seed, i) for i < total (the multinomial variant's draws)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=offs < total)


@triton.jit
def santa_scores_kernel(
    q_ptr, k_ptr, scores_ptr, stats_ptr, lengths_ptr,
    scale, N, chunk, n_chunks,
    stride_qb, stride_qh, stride_kb, stride_kh, stride_kn,
    G: tl.constexpr, HQ: tl.constexpr, D: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Scores s = scale q·k of one chunk for the G query heads of one KV head, and (max, Σexp)."""
    b = tl.program_id(0)
    hk = tl.program_id(1)
    c = tl.program_id(2)
    length = tl.load(lengths_ptr + b)
    g = tl.arange(0, BLOCK_G)
    heads = hk * G + g
    g_mask = g < G
    dims = tl.arange(0, BLOCK_D)
    d_mask = dims < D
    if UPCAST:
        dot_ty = tl.float32  # Triton's CPU interpreter: keep tl.dot in float32
    else:
        dot_ty = q_ptr.dtype.element_ty
    q = tl.load(q_ptr + b * stride_qb + heads[:, None] * stride_qh + dims[None, :],
                mask=g_mask[:, None] & d_mask[None, :], other=0.0).to(dot_ty)
    m = tl.full((BLOCK_G,), _NEG, tl.float32)
    l = tl.zeros((BLOCK_G,), tl.float32)
    start = c * chunk
    stop = tl.minimum(start + chunk, length)
    for n0 in range(start, stop, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        k_mask = keys < stop
        kt = tl.load(k_ptr + b * stride_kb + hk * stride_kh + keys[:, None] * stride_kn + dims[None, :],
                     mask=k_mask[:, None] & d_mask[None, :], other=0.0).to(dot_ty)
        s = tl.dot(q, tl.trans(kt)) * scale
        s = tl.where(k_mask[None, :], s, _NEG)
        tl.store(scores_ptr + (b * HQ + heads[:, None]) * N + keys[None, :], s,
                 mask=g_mask[:, None] & k_mask[None, :])
        m_new = tl.maximum(m, tl.max(s, axis=1))
        l = l * tl.exp(m - m_new) + tl.sum(tl.exp(s - m_new[:, None]), axis=1)
        m = m_new
    stat = stats_ptr + ((b * HQ + heads) * n_chunks + c) * 2
    tl.store(stat, m, mask=g_mask)
    tl.store(stat + 1, l, mask=g_mask)


@triton.jit
def _points_below(C, seed, base, n_samples, s_float, points_ptr, n_search, VARIANT: tl.constexpr):
    """int32 number of sample points < C, elementwise ([G, BN] CDF values; base: [G, 1] stream offsets)."""
    if VARIANT == 0:
        # lower_bound of C in the sorted points (a fixed number of halvings, inactive lanes idle)
        lo = tl.zeros(C.shape, tl.int32)
        hi = tl.zeros(C.shape, tl.int32) + n_samples
        for _ in range(n_search):
            active = lo < hi
            mid = (lo + hi) // 2
            x = tl.load(points_ptr + base + mid, mask=active, other=0.0)
            less = x < C
            lo = tl.where(active & less, mid + 1, lo)
            hi = tl.where(active & (~less), mid, hi)
        below = lo
    else:
        a = C * s_float
        floor_a = tl.floor(a)
        whole = floor_a.to(tl.int32)
        inside = whole < n_samples
        if VARIANT == 1:
            stratum = tl.minimum(whole, n_samples - 1)
            u = tl.rand(seed, (base + stratum).to(tl.int32))
        else:
            u = tl.rand(seed, (base + whole * 0).to(tl.int32))
        below = tl.where(inside, whole + (u < a - floor_a).to(tl.int32), n_samples)
    return below


@triton.jit
def santa_sample_kernel(
    scores_ptr, stats_ptr, v_ptr, lengths_ptr, samples_ptr, points_ptr, partial_ptr, counts_ptr,
    seed, N, chunk, n_chunks, s_max, n_search,
    stride_vb, stride_vh, stride_vn,
    G: tl.constexpr, HQ: tl.constexpr, D: tl.constexpr, VARIANT: tl.constexpr, WRITE_COUNTS: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """partial[b, h, c, :] = Σ_j count_j v_j over the chunk's keys (counts from the sample points)."""
    b = tl.program_id(0)
    hk = tl.program_id(1)
    c = tl.program_id(2)
    length = tl.load(lengths_ptr + b)
    n_samples = tl.load(samples_ptr + b)
    s_float = n_samples.to(tl.float32)
    g = tl.arange(0, BLOCK_G)
    heads = hk * G + g
    g_mask = g < G
    dims = tl.arange(0, BLOCK_D)
    d_mask = dims < D
    # every chunk's mass -> this chunk's slice [lo, hi) of the CDF
    chunks = tl.arange(0, BLOCK_C)
    c_mask = g_mask[:, None] & (chunks[None, :] < n_chunks)
    stat = stats_ptr + ((b * HQ + heads[:, None]) * n_chunks + chunks[None, :]) * 2
    m_all = tl.load(stat, mask=c_mask, other=_NEG)
    l_all = tl.load(stat + 1, mask=c_mask, other=0.0)
    m_max = tl.max(m_all, axis=1)
    mass = l_all * tl.exp(m_all - m_max[:, None])
    total = tl.sum(mass, axis=1)
    mass = mass / tl.where(total > 0, total, 1.0)[:, None]  # padding rows of the head block have no mass
    bounds = tl.cumsum(mass, axis=1)
    hi = tl.sum(tl.where(chunks[None, :] == c, bounds, 0.0), axis=1)
    lo = tl.sum(tl.where(chunks[None, :] == c - 1, bounds, 0.0), axis=1)
    last_chunk = (length - 1) // chunk
    hi = tl.where(c == last_chunk, 1.0, hi)
    m_c = tl.sum(tl.where(chunks[None, :] == c, m_all, 0.0), axis=1)
    l_c = tl.sum(tl.where(chunks[None, :] == c, l_all, 0.0), axis=1)
    l_c = tl.where(l_c > 0, l_c, 1.0)

    base = ((b * HQ + heads) * s_max)[:, None]
    f_prev = tl.sum(_points_below(lo[:, None], seed, base, n_samples, s_float, points_ptr, n_search, VARIANT), axis=1)
    run = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), tl.float32)
    lanes = tl.arange(0, BLOCK_N)
    shifted = tl.broadcast_to(tl.maximum(lanes - 1, 0)[None, :], (BLOCK_G, BLOCK_N))
    start = c * chunk
    stop = tl.minimum(start + chunk, length)
    for n0 in range(start, stop, BLOCK_N):
        keys = n0 + lanes
        k_mask = keys < stop
        s = tl.load(scores_ptr + (b * HQ + heads[:, None]) * N + keys[None, :],
                    mask=g_mask[:, None] & k_mask[None, :], other=_NEG)
        e = tl.where(k_mask[None, :], tl.exp(s - m_c[:, None]), 0.0)
        cdf = lo[:, None] + (hi - lo)[:, None] * ((run[:, None] + tl.cumsum(e, axis=1)) / l_c[:, None])
        cdf = tl.minimum(cdf, hi[:, None])
        cdf = tl.where(keys[None, :] >= stop - 1, hi[:, None], cdf)  # the chunk ends exactly at hi
        below = _points_below(cdf, seed, base, n_samples, s_float, points_ptr, n_search, VARIANT)
        before = tl.gather(below, shifted, axis=1)
        before = tl.where(lanes[None, :] == 0, f_prev[:, None], before)
        count = tl.where(g_mask[:, None], below - before, 0)
        f_prev = tl.sum(tl.where(lanes[None, :] == BLOCK_N - 1, below, 0), axis=1)
        run += tl.sum(e, axis=1)
        sampled = tl.max(count, axis=0) > 0
        # gather-and-add: only rows some head sampled are read
        vt = tl.load(v_ptr + b * stride_vb + hk * stride_vh + keys[:, None] * stride_vn + dims[None, :],
                     mask=sampled[:, None] & d_mask[None, :], other=0.0).to(tl.float32)
        # counts can exceed what float16/bfloat16 hold exactly: multiply in IEEE float32
        acc += tl.dot(count.to(tl.float32), vt, input_precision="ieee")
        if WRITE_COUNTS:
            tl.store(counts_ptr + (b * HQ + heads[:, None]) * N + keys[None, :], count,
                     mask=g_mask[:, None] & k_mask[None, :])
    out = partial_ptr + ((b * HQ + heads[:, None]) * n_chunks + c) * D + dims[None, :]
    tl.store(out, acc, mask=g_mask[:, None] & d_mask[None, :])


def _pow2(value: int) -> int:
    return 1 << max(0, (int(value) - 1).bit_length())


def sample_uniforms(seed: int, count: int, device: torch.device) -> torch.Tensor:
    """tl.rand(seed, 0..count-1) as a float32 tensor (the multinomial variant's draws)."""
    out = torch.empty(count, dtype=torch.float32, device=device)
    block = 1024
    philox_uniform_kernel[(triton.cdiv(count, block),)](out, seed, count, BLOCK=block)
    return out


def santa_decode(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    lengths: torch.Tensor,
    n_samples: torch.Tensor,
    *,
    variant: str,
    seed: int,
    scale: float,
    block_n: int = 64,
    chunk: int | None = None,
    return_counts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(out [B, Hq, D] in q's dtype, counts [B, Hq, N] int32 or None); inputs validated by the caller.

    q [B, Hq, D], k/v [B, Hkv, N, D] (last dim contiguous), lengths/n_samples int32 [B].
    """
    bsz, hq, dim = q.shape
    hkv, n_keys = k.shape[1], k.shape[2]
    group = hq // hkv
    chunk, n_chunks = split_k_chunk(n_keys, bsz * hkv, block_n, chunk)
    s_max = int(n_samples.max())
    if bsz * hq * s_max >= 2**31:
        raise ValueError(f"batch x heads x samples = {bsz * hq * s_max} exceeds the 32-bit Philox offsets")
    device = q.device
    scores = torch.empty((bsz, hq, n_keys), dtype=torch.float32, device=device)
    stats = torch.empty((bsz, hq, n_chunks, 2), dtype=torch.float32, device=device)
    partial = torch.empty((bsz, hq, n_chunks, dim), dtype=torch.float32, device=device)
    counts = torch.zeros((bsz, hq, n_keys), dtype=torch.int32, device=device) if return_counts else partial
    variant_id = VARIANT_IDS[variant]
    points = stats  # placeholder unless multinomial
    n_search = 0
    if variant_id == 0:
        draws = sample_uniforms(seed, bsz * hq * s_max, device).view(bsz, hq, s_max)
        keep = torch.arange(s_max, device=device)[None, None, :] < n_samples.to(device)[:, None, None]
        points = torch.where(keep, draws, torch.full_like(draws, 2.0)).sort(dim=-1).values.contiguous()
        n_search = s_max.bit_length()
    grid = (bsz, hkv, n_chunks)
    blocks = dict(BLOCK_G=max(16, _pow2(group)), BLOCK_N=block_n, BLOCK_D=max(16, _pow2(dim)))
    santa_scores_kernel[grid](
        q, k, scores, stats, lengths, scale, n_keys, chunk, n_chunks,
        q.stride(0), q.stride(1), k.stride(0), k.stride(1), k.stride(2),
        G=group, HQ=hq, D=dim, UPCAST=is_interpreted(santa_scores_kernel), **blocks,
    )
    santa_sample_kernel[grid](
        scores, stats, v, lengths, n_samples, points, partial, counts,
        seed, n_keys, chunk, n_chunks, s_max, n_search,
        v.stride(0), v.stride(1), v.stride(2),
        G=group, HQ=hq, D=dim, VARIANT=variant_id, WRITE_COUNTS=return_counts,
        BLOCK_C=max(2, _pow2(n_chunks)), **blocks,
    )
    out = partial.sum(dim=2) / n_samples.to(device=device, dtype=torch.float32)[:, None, None]
    return out.to(q.dtype), (counts if return_counts else None)
