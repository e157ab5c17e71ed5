"""Triton LUT-dequant matmul y = x W^T (+ (x R^T) L^T) for packed low-bit weight codes.

Weights arrive in the storage formats of docs/compress_formats.md: codes [N, row_bytes] uint8,
fp16 scales [N, K / group], and a table that turns codes into values:

- BYTE_TABLE: [256, 8 / bits] — one gather decodes a whole packed byte (8 weights at 1 bit,
  4 at 2 bits, 2 at 4 bits); the 2-bit VQ format uses the same path with its [256, 4] codebook.
- LAYER_CODEBOOK: [2**bits] — codes are unpacked with shifts, one gather per weight (3, 8 bits).
- GROUP_CODEBOOK: [N, K / group, 2**bits] — a codebook per group.

Two kernels share the decode: a broadcast-reduce GEMV for M <= 4 rows (split-K with fp32 atomics)
and a tl.dot GEMM. With HAS_LOWRANK both add (x R^T) L^T in the same launch: x R^T accumulates in
the K loop that streams the codes, and L is applied once per output tile.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from codesign.kernels.dispatch import is_interpreted as _is_interpreted
from codesign.kernels.tuning import KernelConfig, Problem, heuristic_config

__all__ = [
    "BYTE_TABLE",
    "LAYER_CODEBOOK",
    "GROUP_CODEBOOK",
    "is_interpreted",
    "lut_matmul",
    "lut_gemv_kernel",
    "lut_gemm_kernel",
]

BYTE_TABLE = 0
LAYER_CODEBOOK = 1
GROUP_CODEBOOK = 2


@triton.jit
def _unpack_codes(codes_ptr, rows, cols, mask, row_bytes, K, BITS: tl.constexpr):
    """int32 codes [BN, BK] of the weights at (rows, cols), unpacked from their storage format."""
    base = codes_ptr + rows[:, None] * row_bytes
    if BITS == 3:
        low = tl.load(base + cols[None, :] // 4, mask=mask, other=0).to(tl.int32)
        high = tl.load(base + K // 4 + cols[None, :] // 8, mask=mask, other=0).to(tl.int32)
        code = ((low >> ((cols[None, :] % 4) * 2)) & 3) | (((high >> (cols[None, :] % 8)) & 1) << 2)
    elif BITS == 1 or BITS == 2 or BITS == 4:
        per: tl.constexpr = 8 // BITS
        byte = tl.load(base + cols[None, :] // per, mask=mask, other=0).to(tl.int32)
        code = (byte >> ((cols[None, :] % per) * BITS)) & ((1 << BITS) - 1)
    else:
        code = tl.load(base + cols[None, :], mask=mask, other=0).to(tl.int32)
    return code


@triton.jit
def _dequant_tile(
    codes_ptr, scales_ptr, table_ptr, rows, k0, N, K, row_bytes, n_groups,
    BITS: tl.constexpr, GROUP: tl.constexpr, TABLE_MODE: tl.constexpr, SCALE_PER_TILE: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """float32 weights [BLOCK_N, BLOCK_K] of rows `rows`, columns k0.., zero outside N x K."""
    row_mask = rows < N
    cols = k0 + tl.arange(0, BLOCK_K)
    mask = row_mask[:, None] & (cols[None, :] < K)
    if TABLE_MODE == 0:
        per: tl.constexpr = 8 // BITS
        byte_cols = k0 // per + tl.arange(0, BLOCK_K // per)
        byte_mask = row_mask[:, None] & (byte_cols[None, :] < K // per)
        byte = tl.load(codes_ptr + rows[:, None] * row_bytes + byte_cols[None, :], mask=byte_mask, other=0)
        lanes = tl.arange(0, per)
        vals = tl.load(table_ptr + byte.to(tl.int32)[:, :, None] * per + lanes[None, None, :]).to(tl.float32)
        vals = tl.reshape(vals, (BLOCK_N, BLOCK_K))
    else:
        code = _unpack_codes(codes_ptr, rows, cols, mask, row_bytes, K, BITS)
        if TABLE_MODE == 1:
            vals = tl.load(table_ptr + code).to(tl.float32)
        else:
            group = rows[:, None] * n_groups + cols[None, :] // GROUP
            vals = tl.load(table_ptr + group * (1 << BITS) + code, mask=mask, other=0.0).to(tl.float32)
    if SCALE_PER_TILE:
        scale = tl.load(scales_ptr + rows * n_groups + k0 // GROUP, mask=row_mask, other=0.0).to(tl.float32)
        w = vals * scale[:, None]
    else:
        scale = tl.load(scales_ptr + rows[:, None] * n_groups + cols[None, :] // GROUP, mask=mask, other=0.0)
        w = vals * scale.to(tl.float32)
    return w


@triton.jit
def lut_gemv_kernel(
    x_ptr, codes_ptr, scales_ptr, table_ptr, left_ptr, right_ptr, out_ptr,
    M, N, K, row_bytes, n_groups, rank, k_per_split,
    BITS: tl.constexpr, GROUP: tl.constexpr, TABLE_MODE: tl.constexpr, SCALE_PER_TILE: tl.constexpr,
    HAS_LOWRANK: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
):
    """out[M, N] (fp32) += x W^T over one K slice; few rows of x, weights decoded once per tile."""
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    pid_k = tl.program_id(2)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ms = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    ranks = tl.arange(0, BLOCK_R)
    latent = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    k_start = pid_k * k_per_split
    k_stop = tl.minimum(k_start + k_per_split, K)
    for k0 in range(k_start, k_stop, BLOCK_K):
        w = _dequant_tile(codes_ptr, scales_ptr, table_ptr, rows, k0, N, K, row_bytes, n_groups,
                          BITS, GROUP, TABLE_MODE, SCALE_PER_TILE, BLOCK_N, BLOCK_K)
        cols = k0 + tl.arange(0, BLOCK_K)
        x_mask = (ms[:, None] < M) & (cols[None, :] < K)
        xt = tl.load(x_ptr + ms[:, None] * K + cols[None, :], mask=x_mask, other=0.0).to(tl.float32)
        acc += tl.sum(xt[:, None, :] * w[None, :, :], axis=2)
        if HAS_LOWRANK:
            r_mask = (ranks[:, None] < rank) & (cols[None, :] < K)
            rt = tl.load(right_ptr + ranks[:, None] * K + cols[None, :], mask=r_mask, other=0.0).to(tl.float32)
            latent += tl.sum(xt[:, None, :] * rt[None, :, :], axis=2)
    if HAS_LOWRANK:
        l_mask = (rows[:, None] < N) & (ranks[None, :] < rank)
        lt = tl.load(left_ptr + rows[:, None] * rank + ranks[None, :], mask=l_mask, other=0.0).to(tl.float32)
        acc += tl.sum(latent[:, None, :] * lt[None, :, :], axis=2)
    offs = ms[:, None] * N + rows[None, :]
    out_mask = (ms[:, None] < M) & (rows[None, :] < N)
    if SPLIT_K == 1:
        tl.store(out_ptr + offs, acc, mask=out_mask)
    else:
        tl.atomic_add(out_ptr + offs, acc, mask=out_mask)


@triton.jit
def lut_gemm_kernel(
    x_ptr, codes_ptr, scales_ptr, table_ptr, left_ptr, right_ptr, out_ptr,
    M, N, K, row_bytes, n_groups, rank,
    BITS: tl.constexpr, GROUP: tl.constexpr, TABLE_MODE: tl.constexpr, SCALE_PER_TILE: tl.constexpr,
    HAS_LOWRANK: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, UPCAST: tl.constexpr,
):
    """out[M, N] = x W^T (+ (x R^T) L^T) with tensor-core tl.dot on decoded weight tiles."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    ms = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ranks = tl.arange(0, BLOCK_R)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    latent = tl.zeros((BLOCK_M, BLOCK_R), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        w = _dequant_tile(codes_ptr, scales_ptr, table_ptr, rows, k0, N, K, row_bytes, n_groups,
                          BITS, GROUP, TABLE_MODE, SCALE_PER_TILE, BLOCK_N, BLOCK_K)
        cols = k0 + tl.arange(0, BLOCK_K)
        x_mask = (ms[:, None] < M) & (cols[None, :] < K)
        xt = tl.load(x_ptr + ms[:, None] * K + cols[None, :], mask=x_mask, other=0.0)
        if UPCAST:
            # Triton's CPU interpreter multiplies bf16 as raw uint16 in tl.dot; compute in fp32 there
            xt = xt.to(tl.float32)
        acc = tl.dot(xt, tl.trans(w.to(xt.dtype)), acc)
        if HAS_LOWRANK:
            r_mask = (ranks[:, None] < rank) & (cols[None, :] < K)
            rt = tl.load(right_ptr + ranks[:, None] * K + cols[None, :], mask=r_mask, other=0.0)
            latent = tl.dot(xt, tl.trans(rt.to(xt.dtype)), latent)
    if HAS_LOWRANK:
        l_mask = (rows[:, None] < N) & (ranks[None, :] < rank)
        lt = tl.load(left_ptr + rows[:, None] * rank + ranks[None, :], mask=l_mask, other=0.0).to(tl.float32)
        acc = tl.dot(latent, tl.trans(lt), acc)
    offs = ms[:, None] * N + rows[None, :]
    out_mask = (ms[:, None] < M) & (rows[None, :] < N)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=out_mask)


