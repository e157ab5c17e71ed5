"""Phase-change memory: programming noise, conductance drift and 1/f read noise.

The statistical model measured on doped-Ge2Sb2Te5 mushroom cells by Nandakumar et al.
(IEEE ICECS 2019, doi:10.1109/ICECS46596.2019.8964852) and used by Joshi et al., "Accurate
deep neural network inference using computational phase-change memory", Nature
Communications 11, 2473 (2020); the constants below are the published fit as IBM's aihwkit
(``PCMLikeNoiseModel``) carries it. Conductances in µS, g_max = 25 µS, time t in seconds
after programming ends, t0 = 20 s, t_read = 250 ns.

Programming (once per device)::

    σ_prog(g_T) = [0.26348 + 1.9650·(g_T/g_max) − 1.1731·(g_T/g_max)²] · g_max/25   (µS)
    g_prog      = max(g_T + σ_prog·ε, 0)

Drift (exponent drawn once per device, from its target, out of the chip's own seeded
stream; the crossbar materializes it on the chip's first ``drift_to(t > 0)``)::

    μ_ν(g_T) = clip(−0.0155·ln(g_T/g_max) + 0.0244, 0.049, 0.1)
    σ_ν(g_T) = clip(−0.0125·ln(g_T/g_max) − 0.0059, 0.008, 0.045)
    ν        = |μ_ν + σ_ν·ε|
    g(t)     = g_prog · ((t + t0)/t0)^(−ν)

Read noise (1/f, accumulated from programming start, i.e. over t + t0; fresh every read)::

    Q_s(g_prog) = min(0.0088 / max((g_prog/g_max)^0.65, 1e−3), 0.2)
    σ_read(t)   = |g(t)| · Q_s · sqrt(ln((t + t0 + t_read) / (2·t_read)))

At g_T = g_max: μ_ν = 0.049, σ_ν = 0.008, so after one year the mean conductance ratio is
E[((t+t0)/t0)^−ν] = exp(−μ_ν·L + σ_ν²·L²/2) ≈ 0.50 with L = ln((t+t0)/t0).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from codesign.cim.config import PCMConfig
from codesign.cim.devices.base import DeviceModel, DeviceState, _empty_pair

__all__ = [
    "PCMDevice",
    "PROG_COEFFS_US",
    "PROG_REFERENCE_G_MAX_US",
    "pcm_prog_sigma",
    "pcm_drift_mean_std",
    "pcm_read_q",
    "pcm_read_time_factor",
]

# Nandakumar et al. 2019 / Joshi et al. 2020 programming-noise polynomial, µS, fitted at g_max = 25 µS.
PROG_COEFFS_US = (0.26348, 1.9650, -1.1731)
PROG_REFERENCE_G_MAX_US = 25.0
# Drift-exponent fit, mean and std as linear functions of ln(g_T/g_max), with their clips.
_NU_MEAN = (-0.0155, 0.0244, 0.049, 0.1)  # slope, intercept, min, max
_NU_STD = (-0.0125, -0.0059, 0.008, 0.045)
# 1/f read-noise coefficient Q_s = 0.0088 / (g/g_max)^0.65, floored and capped as published.
_READ_Q = (0.0088, 0.65, 1e-3, 0.2)  # coefficient, exponent, denominator floor, cap
_G_REL_FLOOR = 1e-7  # keeps ln(g/g_max) finite for unprogrammed (g_T = 0) devices


def pcm_prog_sigma(g_target: Tensor, g_max: float) -> Tensor:
    """Programming-noise std (µS) at target conductance g_target (µS)."""
    c0, c1, c2 = PROG_COEFFS_US
    x = g_target / g_max
    return x.mul(c2).add_(c1).mul_(x).add_(c0).mul_(g_max / PROG_REFERENCE_G_MAX_US)


def pcm_drift_mean_std(g_target: Tensor, g_max: float) -> tuple[Tensor, Tensor]:
    """Mean and std of the drift exponent ν at target conductance g_target (µS)."""
    return _drift_mean_std_of_magnitude(g_target / g_max)


def _drift_mean_std_of_magnitude(a: Tensor) -> tuple[Tensor, Tensor]:
    """pcm_drift_mean_std of g_target = a·g_max (a = |w| in [0, 1]), without forming g_target."""
    log_g = torch.clamp(a, min=_G_REL_FLOOR).log_()  # targets are >= 0
    a, b, lo, hi = _NU_MEAN
    mean = log_g.mul(a).add_(b).clamp_(lo, hi)
    a, b, lo, hi = _NU_STD
    std = log_g.mul_(a).add_(b).clamp_(lo, hi)
    return mean, std


def pcm_read_q(g_prog: Tensor, g_max: float, out: Tensor | None = None) -> Tensor:
    """The 1/f read-noise coefficient Q_s (relative, dimensionless) of programmed conductances."""
    coef, expo, floor, cap = _READ_Q
    # min(coef / max(x^e, floor), cap) = coef · max(x, x_lo)^(−e): x^(−e) falls with x, so the floor
    # and the cap are both one lower bound on x. Also keeps log() away from the many zeros.
    x_lo = max(floor ** (1.0 / expo), (coef / cap) ** (1.0 / expo))
    # coef·(g/g_max)^(−e) = exp(−e·ln g + e·ln g_max + ln coef): one clamp, log, multiply-add and exp
    offset = expo * math.log(g_max) + math.log(coef)
    return torch.clamp(g_prog, min=x_lo * g_max, out=out).log_().mul_(-expo).add_(offset).exp_()  # g_prog >= 0


def pcm_read_time_factor(t_s: float, t0_s: float, t_read_s: float) -> float:
    """sqrt(ln((t + t0 + t_read)/(2 t_read))): growth of the accumulated 1/f noise with time."""
    return math.sqrt(math.log((t_s + t0_s + t_read_s) / (2.0 * t_read_s)))


class PCMDevice(DeviceModel):
    """PCM pairs: programming noise and drift exponents drawn once; drift and 1/f noise in time."""

    name = "pcm"
    param_names = ("nu",)
    has_drift = True

    def __init__(self, config: PCMConfig | None = None) -> None:
        self.config = config or PCMConfig()
        self.g_max_us = self.config.g_max_us

    @property
    def has_read_noise(self) -> bool:  # type: ignore[override]
        """Reads are noisy unless read_noise_scale is 0."""
        return self.config.read_noise_scale > 0

    def program(self, a: Tensor, generator: torch.Generator, out: Tensor | None = None) -> Tensor:
        """Draw the programming noise of every device (holding device first, then its partner)."""
        out = _empty_pair(a) if out is None else out
        scale, g_max = self.config.prog_noise_scale, self.g_max_us
        # σ_prog(g_max·a)·scale by Horner's rule in a, the polynomial's unit folded into its coefficients
        c0, c1, c2 = (c * scale * g_max / PROG_REFERENCE_G_MAX_US for c in PROG_COEFFS_US)
        sigma = torch.mul(a, c2).add_(c1).mul_(a).add_(c0)
        hold, partner = out[0], out[1]
        torch.randn(a.shape, generator=generator, out=hold, dtype=a.dtype)
        hold.mul_(sigma).add_(a, alpha=g_max).clamp_(min=0.0)  # g_T + σ·ε, g_T = g_max·a
        torch.randn(a.shape, generator=generator, out=partner, dtype=a.dtype)
        partner.mul_(c0).clamp_(min=0.0)  # the partner's target is 0: σ_prog(0) = c0
        return out

    def draw_params(self, a: Tensor, generator: torch.Generator, out: dict[str, Tensor]) -> None:
        """Draw the drift exponent ν = |μ_ν(g_T) + σ_ν(g_T)·ε| of every device into out["nu"]."""
        nu, g_max = out["nu"], self.g_max_us
        mean, std = _drift_mean_std_of_magnitude(a)
        torch.randn(a.shape, generator=generator, out=nu[0], dtype=a.dtype)
        torch.addcmul(mean, std, nu[0], out=nu[0]).abs_()
        mean0, std0 = (float(v) for v in pcm_drift_mean_std(torch.zeros(()), g_max))
        torch.randn(a.shape, generator=generator, out=nu[1], dtype=a.dtype)
        nu[1].mul_(std0).add_(mean0).abs_()
        if self.config.drift_scale != 1.0:
            nu.mul_(self.config.drift_scale)

    def conductance(self, state: DeviceState, t_s: float, out: Tensor | None = None) -> Tensor:
        """g_prog·((t + t0)/t0)^(−ν); exactly g_prog at t = 0 (state.g itself)."""
        if t_s == 0.0:
            return state.g
        log_ratio = math.log((t_s + self.config.t0_s) / self.config.t0_s)
        return torch.mul(state.params["nu"], -log_ratio, out=out).exp_().mul_(state.g)

    def read_coefficient(self, state: DeviceState, out: Tensor | None = None) -> Tensor | None:
        """Q_s(g_prog): σ_read(t) = g(t)·Q_s(g_prog)·sqrt(ln((t + t0 + t_read)/(2 t_read)))·read_noise_scale."""
        if self.config.read_noise_scale == 0.0:
            return None
        return pcm_read_q(state.g, self.g_max_us, out=out)

    def read_time_factor(self, t_s: float) -> float:
        """sqrt(ln((t + t0 + t_read)/(2 t_read))), scaled by read_noise_scale."""
        cfg = self.config
        return pcm_read_time_factor(t_s, cfg.t0_s, cfg.t_read_s) * cfg.read_noise_scale
