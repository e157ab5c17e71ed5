"""Quantizer registry: a config type names its quantizer (one handler per config class)."""

from __future__ import annotations

from typing import Callable, Union

import torch

from codesign.compress.integer import IntConfig, quantize_int
from codesign.compress.kmeans import KMeansConfig, quantize_kmeans
from codesign.compress.qtensor import ScalarQuantizedWeight, VQWeight
from codesign.compress.vq import VQConfig, quantize_vq

__all__ = ["BaseConfig", "QUANTIZERS", "quantize_base"]

BaseConfig = Union[KMeansConfig, IntConfig, VQConfig]

QUANTIZERS: dict[type, Callable[..., Union[ScalarQuantizedWeight, VQWeight]]] = {
    KMeansConfig: quantize_kmeans,
    IntConfig: quantize_int,
    VQConfig: quantize_vq,
}


def quantize_base(weight: torch.Tensor, config: BaseConfig) -> Union[ScalarQuantizedWeight, VQWeight]:
    """Quantize with the quantizer registered for the config's type."""
    handler = QUANTIZERS.get(type(config))
    if handler is None:
        raise ValueError(f"no quantizer for config type {type(config).__name__}")
    return handler(weight, config)
