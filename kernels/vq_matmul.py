"""Triton VQ GEMV/GEMM: 2-bit vector-quantized weights, one 8-bit code per 4 weights.

A VQ code byte is decoded exactly like a packed 2-bit byte of the LUT kernels — one gather from
a [256, 4] table gives 4 weights — only the table differs: the 256 learned codewords A s(c) + mu
instead of a product of scalar levels. So this launcher validates the VQ layout and runs the
byte-table path of lut_matmul. (Decoding from the sign bits with the affine map instead would cost
8 FMAs per weight, which makes a memory-bound GEMV compute-bound on current GPUs.)
"""

from __future__ import annotations

import torch

from codesign.kernels.lut_matmul import BYTE_TABLE, lut_matmul
from codesign.kernels.tuning import KernelConfig

__all__ = ["vq_matmul"]


def vq_matmul(
    x: torch.Tensor,
    codes: torch.Tensor,
    scales: torch.Tensor,
    codebook: torch.Tensor,
    *,
    group_size: int,
    lowrank: tuple[torch.Tensor, torch.Tensor] | None = None,
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """y [M, N] = x W^T with W[n, 4j:4j+4] = scales[n, 4j // group] * codebook[codes[n, j]]."""
    if codebook.dim() != 2 or tuple(codebook.shape) != (256, 4):
        raise ValueError(f"VQ codebook must have shape (256, 4), got {tuple(codebook.shape)}")
    if x.dim() == 2 and codes.dim() == 2 and codes.shape[1] * 4 != x.shape[1]:
        raise ValueError(f"VQ codes hold {codes.shape[1] * 4} weights per row but x has K={x.shape[1]}")
    return lut_matmul(
        x, codes, scales, codebook, bits=2, group_size=group_size, table_mode=BYTE_TABLE,
        lowrank=lowrank, config=config,
    )
