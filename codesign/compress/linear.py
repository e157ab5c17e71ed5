"""One entry point for every quantizer, and a drop-in replacement for torch.nn.Linear."""

from __future__ import annotations

from typing import Optional, Union

import torch

from codesign.compress.matmul import KERNELS, lowbit_matmul
from codesign.compress.qer import QERConfig, quantize_qer
from codesign.compress.qtensor import QuantizedWeight
from codesign.compress.registry import BaseConfig, quantize_base

__all__ = ["CompressConfig", "quantize", "QuantizedLinear"]

CompressConfig = Union[BaseConfig, QERConfig]


def quantize(weight: torch.Tensor, config: CompressConfig, covariance: Optional[torch.Tensor] = None) -> QuantizedWeight:
    """Quantize W[N, K] with the method the config names (covariance: E[x x^T], for scaled QER and SRR)."""
    if isinstance(config, QERConfig):
        return quantize_qer(weight, config, covariance)
    return quantize_base(weight, config)


class QuantizedLinear(torch.nn.Module):
    """y = x Ŵ^T + b with Ŵ stored quantized; the matmul goes through lowbit_matmul."""

    def __init__(self, weight: QuantizedWeight, bias: Optional[torch.Tensor] = None, kernel: str = "auto") -> None:
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}: choose one of {', '.join(KERNELS)}")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
        self.qweight = weight
        self.kernel = kernel
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
        self.out_features, self.in_features = weight.shape

    @classmethod
    def from_linear(
        cls,
        linear: torch.nn.Linear,
        config: CompressConfig,
        covariance: Optional[torch.Tensor] = None,
        kernel: str = "auto",
    ) -> "QuantizedLinear":
        """Quantize an nn.Linear's weight; its bias is kept as is."""
        weight = quantize(linear.weight.detach().float().contiguous(), config, covariance)
        return cls(weight, linear.bias, kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in_features] -> [..., out_features]."""
        y = lowbit_matmul(x.contiguous(), self.qweight, kernel=self.kernel)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, method={self.qweight.method}"
