"""Dense split-K decode attention (flash-decoding) in Triton: the baseline SANTA and the low-rank kernel are timed against.

Same grid and chunking as codesign.kernels.santa (batch x KV head x chunk, the GQA group padded to
16 query rows for tl.dot): each program streams its chunk's K and V tiles once with an online
softmax and writes (max, Σexp, Σ p v); the launcher combines the chunks.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from codesign.kernels.dispatch import is_interpreted, split_k_chunk

__all__ = ["flash_decode_kernel", "flash_decode"]

_NEG = -1.0e30


@triton.jit
def flash_decode_kernel(
    q_ptr, k_ptr, v_ptr, lengths_ptr, m_ptr, l_ptr, acc_ptr,
    scale, N, chunk, n_chunks,
    stride_kb, stride_kh, stride_kn,
    G: tl.constexpr, HQ: tl.constexpr, D: tl.constexpr, UPCAST: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Online-softmax attention of one chunk for the G query heads of one KV head."""
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
    dims = tl.arange(0, BLOCK_D)
    d_mask = dims < D
    q = tl.load(q_ptr + (b * HQ + heads[:, None]) * D + dims[None, :],
                mask=g_mask[:, None] & d_mask[None, :], other=0.0).to(dot_ty)
    m = tl.full((BLOCK_G,), _NEG, tl.float32)
    l = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), tl.float32)
    start = c * chunk
    stop = tl.minimum(start + chunk, length)
    for n0 in range(start, stop, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        k_mask = keys < stop
        offs = b * stride_kb + hk * stride_kh + keys[:, None] * stride_kn + dims[None, :]
        tile_mask = k_mask[:, None] & d_mask[None, :]
        kt = tl.load(k_ptr + offs, mask=tile_mask, other=0.0).to(dot_ty)
        s = tl.where(k_mask[None, :], tl.dot(q, tl.trans(kt)) * scale, _NEG)
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, axis=1)
        vt = tl.load(v_ptr + offs, mask=tile_mask, other=0.0).to(dot_ty)
        acc = acc * alpha[:, None] + tl.dot(p.to(dot_ty), vt)
        m = m_new
    stat = (b * HQ + heads) * n_chunks + c
    tl.store(m_ptr + stat, m, mask=g_mask)
    tl.store(l_ptr + stat, l, mask=g_mask)
    tl.store(acc_ptr + stat[:, None] * D + dims[None, :], acc, mask=g_mask[:, None] & d_mask[None, :])


def flash_decode(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lengths: torch.Tensor, *, scale: float,
    block_n: int = 64, chunk: int | None = None,
) -> torch.Tensor:
    """softmax(scale q Kᵀ) V: q [B, Hq, D] contiguous, k/v [B, Hkv, N, D] with the same strides, lengths int32 [B]."""
    bsz, hq, dim = q.shape
    hkv, n_keys = k.shape[1], k.shape[2]
    if k.stride() != v.stride() or k.stride(-1) != 1 or not q.is_contiguous():
        raise ValueError("k and v must share strides with a contiguous head_dim, and q must be contiguous")
    group = hq // hkv
    chunk, n_chunks = split_k_chunk(n_keys, bsz * hkv, block_n, chunk)
    m = torch.empty((bsz, hq, n_chunks), dtype=torch.float32, device=q.device)
    l = torch.empty_like(m)
    acc = torch.empty((bsz, hq, n_chunks, dim), dtype=torch.float32, device=q.device)
    flash_decode_kernel[(bsz, hkv, n_chunks)](
        q, k, v, lengths, m, l, acc, scale, n_keys, chunk, n_chunks, k.stride(0), k.stride(1), k.stride(2),
        G=group, HQ=hq, D=dim, UPCAST=is_interpreted(flash_decode_kernel),
        BLOCK_G=max(16, 1 << max(0, (group - 1).bit_length())), BLOCK_N=block_n,
        BLOCK_D=max(16, 1 << max(0, (dim - 1).bit_length())),
    )
    weight = torch.exp(m - m.amax(dim=2, keepdim=True))
    out = (acc * weight[..., None]).sum(2) / (l * weight).sum(2)[..., None]
    return out.to(q.dtype)
