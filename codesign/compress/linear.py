"""One entry point for every quantizer, and a drop-in replacement for torch.nn.Linear."""

from __future__ import annotations

import sys
from typing import Any

import torch

from codesign.compress.matmul import KERNELS, lowbit_matmul
from codesign.compress.qtensor import QuantizedWeight, flatten_weight, unflatten_weight
from codesign.compress.registry import quantize

__all__ = ["CompressConfig", "quantize", "QuantizedLinear", "is_linear_layer", "as_linear"]

#: any config registered with codesign.compress.registry (KMeansConfig, IntConfig, VQConfig, QERConfig, ...)
CompressConfig = Any


def _conv1d_type() -> type | None:
    # transformers' Conv1D (GPT-2's linear layer); a model holding one has imported it already
    return getattr(sys.modules.get("transformers.pytorch_utils"), "Conv1D", None)


def is_linear_layer(module: torch.nn.Module) -> bool:
    """True for an nn.Linear and for transformers' Conv1D (a linear layer whose weight is stored [in, out])."""
    conv1d = _conv1d_type()
    return isinstance(module, torch.nn.Linear) or (conv1d is not None and isinstance(module, conv1d))


def as_linear(module: torch.nn.Module) -> torch.nn.Linear:
    """The module itself if an nn.Linear; a Conv1D as the nn.Linear that computes the same (weight transposed, shared)."""
    if isinstance(module, torch.nn.Linear):
        return module
    if not is_linear_layer(module):
        raise ValueError(f"a {type(module).__name__} is not a linear layer (nn.Linear or transformers' Conv1D)")
    n_in, n_out = module.weight.shape
    linear = torch.nn.Linear(n_in, n_out, bias=module.bias is not None, device="meta")
    # the same storage, read as [out, in]: no copy, and nothing written back to the Conv1D
    linear.weight = torch.nn.Parameter(module.weight.detach().t(), requires_grad=False)
    if module.bias is not None:
        linear.bias = torch.nn.Parameter(module.bias.detach(), requires_grad=False)
    return linear


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
