"""Triton decode attention on a low-rank (optionally int8/int4) latent KV cache.

Split over the sequence like flash-decoding (grid: batch x KV head x chunk; the query heads of a
GQA group share every latent tile); each program keeps an online softmax and accumulates
probabilities times *value latents*, so values are never reconstructed per key: the launcher
combines the chunks and multiplies the latent result by the value up-projection once.

Keys, ROPE=True (keys projected before RoPE): each tile's key latents are reconstructed with one
tl.dot per half of the head dimension, rotated by their own positions (angles pos * inv_freq in
float32, rotate-half pairs i, i + D/2), and dotted with the rotated query.
Keys, ROPE=False (keys projected after RoPE): the query is projected once, q̃ = q upᵀ, and scores
are q̃ · latent.

Latent storage (per row of R channels): BITS=16 float16; BITS=8 int8 codes times a float32 (or
float16) scale per token and GROUP channels; BITS=4 two codes per byte (offset 8, even channel in the low nibble)
times the same scales. Keys and values have their own precision, and a side may be mixed: its first RA
channels in one part (BITS_K / BITS_V), the rest in a tail part of its own precision (BITS_KT / BITS_VT),
each part with its own codes and scales.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from codesign.kernels.dispatch import is_interpreted, split_k_chunk

__all__ = ["lowrank_decode_kernel", "lowrank_decode"]

_NEG = -1.0e30


@triton.jit
def _latent_part(codes_ptr, scale_ptr, rows, cols, mask, W, BITS: tl.constexpr, GROUP: tl.constexpr):
    """float32 values of channels `cols` (0..W-1) of a latent part of W channels stored at BITS, zero outside mask."""
    if BITS == 16:
        x = tl.load(codes_ptr + rows[:, None] * W + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    else:
        n_groups = (W + GROUP - 1) // GROUP
        scale = tl.load(scale_ptr + rows[:, None] * n_groups + cols[None, :] // GROUP, mask=mask, other=0.0).to(tl.float32)
        if BITS == 8:
            x = tl.load(codes_ptr + rows[:, None] * W + cols[None, :], mask=mask, other=0).to(tl.float32)
        else:
            width = (W + 1) // 2
            byte = tl.load(codes_ptr + rows[:, None] * width + cols[None, :] // 2, mask=mask, other=0).to(tl.int32)
            nibble = (byte >> ((cols[None, :] % 2) * 4)) & 15
            x = tl.where(mask, (nibble - 8).to(tl.float32), 0.0)
        x = x * scale
    return x


@triton.jit
def _latent_tile(codes_ptr, scale_ptr, tail_codes_ptr, tail_scale_ptr, head_row, keys, k_mask, R, RA,
                 BITS: tl.constexpr, TAIL_BITS: tl.constexpr, GROUP: tl.constexpr, BLOCK_R: tl.constexpr):
    """float32 latent [BLOCK_N, BLOCK_R] of `keys` (rows head_row + key of the cache), zero outside: channels
    0..RA-1 from the head part (BITS), RA..R-1 from the tail part (TAIL_BITS; 0: no tail, RA = R)."""
    cols = tl.arange(0, BLOCK_R)
    rows = head_row + keys
    x = _latent_part(codes_ptr, scale_ptr, rows, cols, k_mask[:, None] & (cols[None, :] < RA), RA, BITS, GROUP)
    if TAIL_BITS > 0:
        tail = tl.maximum(cols - RA, 0)
        in_tail = k_mask[:, None] & (cols[None, :] >= RA) & (cols[None, :] < R)
        x += _latent_part(tail_codes_ptr, tail_scale_ptr, rows, tail, in_tail, R - RA, TAIL_BITS, GROUP)
    return x


@triton.jit
def lowrank_decode_kernel(
    q_ptr, kc_ptr, ks_ptr, vc_ptr, vs_ptr, pos_ptr, kup_ptr, vup_ptr, freq_ptr, lengths_ptr,
    m_ptr, l_ptr, acc_ptr, kc2_ptr, ks2_ptr, vc2_ptr, vs2_ptr,
    scale, N, chunk, n_chunks, RK, RV, RKA, RVA,
    G: tl.constexpr, HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
    BITS_K: tl.constexpr, BITS_KT: tl.constexpr, BITS_V: tl.constexpr, BITS_VT: tl.constexpr,
    GROUP: tl.constexpr, ROPE: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_RK: tl.constexpr, BLOCK_RV: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Per chunk: running max m, Σexp l and Σ p · value-latent for the G query heads of one KV head."""
    b = tl.program_id(0)
    hk = tl.program_id(1)
    c = tl.program_id(2)
    if UPCAST:
        dot_ty = tl.float32  # Triton's CPU interpreter: keep tl.dot in float32
    else:
        dot_ty = q_ptr.dtype.element_ty
    length = tl.load(lengths_ptr + b)
    g = tl.arange(0, BLOCK_G)
    heads = hk * G + g
    g_mask = g < G
    q_row = q_ptr + (b * HQ + heads[:, None]) * D
    rk = tl.arange(0, BLOCK_RK)
    kup = kup_ptr + hk * RK * D + rk[:, None] * D
    if ROPE:
        half = tl.arange(0, BLOCK_H)
        h_mask = half < D // 2
        qh_mask = g_mask[:, None] & h_mask[None, :]
        q1 = tl.load(q_row + half[None, :], mask=qh_mask, other=0.0).to(dot_ty)
        q2 = tl.load(q_row + D // 2 + half[None, :], mask=qh_mask, other=0.0).to(dot_ty)
        up_mask = (rk[:, None] < RK) & h_mask[None, :]
        up1 = tl.load(kup + half[None, :], mask=up_mask, other=0.0).to(dot_ty)
        up2 = tl.load(kup + D // 2 + half[None, :], mask=up_mask, other=0.0).to(dot_ty)
        freq = tl.load(freq_ptr + half, mask=h_mask, other=0.0)
    else:
        dims = tl.arange(0, BLOCK_D)
        d_mask = dims < D
        q = tl.load(q_row + dims[None, :], mask=g_mask[:, None] & d_mask[None, :], other=0.0).to(dot_ty)
        up = tl.load(kup + dims[None, :], mask=(rk[:, None] < RK) & d_mask[None, :], other=0.0).to(dot_ty)
        q_latent = tl.dot(q, tl.trans(up)).to(dot_ty)  # [G, RK]: the query in the key latent space
    m = tl.full((BLOCK_G,), _NEG, tl.float32)
    l = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_RV), tl.float32)
    head_row = (b * HKV + hk) * N
    start = c * chunk
    stop = tl.minimum(start + chunk, length)
    for n0 in range(start, stop, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        k_mask = keys < stop
        latent = _latent_tile(kc_ptr, ks_ptr, kc2_ptr, ks2_ptr, head_row, keys, k_mask, RK, RKA,
                              BITS_K, BITS_KT, GROUP, BLOCK_RK).to(dot_ty)
        if ROPE:
            k1 = tl.dot(latent, up1)
            k2 = tl.dot(latent, up2)
            pos = tl.load(pos_ptr + b * N + keys, mask=k_mask, other=0).to(tl.float32)
            angle = pos[:, None] * freq[None, :]
            cos = tl.cos(angle)
            sin = tl.sin(angle)
            r1 = (k1 * cos - k2 * sin).to(dot_ty)
            r2 = (k2 * cos + k1 * sin).to(dot_ty)
            s = tl.dot(q1, tl.trans(r1)) + tl.dot(q2, tl.trans(r2))
        else:
            s = tl.dot(q_latent, tl.trans(latent))
        s = tl.where(k_mask[None, :], s * scale, _NEG)
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        values = _latent_tile(vc_ptr, vs_ptr, vc2_ptr, vs2_ptr, head_row, keys, k_mask, RV, RVA,
                              BITS_V, BITS_VT, GROUP, BLOCK_RV).to(dot_ty)
        acc = acc * alpha[:, None] + tl.dot(p.to(dot_ty), values)
        m = m_new
    stat = (b * HQ + heads) * n_chunks + c
    tl.store(m_ptr + stat, m, mask=g_mask)
    tl.store(l_ptr + stat, l, mask=g_mask)
    rv = tl.arange(0, BLOCK_RV)
    tl.store(acc_ptr + stat[:, None] * RV + rv[None, :], acc, mask=g_mask[:, None] & (rv[None, :] < RV))


def _pow2(value: int, least: int = 16) -> int:
    return max(least, 1 << max(0, (int(value) - 1).bit_length()))


def lowrank_decode(
    q: torch.Tensor,
    key_codes: torch.Tensor,
    key_scale: torch.Tensor | None,
    value_codes: torch.Tensor,
    value_scale: torch.Tensor | None,
    positions: torch.Tensor,
    key_up: torch.Tensor,
    value_up: torch.Tensor,
    inv_freq: torch.Tensor | None,
    lengths: torch.Tensor,
    *,
    bits: int,
    group_size: int,
    rope: bool,
    scale: float,
    block_n: int = 32,
    chunk: int | None = None,
    value_bits: int | None = None,
    key_tail: tuple[torch.Tensor, torch.Tensor | None, int, int] | None = None,
    value_tail: tuple[torch.Tensor, torch.Tensor | None, int, int] | None = None,
) -> torch.Tensor:
    """out [B, Hq, D] in q's dtype; shapes validated by codesign.attention.lowrank_kv.

    Keys at `bits`, values at `value_bits` (default: bits). A tail (codes, scales, bits, width) holds the last
    `width` latent channels of its side at its own precision (mixed-precision latents); the head part then holds
    the channels before them."""
    bsz, hq, dim = q.shape
    hkv, n_keys = key_codes.shape[1], key_codes.shape[2]
    rank_k, rank_v = key_up.shape[1], value_up.shape[1]
    group = hq // hkv
    chunk, n_chunks = split_k_chunk(n_keys, bsz * hkv, block_n, chunk)
    device = q.device
    m = torch.empty((bsz, hq, n_chunks), dtype=torch.float32, device=device)
    l = torch.empty_like(m)
    acc = torch.empty((bsz, hq, n_chunks, rank_v), dtype=torch.float32, device=device)
    placeholder = m

    def tail_args(tail, rank):  # noqa: ANN001, ANN202 - (codes, scales, bits, head rank) of a side's tail
        if tail is None:
            return placeholder, placeholder, 0, rank
        codes, scales, tail_bits, width = tail
        return codes.contiguous(), placeholder if scales is None else scales.contiguous(), tail_bits, rank - width

    kc2, ks2, bits_kt, rank_ka = tail_args(key_tail, rank_k)
    vc2, vs2, bits_vt, rank_va = tail_args(value_tail, rank_v)
    lowrank_decode_kernel[(bsz, hkv, n_chunks)](
        q, key_codes, placeholder if key_scale is None else key_scale,
        value_codes, placeholder if value_scale is None else value_scale,
        positions, key_up, value_up, placeholder if inv_freq is None else inv_freq, lengths,
        m, l, acc, kc2, ks2, vc2, vs2, scale, n_keys, chunk, n_chunks, rank_k, rank_v, rank_ka, rank_va,
        G=group, HQ=hq, HKV=hkv, D=dim, BITS_K=bits, BITS_KT=bits_kt,
        BITS_V=bits if value_bits is None else value_bits, BITS_VT=bits_vt,
        GROUP=group_size, ROPE=rope, UPCAST=is_interpreted(lowrank_decode_kernel),
        BLOCK_G=_pow2(group), BLOCK_N=block_n, BLOCK_RK=_pow2(rank_k), BLOCK_RV=_pow2(rank_v),
        BLOCK_H=_pow2(dim // 2), BLOCK_D=_pow2(dim),
    )
    weight = torch.exp(m - m.amax(dim=2, keepdim=True))
    latent = (acc * weight[..., None]).sum(2) / (l * weight).sum(2)[..., None]
    heads_up = value_up.float().repeat_interleave(group, dim=0)  # [Hq, Rv, D]
    return torch.einsum("bhr,hrd->bhd", latent, heads_up).to(q.dtype)
