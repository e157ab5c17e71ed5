"""y = x Ŵ^T for quantized weights: the Triton kernel where it can run, the torch reference elsewhere.

kernel="auto" runs the Triton kernels for float16/bfloat16 activations on a CUDA GPU of compute
capability >= 8.0 with Triton installed; anywhere else it falls back to the torch reference and
warns once per reason. kernel="triton" insists (and raises ValueError where it cannot run); on CPU
tensors it runs Triton's interpreter when TRITON_INTERPRET=1 was set before the kernels were
imported — how the tests check the kernels without a GPU. kernel="torch" is the reference.
"""

from __future__ import annotations

import functools
import warnings
from typing import Optional

import torch

from codesign.compress.qtensor import LowRankQuantizedWeight, QuantizedWeight, ScalarQuantizedWeight, VQWeight
from codesign.compress.validate import check_activations

__all__ = ["KERNELS", "kernel_arguments", "lowbit_matmul", "reference_matmul", "triton_unsupported_reason", "reset_fallback_warnings"]

KERNELS = ("auto", "triton", "torch")
MIN_CAPABILITY = (8, 0)


@functools.lru_cache(maxsize=None)
def _warn_once(reason: str) -> None:
    warnings.warn(f"codesign.compress: using the torch reference matmul: {reason}", RuntimeWarning, stacklevel=4)


def reset_fallback_warnings() -> None:
    """Forget which fallback reasons were already reported (each is reported once per process)."""
    _warn_once.cache_clear()


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


def _kernels_module():
    from codesign.kernels import lut_matmul  # noqa: PLC0415 - Triton is an optional dependency

    return lut_matmul


def triton_unsupported_reason(x: torch.Tensor) -> Optional[str]:
    """Why the Triton kernels cannot run on x here, or None when they can."""
    try:
        module = _kernels_module()
    except ImportError:
        return "Triton is not installed (pip install 'codesign[gpu]')"
    if x.dtype not in (torch.float16, torch.bfloat16):
        return f"activation dtype {x.dtype} (the kernels take float16 or bfloat16)"
    if x.device.type == "cpu":
        if module.is_interpreted():
            return None
        return "CPU tensors (the kernels need a CUDA GPU, or TRITON_INTERPRET=1 set before import)"
    if x.device.type != "cuda":
        return f"device type {x.device.type!r} (the kernels need a CUDA GPU)"
    if module.is_interpreted():
        return None
    capability = torch.cuda.get_device_capability(x.device)
    if capability < MIN_CAPABILITY:
        name = torch.cuda.get_device_name(x.device)
        return f"GPU {name} has compute capability {capability[0]}.{capability[1]}, below the 8.0 the kernels need"
    return None


def _device_name(x: torch.Tensor) -> str:
    if x.device.type == "cuda":
        return torch.cuda.get_device_name(x.device)
    return "triton-interpreter"


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
    device_name = _device_name(x2d)
    config = tuning.lookup_config(problem, device_name)
    cached = problem.cache_key() in tuning.read_tuned(tuning.cache_file(device_name))
    if autotune and not cached:
        sync = torch.cuda.synchronize if x2d.device.type == "cuda" else (lambda: None)
        config = tuning.autotune(problem, device_name, lambda c: lut_matmul(x2d, config=c, **args),
                                 budget_s=budget_s, synchronize=sync)
    return lut_matmul(x2d, config=config, **args)


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
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}: choose one of {', '.join(KERNELS)}")
    n, k = weight.shape
    check_activations(x, k)
    if kernel == "torch":
        return reference_matmul(x, weight)
    reason = triton_unsupported_reason(x)
    if reason is not None:
        if kernel == "triton":
            raise ValueError(f"kernel='triton' cannot run here: {reason}")
        _warn_once(reason)
        return reference_matmul(x, weight)
    if x.device.type == "cpu" and kernel == "auto":
        # the interpreter is for checking kernels, not for speed
        _warn_once("CPU tensors (auto does not use Triton's interpreter; pass kernel='triton')")
        return reference_matmul(x, weight)
    x2d = x.reshape(-1, k)
    try:
        y = _triton_matmul(x2d, weight, autotune, autotune_budget_s)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a compile or launch failure must not end the caller's run
        if kernel == "triton":
            raise
        _warn_once(f"the Triton kernel failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
        return reference_matmul(x, weight)
    return y.reshape(*x.shape[:-1], n)
