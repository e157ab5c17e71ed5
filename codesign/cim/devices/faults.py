"""Stuck-at faults: a device stuck ON reads g_max, stuck OFF reads 0, whatever was programmed.

Each device (either member of a pair) is independently stuck ON with probability
``stuck_on_rate`` and stuck OFF with probability ``stuck_off_rate`` (one uniform draw u per
device: ON if u < p_on, OFF if p_on <= u < p_on + p_off). A stuck device does not drift and
adds no read noise. Fault model as in Chen et al., "RRAM defect modeling and failure
analysis based on march test and a novel squeeze-search scheme", DATE 2015.
"""

from __future__ import annotations

import torch
from torch import Tensor

from codesign.cim.config import FaultConfig

__all__ = ["draw_faults", "apply_faults"]


def draw_faults(shape: torch.Size, config: FaultConfig, generator: torch.Generator, device: torch.device) -> Tensor:
    """Fault code per device: 0 healthy, 1 stuck ON, 2 stuck OFF (int8)."""
    u = torch.rand(shape, generator=generator, device=device)
    code = torch.zeros(shape, dtype=torch.int8, device=device)
    code[u < config.stuck_on_rate] = 1
    code[(u >= config.stuck_on_rate) & (u < config.stuck_on_rate + config.stuck_off_rate)] = 2
    return code


def apply_faults(g: Tensor, code: Tensor, g_max: float) -> Tensor:
    """Conductances with stuck devices forced to g_max (ON) or 0 (OFF)."""
    g = torch.where(code == 1, torch.full_like(g, g_max), g)
    return torch.where(code == 2, torch.zeros_like(g), g)
