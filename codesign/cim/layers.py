"""torch layers on simulated CIM chips, model conversion and batched Monte-Carlo over chips.

``CIMLinear`` and ``CIMConv2d`` keep their float weight and bias (digital) and a
:class:`~codesign.cim.crossbar.Crossbar`. ``program(seed, n_chips)`` draws C chips once;
``drift_to(t)`` ages them; the forward pass adds read noise and converter effects, and with
gradients enabled records the read for a straight-through backward (:mod:`.hwa`). With
``CIMConfig.ideal(exact=True)`` a layer is ``F.linear``/``F.conv2d`` itself, bit for bit. With C chips a layer takes C·B rows,
chip-major; :func:`chip_inputs` builds such a batch and :func:`evaluate_chips` runs a whole
Monte-Carlo (C chips, optionally in chunks that give the same chips).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from codesign.cim.config import CIMConfig
from codesign.cim.crossbar import Crossbar, check_seed, check_time
from codesign.cim.hwa import ChipConvRead, ChipLinearRead, needs_grad
from codesign.cim.sampler import chip_sampler

__all__ = [
    "chip_twin",
    "CIMLinear",
    "CIMConv2d",
    "convert_to_cim",
    "cim_layers",
    "program_model",
    "drift_model",
    "sample_model",
    "chip_inputs",
    "evaluate_chips",
]


class _CIMLayer(nn.Module):
    """Shared programming interface of the CIM layers."""

    crossbar: Crossbar
    layer_id: int
    weight: nn.Parameter

    def _weight_matrix(self) -> Tensor:
        return self.weight.detach().reshape(self.weight.shape[0], -1)

    def program(self, seed: int, n_chips: int = 1, first_chip: int = 0) -> _CIMLayer:
        """Program n_chips chips (chip k seeded by (seed, layer_id, first_chip + k)); same seed, same chips."""
        self.crossbar.program(self._weight_matrix(), seed, n_chips=n_chips, first_chip=first_chip, layer_id=self.layer_id)
        return self

    def sample(self, seed: int, t_seconds: float, n_chips: int = 1, first_chip: int = 0) -> _CIMLayer:
        """Draw n_chips chips read at t_seconds weight by weight (codesign.cim.sampler): the realized weights' own
        distribution at one random number per weight, for training; the chips cannot be aged afterwards."""
        config = self.crossbar.config
        if config.exact:  # nothing is random: the layer is F.linear / F.conv2d
            return self.program(seed, n_chips, first_chip)
        sampler = chip_sampler(config, check_time(t_seconds))
        self.crossbar.sample(self._weight_matrix(), seed, sampler, n_chips=n_chips, first_chip=first_chip,
                             layer_id=self.layer_id)
        return self

    def drift_to(self, t_seconds: float) -> _CIMLayer:
        """Age the programmed chips to t_seconds after programming."""
        self.crossbar.drift_to(t_seconds)
        return self

    @property
    def n_chips(self) -> int:
        """Chips currently programmed (0 before program)."""
        return self.crossbar.n_chips

    def realized_weights(self, read_noise: bool = False) -> Tensor:
        """The weights each chip realizes now, shaped (C, *weight.shape); converters not included."""
        return self.crossbar.realized_weights(read_noise).reshape(self.n_chips, *self.weight.shape)


class CIMLinear(_CIMLayer):
    """nn.Linear computed on simulated CIM crossbars (bias added digitally)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 config: CIMConfig | None = None, layer_id: int = 0) -> None:
        super().__init__()
        config = config if config is not None else CIMConfig()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        self.layer_id = check_seed(layer_id, "layer_id")
        self.crossbar = Crossbar(in_features, out_features, config)

    @classmethod
    def from_linear(cls, linear: nn.Linear, config: CIMConfig, layer_id: int = 0) -> CIMLinear:
        """A CIM copy of an nn.Linear (weights copied; not yet programmed)."""
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, config, layer_id)
        layer.to(device=linear.weight.device, dtype=linear.weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(linear.weight)
            if linear.bias is not None:
                layer.bias.copy_(linear.bias)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        """Crossbar matmul over the last axis, then the digital bias."""
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (..., {self.in_features})")
        lead = x.shape[:-1]
        if self.crossbar.config.exact:
            self.crossbar.chip_batch(x.reshape(-1, self.in_features).shape[0])  # programmed, whole chips
            return F.linear(x, self.weight, self.bias)
        rows = x.reshape(-1, self.in_features)
        if needs_grad(x, self):
            y = ChipLinearRead.apply(rows, self.weight, self.bias, self.crossbar)
        else:
            y = self.crossbar(rows, self.bias)
        return y.reshape(*lead, self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _same_padding(kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    (kh, kw), (dh, dw) = kernel, dilation
    th, tw = dh * (kh - 1), dw * (kw - 1)
    return tw // 2, tw - tw // 2, th // 2, th - th // 2  # F.pad order: left, right, top, bottom


def _window_amax(x: Tensor, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
                 out_hw: tuple[int, int]) -> Tensor:
    """max |x| over every convolution window of a padded (N, C, H, W) input, all channels: (N, H_out, W_out).

    The channel max of |x|, then one max pooling of it over the windows (a window's max is the max of its
    channels' maxima): exact, and much less work than reducing unfolded patches.
    """
    a = x.abs().amax(dim=1, keepdim=True) if x.shape[1] > 1 else x[:, :1].abs()
    out = F.max_pool2d(a, kernel, stride, 0, dilation)[:, 0]
    assert out.shape[1:] == out_hw  # the read's windows
    return out if out.is_contiguous() else out.contiguous()


class CIMConv2d(_CIMLayer):
    """nn.Conv2d computed on simulated CIM crossbars: every input window is one crossbar read."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] | str = 0,
                 dilation: int | tuple[int, int] = 1, bias: bool = True,
                 config: CIMConfig | None = None, layer_id: int = 0) -> None:
        super().__init__()
        config = config if config is not None else CIMConfig()
        pair = nn.modules.utils._pair
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.dilation = pair(kernel_size), pair(stride), pair(dilation)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"padding={padding!r}: expected 'same', 'valid' or integers")
            if padding == "same" and self.stride != (1, 1):
                raise ValueError(f"padding='same' needs stride 1, got stride={self.stride}")
            pads = _same_padding(self.kernel_size, self.dilation) if padding == "same" else (0, 0, 0, 0)
        else:
            ph, pw = pair(padding)
            pads = (pw, pw, ph, ph)
        self.pads = pads
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, *self.kernel_size))
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        self.layer_id = check_seed(layer_id, "layer_id")
        fan_in = in_channels * self.kernel_size[0] * self.kernel_size[1]
        self.crossbar = Crossbar(fan_in, out_channels, config)

    @classmethod
    def from_conv(cls, conv: nn.Conv2d, config: CIMConfig, layer_id: int = 0) -> CIMConv2d:
        """A CIM copy of an nn.Conv2d (groups=1, zero padding; weights copied; not yet programmed)."""
        if conv.groups != 1:
            raise ValueError(f"Conv2d with groups={conv.groups}: only groups=1 maps onto a crossbar here")
        if conv.padding_mode != "zeros":
            raise ValueError(f"Conv2d with padding_mode={conv.padding_mode!r}: only 'zeros' is supported")
        layer = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.bias is not None, config, layer_id)
        layer.to(device=conv.weight.device, dtype=conv.weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(conv.weight)
            if conv.bias is not None:
                layer.bias.copy_(conv.bias)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        """Each output position is one crossbar read of its input window, read in place (no unfolded copy)."""
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (batch, {self.in_channels}, H, W)")
        self.crossbar.chip_batch(x.shape[0])
        (left, right, top, bottom) = self.pads
        symmetric = left == right and top == bottom
        if self.crossbar.config.exact and symmetric:
            return F.conv2d(x, self.weight, self.bias, self.stride, (top, left), self.dilation)
        grad = needs_grad(x, self)
        if grad and symmetric and not self.crossbar.config.exact:  # padded inside the read: the backward is the
            return ChipConvRead.apply(x, self.weight, self.bias, self, (top, left))  # convolution's, with its padding
        if any(self.pads):
            x = F.pad(x, self.pads)
        if self.crossbar.config.exact:
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation)
        if grad:
            return ChipConvRead.apply(x, self.weight, self.bias, self, (0, 0))
        return self._read(x)[0]

    def _read(self, x: Tensor, saturation: bool = False) -> tuple[Tensor, Tensor | None]:
        """The crossbar read of every window of a padded input (no gradient); with `saturation`, also the mask
        (N, n_row_tiles·out, H_out, W_out) of the tile partial sums the ADC saturated, channel t·out + o for row
        tile t and output o (None if none)."""
        crossbar = self.crossbar
        chips, batch = crossbar.n_chips, crossbar.chip_batch(x.shape[0])
        n, c_in, h, w = x.shape
        (kh, kw), (sh, sw), (dh, dw) = self.kernel_size, self.stride, self.dilation
        h_out, w_out = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
        if h_out < 1 or w_out < 1:
            raise ValueError(f"input of shape {tuple(x.shape)} (padded): smaller than the kernel {self.kernel_size}")
        s_n, s_c, s_h, s_w = x.stride()
        windows = x.as_strided((chips, c_in, kh, kw, batch, h_out, w_out),
                               (batch * s_n, s_c, dh * s_h, dw * s_w, s_n, sh * s_h, sw * s_w), x.storage_offset())
        amax = _window_amax(x, (kh, kw), (sh, sw), (dh, dw), (h_out, w_out)) \
            if crossbar.uses_vector_amax and not crossbar.fuses_column_read(windows, row_dims=3) else None
        if not saturation:
            y = crossbar.forward_columns(windows, row_dims=3, bias=self.bias, vector_amax=amax)  # (C, out, B, H, W)
            return y.transpose(1, 2).reshape(n, self.out_channels, h_out, w_out), None
        y, saturated = crossbar.forward_columns_saturation(windows, row_dims=3, bias=self.bias, vector_amax=amax)
        if saturated is not None:  # (C, tiles, out, B, H, W) -> (N, tiles·out, H, W)
            saturated = saturated.permute(0, 3, 1, 2, 4, 5).reshape(n, -1, h_out, w_out)
        return y.transpose(1, 2).reshape(n, self.out_channels, h_out, w_out), saturated

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pads={self.pads}, dilation={self.dilation}, bias={self.bias is not None}")


def cim_layers(model: nn.Module) -> list[_CIMLayer]:
    """The CIM layers of a model, in module order."""
    return [m for m in model.modules() if isinstance(m, _CIMLayer)]


def _replace(module: nn.Module, config: CIMConfig, counter: Iterator[int]) -> None:
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            setattr(module, name, CIMLinear.from_linear(child, config, next(counter)))
        elif isinstance(child, nn.Conv2d):
            setattr(module, name, CIMConv2d.from_conv(child, config, next(counter)))
        else:
            _replace(child, config, counter)


def convert_to_cim(model: nn.Module, config: CIMConfig, inplace: bool = False) -> nn.Module:
    """Replace every nn.Linear and nn.Conv2d by its CIM layer (numbered in module order)."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model={type(model).__name__}: expected a torch.nn.Module")
    if not isinstance(config, CIMConfig):
        raise ValueError(f"config={config!r}: expected a CIMConfig")
    if isinstance(model, (nn.Linear, nn.Conv2d)):
        model = nn.Sequential(model)  # a bare layer: convert it inside a container
    if not any(isinstance(m, (nn.Linear, nn.Conv2d)) for m in model.modules()):
        raise ValueError(f"model {type(model).__name__} has no nn.Linear or nn.Conv2d layer to convert")
    if not inplace:
        model = copy.deepcopy(model)
    counter = iter(range(1 << 30))
    _replace(model, config, counter)
    return model


def _require_layers(model: nn.Module) -> list[_CIMLayer]:
    layers = cim_layers(model)
    if not layers:
        raise ValueError(f"model {type(model).__name__} has no CIM layer: convert it with convert_to_cim first")
    return layers


def program_model(model: nn.Module, seed: int, n_chips: int = 1, first_chip: int = 0) -> nn.Module:
    """Program every CIM layer of a model onto n_chips chips (layer k uses its own seed stream)."""
    for layer in _require_layers(model):
        layer.program(seed, n_chips=n_chips, first_chip=first_chip)
    return model


def sample_model(model: nn.Module, seed: int, t_seconds: float, n_chips: int = 1, first_chip: int = 0) -> nn.Module:
    """Draw every CIM layer's chips read at t_seconds weight by weight (_CIMLayer.sample): HWA training's fast chips."""
    for layer in _require_layers(model):
        layer.sample(seed, t_seconds, n_chips=n_chips, first_chip=first_chip)
    return model


def drift_model(model: nn.Module, t_seconds: float) -> nn.Module:
    """Age every CIM layer of a model to t_seconds after programming."""
    for layer in _require_layers(model):
        layer.drift_to(t_seconds)
    return model


def chip_inputs(x: Tensor, n_chips: int) -> Tensor:
    """The same inputs for every chip, stacked chip-major: (n_chips·B, ...)."""
    if not isinstance(n_chips, int) or n_chips < 1:
        raise ValueError(f"n_chips={n_chips!r}: must be a positive integer")
    return x.unsqueeze(0).expand(n_chips, *x.shape).reshape(n_chips * x.shape[0], *x.shape[1:])


@torch.no_grad()
def evaluate_chips(model: nn.Module, x: Tensor, seed: int, n_chips: int, t_seconds: float = 0.0,
                   chips_per_pass: int | None = None) -> Tensor:
    """Outputs of n_chips simulated chips on inputs x, shaped (n_chips, B, ...).

    Chips are programmed chips_per_pass at a time (all at once by default) and each pass
    evaluates its chips in one batched forward; chip k is the same whatever the chunking.
    """
    layers = _require_layers(model)
    if not isinstance(n_chips, int) or n_chips < 1:
        raise ValueError(f"n_chips={n_chips!r}: must be a positive integer")
    per_pass = n_chips if chips_per_pass is None else chips_per_pass
    if not isinstance(per_pass, int) or per_pass < 1:
        raise ValueError(f"chips_per_pass={chips_per_pass!r}: must be a positive integer")
    outputs = []
    for first in range(0, n_chips, per_pass):
        count = min(per_pass, n_chips - first)
        for layer in layers:
            layer.program(seed, n_chips=count, first_chip=first)
            layer.drift_to(t_seconds)
        y = model(chip_inputs(x, count))
        outputs.append(y.view(count, x.shape[0], *y.shape[1:]))
    return torch.cat(outputs) if len(outputs) > 1 else outputs[0]


def chip_twin(model: nn.Module, config) -> nn.Module:  # noqa: ANN001
    """A CIM copy of a float network whose weights and biases are the float network's own parameters."""
    twin = convert_to_cim(copy.deepcopy(model), config, inplace=True)
    float_layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    cim = [m for m in twin.modules() if hasattr(m, "crossbar")]
    for source, target in zip(float_layers, cim):
        target.weight = source.weight
        target.bias = source.bias
    return twin