def is_interpreted() -> bool:
    """True when these kernels were defined under TRITON_INTERPRET=1 (they then run on CPU tensors)."""
    return _is_interpreted(lut_gemm_kernel)


def _check(t: torch.Tensor, name: str, dtypes: tuple[torch.dtype, ...], shape: tuple[int, ...] | None = None):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        raise ValueError(f"{name} dtype {t.dtype} is not one of {', '.join(str(d) for d in dtypes)}")
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(t.shape)}")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")


def _row_bytes(bits: int, k: int, table_mode: int) -> int:
    if table_mode == BYTE_TABLE or bits in (1, 2, 4):
        return k * bits // 8
    return k // 4 + k // 8 if bits == 3 else k


def lut_matmul(
    x: torch.Tensor,
    codes: torch.Tensor,
    scales: torch.Tensor,
    table: torch.Tensor,
    *,
    bits: int,
    group_size: int,
    table_mode: int,
    lowrank: tuple[torch.Tensor, torch.Tensor] | None = None,
    config: KernelConfig | None = None,
) -> torch.Tensor:
    """y [M, N] = x [M, K] W^T (+ (x R^T) L^T) in x's dtype; W given by codes, scales and table."""
    if not 1 <= bits <= 8:
        raise ValueError(f"bits must be in 1..8, got {bits}")
    if table_mode not in (BYTE_TABLE, LAYER_CODEBOOK, GROUP_CODEBOOK):
        raise ValueError(f"unknown table mode {table_mode}")
    if table_mode == BYTE_TABLE and bits not in (1, 2, 4):
        raise ValueError(f"a byte table needs 1, 2 or 4 bits, got {bits}")
    _check(x, "x", (torch.float16, torch.bfloat16))
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D [M, K], got shape {tuple(x.shape)}")
    m, k = x.shape
    n = codes.shape[0]
    if group_size <= 0 or k % group_size:
        raise ValueError(f"group_size {group_size} does not divide K={k}")
    if k % 8:
        raise ValueError(f"K={k} must be a multiple of 8")
    n_groups = k // group_size
    row_bytes = _row_bytes(bits, k, table_mode)
    _check(codes, "codes", (torch.uint8,), (n, row_bytes))
    _check(scales, "scales", (torch.float16,), (n, n_groups))
    table_shapes = {
        BYTE_TABLE: (256, 8 // bits),
        LAYER_CODEBOOK: (1 << bits,),
        GROUP_CODEBOOK: (n, n_groups, 1 << bits),
    }
    _check(table, "table", (torch.float16, torch.float32), table_shapes[table_mode])
    rank = 0
    left = right = scales  # unused placeholders when there is no low-rank term
    if lowrank is not None:
        left, right = lowrank
        rank = left.shape[1] if left.dim() == 2 else -1
        _check(left, "L", (torch.float16, torch.bfloat16, torch.float32), (n, rank))
        _check(right, "R", (torch.float16, torch.bfloat16, torch.float32), (rank, k))
    devices = {t.device for t in (x, codes, scales, table, left, right)}
    if len(devices) != 1:
        raise ValueError(f"all tensors must be on one device, got {sorted(str(d) for d in devices)}")

    problem = Problem(m, n, k, bits, group_size, rank, str(x.dtype).replace("torch.", ""), table_mode)
    config = config or heuristic_config(problem)
    has_lowrank = rank > 0
    interp = is_interpreted()
    common = dict(
        BITS=bits, GROUP=group_size, TABLE_MODE=table_mode,
        SCALE_PER_TILE=group_size % config.block_k == 0, HAS_LOWRANK=has_lowrank,
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, BLOCK_K=config.block_k,
    )
    launch = {} if interp else dict(num_warps=config.num_warps, num_stages=config.num_stages)
    if problem.kind == "gemv":
        block_r = 1 << max(0, (rank - 1).bit_length()) if has_lowrank else 1
        k_per_split = -(-k // (config.split_k * config.block_k)) * config.block_k
        splits = -(-k // k_per_split)
        alloc = torch.zeros if splits > 1 else torch.empty
        out = alloc((m, n), dtype=torch.float32, device=x.device)
        grid = (triton.cdiv(n, config.block_n), triton.cdiv(m, config.block_m), splits)
        lut_gemv_kernel[grid](
            x, codes, scales, table, left, right, out, m, n, k, row_bytes, n_groups, rank, k_per_split,
            BLOCK_R=block_r, SPLIT_K=splits, **common, **launch,
        )
        return out.to(x.dtype)
    block_r = max(16, 1 << max(0, (rank - 1).bit_length())) if has_lowrank else 16
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(m, config.block_m), triton.cdiv(n, config.block_n))
    lut_gemm_kernel[grid](
        x, codes, scales, table, left, right, out, m, n, k, row_bytes, n_groups, rank,
        BLOCK_R=block_r, UPCAST=interp, **common, **launch,
    )
    return out
