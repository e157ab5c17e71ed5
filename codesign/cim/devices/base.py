"""The device-model interface: program a tile of normalized weights onto differential pairs.

A weight ``w`` in [−1, 1] (already divided by its tile's largest |w|) is stored on a pair
of devices, G+ = g_max·max(w, 0) and G− = g_max·max(−w, 0); the crossbar reads
(G+ − G−)/g_max. Device models see the pair oriented by the weight's sign: they program
magnitudes ``a = |w|`` onto (the device that holds a, its partner at target 0), and the
crossbar multiplies the difference by sign(w). As every device model is symmetric in
G+ and G−, this is the same chip, and it lets a model treat the partner (target 0)
with scalar parameters. Device arrays carry the pair in a leading axis of size 2.

Randomness of one chip comes from two seeded streams: :meth:`DeviceModel.program` draws the
programming noise (everything a read at t = 0 needs); :meth:`DeviceModel.draw_params` draws
the per-device parameters of the time behaviour (PCM drift exponents). Both are fixed by the
chip's seed, so a chip is the same whenever its parameters are materialized; the crossbar
materializes them on the first ``drift_to(t > 0)``. Neither is called again for that chip.
After that a model answers, without new randomness, the conductance at a time ``t`` after
programming and the standard deviation of one read at that time.

Arrays are flat chunks (the crossbar walks a chip in cache-sized chunks); ``out`` arguments
let a model write straight into the crossbar's storage.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import torch
from torch import Tensor

__all__ = ["DeviceState", "DeviceModel", "pair_targets"]


@dataclass
class DeviceState:
    """Programmed devices: conductances (2, ...) in µS and per-device parameters (2, ...)."""

    g: Tensor  # conductance of the device holding |w| (index 0) and of its partner (1), µS
    params: dict[str, Tensor] = field(default_factory=dict)  # e.g. PCM drift exponents "nu"


def pair_targets(m: Tensor, g_max: float, out: Tensor | None = None) -> Tensor:
    """Conductances (2, ...) of a sign-oriented pair storing the signed value m, times g_max."""
    if out is None:
        out = torch.empty((2, *m.shape), dtype=m.dtype, device=m.device)
    torch.clamp(m, min=0.0, out=out[0]).mul_(g_max)
    torch.neg(m, out=out[1]).clamp_(min=0.0).mul_(g_max)
    return out


class DeviceModel(ABC):
    """A device technology: how programming, time and reading change a conductance."""

    name: str = ""
    g_max_us: float = 1.0  # conductance of a full-scale weight, µS
    param_names: tuple[str, ...] = ()  # per-device parameters of the time behaviour
    has_drift: bool = False  # conductance changes with time after programming
    has_read_noise: bool = False  # every read adds noise

    @abstractmethod
    def program(self, a: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
        """Conductances (2, ...) in µS after programming magnitudes a = |w| in [0, 1]; one draw per device."""

    def draw_params(self, a: Tensor, generator: torch.Generator, out: dict[str, Tensor]) -> None:
        """Draw the per-device time-behaviour parameters into out[name] (2, ...); none by default."""
        return None

    def conductance(self, state: DeviceState, t_s: float, out: Tensor | None = None) -> Tensor:
        """Conductances (2, ...) in µS at t_s seconds after programming (default: no change, state.g itself).

        A model that computes new values may write them into out (state.g's shape); use the returned tensor.
        """
        return state.g

    def read_coefficient(self, state: DeviceState, out: Tensor | None = None) -> Tensor | None:
        """Time-independent part q of the read-noise std, σ_read = q·g(t)·read_time_factor(t) (default: none).

        It depends on the programmed state only, so the crossbar computes it once per chip and
        reuses it at every drift_to. A model may write it into out; use the returned tensor.
        """
        return None

    def read_time_factor(self, t_s: float) -> float:
        """Growth of the read-noise std with time after programming (multiplies q·g(t))."""
        return 1.0

    def read_std(self, state: DeviceState, g_t: Tensor, t_s: float) -> Tensor | None:
        """Std (µS) of one read of each device at t_s, given its conductance g_t (default: none)."""
        q = self.read_coefficient(state)
        return None if q is None else q.mul_(g_t).mul_(self.read_time_factor(t_s))


def _empty_pair(a: Tensor) -> Tensor:
    return torch.empty((2, *a.shape), dtype=a.dtype, device=a.device)
