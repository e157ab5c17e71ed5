"""Resistive RAM: conductance-dependent programming error after relaxation.

Source data: Wan et al., "A compute-in-memory chip based on resistive random-access
memory", Nature 608, 504–512 (2022), Extended Data Fig. 3 (spread of conductances read
1 s after write-verify programming, i.e. including the fast relaxation). The cubic fit to
that figure is the one Sandia's CrossSim uses for its ``RRAMWan`` model (g in µS)::

    σ(g_T) = max(1.536e−4·g_T³ − 1.167e−2·g_T² + 0.2374·g_T + 1.053, 0)   (µS)
    g_prog = max(g_T + σ·ε, 0)

valid for 0 <= g_T <= 40 µS. The fit has no long-term drift and no separate read noise:
a programmed RRAM chip does not change with ``drift_to``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from codesign.cim.config import RRAMConfig
from codesign.cim.devices.base import DeviceModel, _empty_pair

__all__ = ["RRAMDevice", "RRAM_SIGMA_COEFFS", "rram_prog_sigma"]

# Cubic coefficients (g³, g², g, 1) of σ in µS against g in µS.
RRAM_SIGMA_COEFFS = (1.536e-4, -1.167e-2, 2.374e-1, 1.053)


def rram_prog_sigma(g_target: Tensor) -> Tensor:
    """Programming-error std (µS) at target conductance g_target (µS)."""
    a, b, c, d = RRAM_SIGMA_COEFFS
    return (((a * g_target + b) * g_target + c) * g_target + d).clamp(min=0.0)


class RRAMDevice(DeviceModel):
    """RRAM pairs with the Wan et al. 2022 programming-error fit."""

    name = "rram"

    def __init__(self, config: RRAMConfig | None = None) -> None:
        self.config = config or RRAMConfig()
        self.g_max_us = self.config.g_max_us

    def program(self, a: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
        """Draw the programming error of every device (holding device first, then its partner)."""
        out = _empty_pair(a) if out is None else out
        scale, g_max = self.config.prog_noise_scale, self.g_max_us
        target = a * g_max  # the partner's target is 0
        sigma = rram_prog_sigma(target).mul_(scale)
        torch.randn(a.shape, generator=generator, out=out[0])
        out[0].mul_(sigma).add_(target).clamp_(min=0.0)
        sigma0 = float(rram_prog_sigma(torch.zeros(()))) * scale
        torch.randn(a.shape, generator=generator, out=out[1])
        out[1].mul_(sigma0).clamp_(min=0.0)
        return out
