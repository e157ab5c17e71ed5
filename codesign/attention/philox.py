"""Triton's counter-based uniforms (`tl.rand(seed, offset)`), reproduced bit for bit in torch.

tl.rand runs Philox4x32-10 with key (seed low 32 bits, seed high 32 bits) on the counter
(offset, 0, 0, 0) for int32 offsets, keeps the first output word x, reads it as int32, maps
negative values to ~x and multiplies by 4.6566127342e-10 in float32. Because the stream is a pure
function of (seed, offset), a kernel can draw the uniform of any sample index on the spot, and the
torch reference can draw the very same numbers: the two then agree draw for draw.
"""

from __future__ import annotations

import torch

__all__ = ["philox_uniform"]

_MASK = 0xFFFFFFFF
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85
_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57
_TO_UNIFORM = 4.6566127342e-10


def philox_uniform(seed: int, offsets: torch.Tensor) -> torch.Tensor:
    """float32 uniforms in [0, 1), equal to Triton's tl.rand(seed, offsets) for int32 offsets."""
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    if offsets.dtype not in (torch.int32, torch.int64) or (offsets.numel() and int(offsets.min()) < 0):
        raise ValueError("offsets must be non-negative integers")
    # uint32 arithmetic in int64: every product of two 32-bit words is split into its high and low words
    c0 = offsets.to(torch.int64) & _MASK
    c1 = torch.zeros_like(c0)
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0, k1 = int(seed) & _MASK, (int(seed) >> 32) & _MASK
    for _ in range(10):
        hi_b, lo_b = _mulhilo(_ROUND_B, c2)
        hi_a, lo_a = _mulhilo(_ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + _KEY_A) & _MASK, (k1 + _KEY_B) & _MASK
    signed = torch.where(c0 >= 2**31, c0 - 2**32, c0)
    signed = torch.where(signed < 0, -signed - 1, signed)
    return signed.to(torch.float32) * torch.tensor(_TO_UNIFORM, dtype=torch.float32)


def _mulhilo(constant: int, word: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit words of constant * word, without overflowing int64."""
    c_hi, c_lo = constant >> 16, constant & 0xFFFF
    w_hi, w_lo = word >> 16, word & 0xFFFF
    lo_lo = c_lo * w_lo
    mid = c_hi * w_lo + c_lo * w_hi  # < 2**33
    hi_hi = c_hi * w_hi
    low = (lo_lo + ((mid & 0xFFFF) << 16)) & _MASK
    carry = (lo_lo + ((mid & 0xFFFF) << 16)) >> 32
    high = (hi_hi + (mid >> 16) + carry) & _MASK
    return high, low
