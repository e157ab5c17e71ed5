"""y = x Ŵ^T for quantized weights: the Triton kernel where it can run, the torch reference elsewhere.

kernel="auto" runs the Triton kernels for float16/bfloat16 activations on a CUDA GPU of compute
capability >= 8.0 with Triton installed; anywhere else it falls back to the torch reference and
warns once per reason. kernel="triton" insists (and raises ValueError where it cannot run); on CPU
tensors it runs Triton's interpreter when TRITON_INTERPRET=1 was set before the kernels were
imported — how the tests check the kernels without a GPU. kernel="torch" is the reference.
The rule is codesign.kernels.dispatch's, shared with the attention kernels.
"""

from __future__ import annotations

import torch

from codesign.compress.qtensor import LowRankQuantizedWeight, QuantizedWeight, ScalarQuantizedWeight, VQWeight
from codesign.compress.validate import check_activations
from codesign.kernels.dispatch import KERNELS, device_name, reset_fallback_warnings, run_kernel_or_reference
from codesign.kernels.dispatch import unsupported_reason as triton_unsupported_reason

__all__ = ["KERNELS", "kernel_arguments", "lowbit_matmul", "reference_matmul", "triton_unsupported_reason", "reset_fallback_warnings"]


def reference_matmul(x: torch.Tensor, weight: QuantizedWeight) -> torch.Tensor:
    """The torch reference: x Q^T (+ (x R^T) L^T) in float32 (float64 for float64 x), cast to x's dtype."""
    n, k = weight.shape
    check_activations(x, k)
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    flat = x.reshape(-1, k).to(compute)
    base = weight.base if isinstance(weight, LowRankQuantizedWeight) else weight
    y = flat @ base.dequantize().to(device=x.device, dtype=compute).T
    if isinstance(weight, LowRankQuantizedWeight) and weight.rank:
        left = weight.left.to(device=x.device, dtype=compute)
        right = weight.right.to(device=x.device, dtype=compute)
        y = y + (flat @ right.T) @ left.T
    return y.to(x.dtype).reshape(*x.shape[:-1], n)


def kernel_arguments(weight: QuantizedWeight) -> dict:
    """Keyword arguments of codesign.kernels.lut_matmul.lut_matmul (all but x and config) for this weight."""
    from codesign.kernels.lut_matmul import BYTE_TABLE, GROUP_CODEBOOK, LAYER_CODEBOOK  # noqa: PLC0415

    lowrank = None
    base = weight
    if isinstance(weight, LowRankQuantizedWeight):
        base = weight.base
        lowrank = (weight.left, weight.right) if weight.rank else None
    if isinstance(base, VQWeight):
        table = base.codebook().contiguous()
        return dict(codes=base.codes, scales=base.scales, table=table, bits=2, group_size=base.group_size,
                    table_mode=BYTE_TABLE, lowrank=lowrank)
    assert isinstance(base, ScalarQuantizedWeight)
    if base.per_group_codebook:
        mode, table = GROUP_CODEBOOK, base.codebook
    elif base.bits in (1, 2, 4):
        mode, table = BYTE_TABLE, base.byte_table()
    else:
        mode, table = LAYER_CODEBOOK, base.codebook
    return dict(codes=base.packed, scales=base.scales, table=table, bits=base.bits, group_size=base.group_size,
                table_mode=mode, lowrank=lowrank)


def _triton_matmul(x2d: torch.Tensor, weight: QuantizedWeight, autotune: bool, budget_s: float) -> torch.Tensor:
    from codesign.kernels import tuning  # noqa: PLC0415
    from codesign.kernels.lut_matmul import lut_matmul  # noqa: PLC0415

    args = kernel_arguments(weight)
    devices = {t.device for t in (args["codes"], args["scales"], args["table"])}
    if devices != {x2d.device}:
        raise ValueError(f"weight tensors are on {sorted(str(d) for d in devices)} but x is on {x2d.device}")
    rank = args["lowrank"][0].shape[1] if args["lowrank"] is not None else 0
    problem = tuning.Problem(
        x2d.shape[0], weight.shape[0], weight.shape[1], args["bits"], args["group_size"], rank,
        str(x2d.dtype).replace("torch.", ""), args["table_mode"],
    )
    gpu = device_name(x2d)
    config = tuning.lookup_config(problem, gpu)
    cached = problem.cache_key() in tuning.read_tuned(tuning.cache_file(gpu))
    if autotune and not cached:
        sync = torch.cuda.synchronize if x2d.device.type == "cuda" else (lambda: None)
        config = tuning.autotune(problem, gpu, lambda c: lut_matmul(x2d, config=c, **args),
                                 budget_s=budget_s, synchronize=sync)
    y = lut_matmul(x2d, config=config, **args)
    base = weight.base if isinstance(weight, LowRankQuantizedWeight) else weight
    offsets = base.zero_offsets() if isinstance(base, ScalarQuantizedWeight) else None
    if offsets is not None:  # zero points: y -= (x summed per group) @ (zero × scale)^T, a [M, K/g] x [K/g, N] product
        sums = x2d.float().view(x2d.shape[0], -1, base.group_size).sum(dim=2)
        y = (y.float() - sums @ offsets.to(x2d.device).T).to(x2d.dtype)
    return y


def lowbit_matmul(
    x: torch.Tensor,
    weight: QuantizedWeight,
    *,
    kernel: str = "auto",
    autotune: bool = False,
    autotune_budget_s: float = 20.0,
) -> torch.Tensor:
    """y [..., N] = x [..., K] Ŵ^T for a quantized weight (scalar, VQ or Q + L R).

    autotune=True times the candidate launch configurations once per problem shape on this GPU
    model (at most autotune_budget_s seconds) and caches the winner on disk.
    """
    n, k = weight.shape
    check_activations(x, k)

    def run_triton() -> torch.Tensor:
        y = _triton_matmul(x.reshape(-1, k), weight, autotune, autotune_budget_s)
        return y.reshape(*x.shape[:-1], n)

    return run_kernel_or_reference(kernel, x, run_triton, lambda: reference_matmul(x, weight), "matmul")
