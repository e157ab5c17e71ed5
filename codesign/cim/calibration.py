"""Input-range calibration: a fixed DAC full scale per CIM layer from a percentile of its inputs on a batch.

aihwkit calibrates (or learns) a static input range per layer instead of scaling each input vector by its
own max |x|; inputs beyond the range are clipped by the DAC. ``calibrate_input_ranges(model, x)`` runs
the programmed CIM model once on a calibration batch, records |input| of every CIM layer, and sets each
layer's ``ConverterConfig.input_range`` to the given percentile of them (all layers from the same pass,
which reads with the per-vector scaling of the config they had).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor, nn

from codesign.cim.layers import cim_layers

__all__ = ["calibrate_input_ranges", "set_input_range"]

_QUANTILE_MAX = 1 << 24  # torch.quantile's input limit: larger inputs are subsampled with a fixed stride


def set_input_range(layer: nn.Module, input_range: float | None) -> None:
    """Give one CIM layer a fixed DAC full scale (None: per-vector scaling again)."""
    crossbar = layer.crossbar
    crossbar.set_converter(dataclasses.replace(crossbar.config.converter, input_range=input_range))


@torch.no_grad()
def calibrate_input_ranges(model: nn.Module, x: Tensor, percentile: float = 99.995) -> list[float]:
    """Set every CIM layer's input_range to the percentile of |its inputs| on batch x; returns the ranges."""
    if isinstance(percentile, bool) or not isinstance(percentile, (int, float)) or not 0 < percentile <= 100:
        raise ValueError(f"percentile={percentile!r}: must be a number in (0, 100]")
    layers = cim_layers(model)
    if not layers:
        raise ValueError(f"model {type(model).__name__} has no CIM layer: convert it with convert_to_cim first")
    seen: dict[int, Tensor] = {}
    hooks = [layer.register_forward_pre_hook(lambda m, args, i=i: seen.__setitem__(i, args[0].detach().abs().flatten()))
             for i, layer in enumerate(layers)]
    try:
        model(x)
    finally:
        for h in hooks:
            h.remove()
    ranges = []
    for i, layer in enumerate(layers):
        values = seen[i].float()
        if values.numel() > _QUANTILE_MAX:
            values = values[:: math.ceil(values.numel() / _QUANTILE_MAX)]
        r = float(torch.quantile(values, percentile / 100.0)) if values.numel() else 0.0
        r = r if r > 0 else 1.0  # an all-zero input keeps a unit range
        set_input_range(layer, r)
        ranges.append(r)
    return ranges
