"""Generic device mismatch: every weight perturbed once at programming, then mapped exactly.

With w the weight normalized by its tile's largest |w| and ε ~ N(0, 1) drawn per weight:

    multiplicative:  w' = w·(1 + σε)                  (the "mismatch level" σ of the DWP paper)
    additive:        w' = w + σε                      (σ in units of the tile's largest |w|)
    lognormal:       w' = w·exp(σε − σ²/2)            (mean-preserving, keeps the sign)

w' is then stored on an ideal differential pair (G+ = max(w', 0), G− = max(−w', 0), normalized
units; a perturbation that flips the sign moves the weight to the other device). No drift,
no read noise. The crossbar applies the model to the magnitude |w| of a sign-oriented pair,
which has the same distribution since ε is symmetric. Multiplicative and additive weight
noise of this form are the models of Joshi et al. 2020 (Nat. Commun. 11, 2473) and of
noise-injection training in general.
"""

from __future__ import annotations

import torch
from torch import Tensor

from codesign.cim.config import MismatchConfig
from codesign.cim.devices.base import DeviceModel, pair_targets

__all__ = ["MismatchDevice", "mismatch_weights"]


def mismatch_weights(w: Tensor, config: MismatchConfig, noise: Tensor) -> Tensor:
    """Perturbed weights w' for standard-normal noise shaped like w (differentiable in w)."""
    sigma = config.sigma
    if config.kind == "multiplicative":
        return w * (1.0 + sigma * noise)
    if config.kind == "additive":
        return w + sigma * noise
    return w * torch.exp(sigma * noise - 0.5 * sigma * sigma)


class MismatchDevice(DeviceModel):
    """Weight-level Gaussian (or log-normal) mismatch on ideal pairs."""

    name = "mismatch"
    g_max_us = 1.0  # normalized units

    def __init__(self, config: MismatchConfig | None = None) -> None:
        self.config = config or MismatchConfig()

    def program(self, a: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
        """Draw one mismatch value per weight; a sign flip moves the weight to the partner device."""
        if self.config.sigma == 0.0:
            return pair_targets(a, self.g_max_us, out)
        noise = torch.randn(a.shape, generator=generator, dtype=a.dtype, device=a.device)
        return pair_targets(mismatch_weights(a, self.config, noise), self.g_max_us, out)
