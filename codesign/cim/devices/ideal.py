"""The ideal device: the programmed conductance is exactly the target, forever, noise-free."""

from __future__ import annotations

import torch
from torch import Tensor

from codesign.cim.config import IdealConfig
from codesign.cim.devices.base import DeviceModel, pair_targets

__all__ = ["IdealDevice"]


class IdealDevice(DeviceModel):
    """G = g_max·|w| on the holding device, 0 on its partner; with ideal converters the matmul is exact."""

    name = "ideal"
    g_max_us = 1.0  # normalized units: there is no physical device behind it

    def __init__(self, config: IdealConfig | None = None) -> None:
        self.config = config or IdealConfig()

    def program(self, a: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
        """Targets, unchanged."""
        return pair_targets(a, self.g_max_us, out)
