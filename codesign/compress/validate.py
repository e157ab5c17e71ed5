"""Input checks shared by the quantizers and the matmul API: one-line ValueErrors naming the bad value."""

from __future__ import annotations

import torch

__all__ = ["FLOAT_DTYPES", "check_weight", "check_activations"]

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_weight(weight: torch.Tensor) -> None:
    """A weight is a contiguous, finite, 2-D floating-point tensor [N, K]."""
    if not isinstance(weight, torch.Tensor):
        raise ValueError(f"weight must be a torch.Tensor, got {type(weight).__name__}")
    if weight.dim() != 2:
        raise ValueError(f"weight must be 2-D [out_features, in_features], got shape {tuple(weight.shape)}")
    if weight.dtype not in FLOAT_DTYPES:
        raise ValueError(f"weight dtype {weight.dtype} is not a floating-point type")
    if not weight.is_contiguous():
        raise ValueError("weight must be contiguous; call .contiguous() first")
    if not bool(torch.isfinite(weight).all()):
        raise ValueError("weight holds NaN or infinite values")


def check_activations(x: torch.Tensor, in_features: int) -> None:
    """Activations are a contiguous floating-point tensor [..., in_features]."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise ValueError(f"x dtype {x.dtype} is not a floating-point type")
    if x.dim() < 1 or x.shape[-1] != in_features:
        raise ValueError(f"x has shape {tuple(x.shape)}; its last dimension must be in_features={in_features}")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous; call .contiguous() first")
