"""Layer workloads of a model (what a crossbar has to compute per sample) and built-in models.

:func:`layer_workloads` runs one example input through a model and records, for every
Linear/Conv2d layer (plain or CIM), its fan-in, outputs, matrix-vector products per sample
and activation sizes; with ``measure_activity`` it also records the mean DAC utilization
(mean |x| / max |x| of each input vector) and the mean |w| / tile max of the weights, which
the energy model would otherwise assume.

Built-in models (``MODEL`` of ``codesign cim energy``): ``mlp_digits``, ``cnn_digits``
(scikit-learn digits, 1×8×8), ``mlp_mnist``, ``cnn_mnist`` (1×28×28), a spec
``mlp:784-256-10`` (an MLP with these widths), or ``linear:IN:OUT`` (one layer).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from codesign.cim.crossbar import TileGrid, tile_weights
from codesign.cim.layers import CIMConv2d, CIMLinear
from codesign.limits import check_fits_in_memory

__all__ = ["LayerWorkload", "layer_workloads", "build_model", "BUILTIN_MODELS"]


@dataclass(frozen=True)
class LayerWorkload:
    """One weight layer's work per input sample."""

    name: str
    kind: str  # "linear" or "conv"
    fan_in: int  # crossbar rows used (in_features, or C_in·k_h·k_w)
    fan_out: int  # crossbar columns used (out_features, or C_out)
    mvms: int  # matrix-vector products per sample (1, or output positions of a conv)
    input_values: int  # activation values read per sample (the layer's input tensor)
    output_values: int  # activation values written per sample
    mean_abs_input: float | None = None  # measured mean |x|/max|x| per input vector, if asked
    mean_abs_weight: float | None = None  # measured mean |w|/tile max (256×256 tiles), if asked

    @property
    def macs(self) -> int:
        """Multiply-accumulates per sample."""
        return self.mvms * self.fan_in * self.fan_out


