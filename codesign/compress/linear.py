"""One entry point for every quantizer, and a drop-in replacement for torch.nn.Linear."""

from __future__ import annotations

from typing import Any

import torch

from codesign.compress.matmul import KERNELS, lowbit_matmul
from codesign.compress.qtensor import QuantizedWeight, flatten_weight, unflatten_weight
from codesign.compress.registry import quantize

__all__ = ["CompressConfig", "quantize", "QuantizedLinear"]

#: any config registered with codesign.compress.registry (KMeansConfig, IntConfig, VQConfig, QERConfig, ...)
CompressConfig = Any


class QuantizedLinear(torch.nn.Module):
    """y = x Ŵ^T + b with Ŵ stored quantized; the matmul goes through lowbit_matmul.

    The stored tensors (codes, scales, codebook or VQ map, low-rank factors) are registered buffers,
    so state_dict / load_state_dict, .to(device) and copy.deepcopy carry them; their dtypes are part
    of the storage format and stay as they are under .to(dtype) / .half() (the bias follows the model).
    """

    def __init__(self, weight: QuantizedWeight, bias: torch.Tensor | None = None, kernel: str = "auto") -> None:
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}: choose one of {', '.join(KERNELS)}")
        if bias is not None and tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
        self.layout, tensors = flatten_weight(weight)
        for name, tensor in tensors.items():
            self.register_buffer(name, tensor.detach())
        self._stored = tuple(tensors)
        self.kernel = kernel
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
        self.out_features, self.in_features = weight.shape

    @property
    def qweight(self) -> QuantizedWeight:
        """The weight container over this module's buffers (no copy)."""
        return unflatten_weight(self.layout, {name: self._buffers[name] for name in self._stored})

    def _apply(self, fn, recurse: bool = True):  # noqa: ANN001, ANN202 - torch's signature
        # .to(dtype) / .half() must not re-encode the stored format: keep each buffer's dtype, follow only its device
        before = {name: self._buffers[name] for name in self._stored}
        super()._apply(fn, recurse)
        for name, old in before.items():
            new = self._buffers[name]
            if new.dtype != old.dtype:
                self._buffers[name] = old.to(device=new.device)
        return self

    @classmethod
    def from_linear(
        cls,
        linear: torch.nn.Linear,
        config: CompressConfig,
        covariance: torch.Tensor | None = None,
        kernel: str = "auto",
    ) -> QuantizedLinear:
        """Quantize an nn.Linear's weight; its bias is kept as is."""
        weight = quantize(linear.weight.detach().float().contiguous(), config, covariance)
        return cls(weight, linear.bias, kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., in_features] -> [..., out_features]."""
        y = lowbit_matmul(x.contiguous(), self.qweight, kernel=self.kernel)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, method={self.layout['method']}"