def _mlp(widths: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _cnn(side: int, classes: int = 10) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * (side // 4) ** 2, classes),
    )


BUILTIN_MODELS: dict[str, str] = {
    "mlp_digits": "MLP 64-128-10 on scikit-learn digits (1x8x8)",
    "cnn_digits": "CNN conv16-pool-conv32-pool-fc10 on digits (1x8x8)",
    "mlp_mnist": "MLP 784-256-128-10 on MNIST (1x28x28)",
    "cnn_mnist": "CNN conv16-pool-conv32-pool-fc10 on MNIST (1x28x28)",
    "mlp:W0-W1-...": "an MLP with these layer widths, e.g. mlp:784-256-10",
    "linear:IN:OUT": "one fully connected layer, e.g. linear:4096:4096",
}


def _widths(text: str, name: str) -> list[int]:
    try:
        values = [int(v) for v in text.replace(":", "-").split("-")]
    except ValueError:
        raise ValueError(f"model {name!r}: widths must be integers, e.g. mlp:784-256-10") from None
    if any(v < 1 for v in values):
        raise ValueError(f"model {name!r}: widths must be positive")
    return values


def build_model(name: str, device: str | torch.device | None = None) -> tuple[nn.Module, tuple[int, ...]]:
    """A built-in model (untrained) and the shape of one input sample; on ``device="meta"`` its tensors have shapes
    and no storage, which is all :func:`layer_workloads` (without ``measure_activity``) needs."""
    meta = device is not None and torch.device(device).type == "meta"
    if name.startswith(("mlp:", "linear:")) and not meta:
        widths = _widths(name.split(":", 1)[1], name)
        weights = sum(a * b for a, b in zip(widths, widths[1:]))
        check_fits_in_memory(8 * weights, f"model {name!r} ({weights:,} weights)")  # float32 weights + their init
    with torch.device(device) if device is not None else nullcontext():
        return _build_model(name)


def _build_model(name: str) -> tuple[nn.Module, tuple[int, ...]]:
    if name == "mlp_digits":
        return _mlp([64, 128, 10]), (1, 8, 8)
    if name == "cnn_digits":
        return _cnn(8), (1, 8, 8)
    if name == "mlp_mnist":
        return _mlp([784, 256, 128, 10]), (1, 28, 28)
    if name == "cnn_mnist":
        return _cnn(28), (1, 28, 28)
    if name.startswith("mlp:"):
        widths = _widths(name[4:], name)
        if len(widths) < 2:
            raise ValueError(f"model {name!r}: an MLP needs at least two widths, e.g. mlp:784-10")
        return _mlp(widths), (widths[0],)
    if name.startswith("linear:"):
        widths = _widths(name[7:], name)
        if len(widths) != 2:
            raise ValueError(f"model {name!r}: expected linear:IN:OUT, e.g. linear:4096:4096")
        return nn.Sequential(nn.Linear(widths[0], widths[1])), (widths[0],)
    raise ValueError(f"unknown model {name!r}: choose one of {', '.join(BUILTIN_MODELS)}")


def _mean_abs_input(x: Tensor) -> float:
    """Mean |x| / max|x| over the input vectors (rows) of a 2-D batch."""
    amax = x.abs().amax(dim=1, keepdim=True)
    mask = amax.squeeze(1) > 0
    if not bool(mask.any()):
        return 0.0
    return float((x[mask].abs() / amax[mask]).mean())


def _mean_abs_weight(weight: Tensor) -> float:
    matrix = weight.detach().reshape(weight.shape[0], -1)
    grid = TileGrid(matrix.shape[1], matrix.shape[0], 256, 256)
    normalized, _ = tile_weights(matrix, grid)
    return float(normalized.abs().sum() / matrix.numel())  # padding holds zeros


@torch.no_grad()
def layer_workloads(model: nn.Module, example: Tensor, measure_activity: bool = False) -> list[LayerWorkload]:
    """Workloads of every Linear/Conv2d layer seen when the model runs on ``example`` (a batch)."""
    records: list[LayerWorkload] = []
    hooks = []

    def hook(name: str):
        def record(module: nn.Module, inputs: tuple[Tensor, ...], output: Tensor) -> None:
            x = inputs[0]
            if isinstance(module, (nn.Conv2d, CIMConv2d)):
                kind = "conv"
                fan_in = module.weight[0].numel()
                mvms = output.shape[2] * output.shape[3]
                rows = None
                if measure_activity:
                    pads = module.pads if isinstance(module, CIMConv2d) else None
                    padding = (pads[2], pads[0]) if pads else module.padding
                    rows = torch.nn.functional.unfold(x, module.kernel_size, dilation=module.dilation,
                                                      padding=padding, stride=module.stride)
                    rows = rows.transpose(1, 2).reshape(-1, fan_in)
            else:
                kind = "linear"
                fan_in = module.weight.shape[1]
                mvms = x[0].numel() // fan_in
                rows = x.reshape(-1, fan_in) if measure_activity else None
            records.append(LayerWorkload(
                name=name, kind=kind, fan_in=fan_in, fan_out=module.weight.shape[0], mvms=mvms,
                input_values=x[0].numel(), output_values=output[0].numel(),
                mean_abs_input=_mean_abs_input(rows) if rows is not None else None,
                mean_abs_weight=_mean_abs_weight(module.weight) if measure_activity else None,
            ))
        return record

    for name, module in model.named_modules():
        if isinstance(module, (nn.Linear, nn.Conv2d, CIMLinear, CIMConv2d)):
            hooks.append(module.register_forward_hook(hook(name or type(module).__name__)))
    try:
        if any(isinstance(m, (CIMLinear, CIMConv2d)) and m.n_chips > 1 for m in model.modules()):
            raise ValueError("layer_workloads: program the CIM layers with one chip (n_chips=1) first")
        model(example)
    finally:
        for h in hooks:
            h.remove()
    if not records:
        raise ValueError(f"model {type(model).__name__} has no nn.Linear or nn.Conv2d layer")
    return records
