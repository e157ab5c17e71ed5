r"""Mackey-Glass: one-step prediction of a chaotic delay system whose delay changes.

The series solves the Mackey-Glass delay differential equation

.. math::

    \dot x(t) = \beta \frac{x(t - \tau)}{1 + x(t - \tau)^{p}} - \gamma\, x(t),
    \qquad \gamma = 0.1,\ p = 10,

with ``beta = 0.2`` and ``tau = 17`` (the classic chaotic benchmark) in the
first segment.  Integration uses step ``dt`` (default 0.1 time units) and an
exponential integrator: the linear decay is solved exactly and the delayed
feedback term, which is already known on the whole interval, is integrated as
a piecewise-linear function (second-order accurate).  Because the feedback
only depends on values at least ``tau`` in the past, blocks of ``tau / dt``
steps are advanced at once with vectorised numpy.  Non-integer ``tau / dt``
uses linear interpolation of the delayed value.  The initial history is a
seeded constant in ``[0.5, 1.3]`` with small noise, followed by ``warmup``
(1000) time units that are discarded.

The stream samples the solution every ``sample_interval`` (1.0) time units,
``s_j = x(j * sample_interval)`` (plus optional Gaussian ``noise_std``).  Input
``i`` is the window of ``lags`` (4) past values spaced ``lag_spacing`` (6)
samples apart, oldest first: ``(s_{j-18}, s_{j-12}, s_{j-6}, s_j)`` with
``j = i + (lags - 1) * lag_spacing``; the target is ``s_{j + horizon}`` with
``horizon = 1`` (the next value).

Switch: the delay (and optionally the gain) changes mid-stream.  Defaults
``switch_fractions = (0.5,)`` (one switch at ``floor(n/2)``),
``taus = (17.0, 30.0)``, ``betas = (0.2,)`` (per segment, cycled).  The new
parameters govern the dynamics from the current time of the first sample of
the new segment on, so the target of sample ``switches[0]`` is the first
produced by the new regime while its inputs are all from the old one.

Scaling: ``scaled = (x - 0.8) / 0.6`` for inputs and target; the attractors
for ``tau`` in 17..30 span about ``[0.21, 1.38]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._common import (
    check_fractions,
    check_int,
    check_per_segment,
    check_real,
    cycle,
    make_rng,
    regime_index,
    segment_starts,
    switch_indices,
)
from .stream import TaskStream

__all__ = ["NAME", "DESCRIPTION", "OFFSET", "SCALE", "integrate_mackey_glass", "generate"]

NAME = "mackey_glass"
DESCRIPTION = "one-step prediction of the chaotic Mackey-Glass series; delay tau switches 17 -> 30"

GAMMA = 0.1
POWER = 10.0
OFFSET = 0.8
SCALE = 0.6
_MAX_BLOCK = 512


def _delay_steps(tau: float, dt: float) -> tuple[int, float]:
    """Split ``tau / dt`` into an integer part and an interpolation fraction."""
    d = tau / dt
    d_int = int(math.floor(d + 1e-9))
    frac = d - d_int
    return d_int, (0.0 if frac < 1e-9 else frac)


def _advance(x: np.ndarray, start: int, n_steps: int, dt: float, tau: float, beta: float,
             gamma: float, power: float) -> None:
    """Fill ``x[start+1 : start+1+n_steps]`` given ``x[: start+1]`` (in place)."""
    d_int, frac = _delay_steps(tau, dt)
    if start - d_int - (1 if frac else 0) < 0:
        raise ValueError("Mackey-Glass history is shorter than the delay")
    gh = gamma * dt
    c = math.exp(-gh)
    # Exact weights for x' = -gamma x + f, f linear between grid points.
    a1 = -math.expm1(-gh) / gamma
    moment = (1.0 - math.exp(-gh) * (1.0 + gh)) / gamma**2
    w1 = (dt * a1 - moment) / dt
    w0 = a1 - w1
    block = max(1, min(d_int, _MAX_BLOCK, int(8.0 / gh)))
    j = np.arange(1, block + 1)
    grow = c ** (-j)  # c^-(i+1) for the in-block cumulative sum
    decay = c**j
    k, stop = start, start + n_steps
    while k < stop:
        m = min(block, stop - k)
        delayed = x[k - d_int: k - d_int + m + 1]
        if frac:
            delayed = (1.0 - frac) * delayed + frac * x[k - d_int - 1: k - d_int + m]
        f = beta * delayed / (1.0 + delayed**power)
        u = w0 * f[:-1] + w1 * f[1:]
        x[k + 1: k + m + 1] = decay[:m] * (x[k] + np.cumsum(u * grow[:m]))
        k += m


def integrate_mackey_glass(history: np.ndarray, n_steps: int, dt: float = 0.1, tau: float = 17.0,
                           beta: float = 0.2, gamma: float = GAMMA,
                           power: float = POWER) -> np.ndarray:
    """Continue a Mackey-Glass solution on a ``dt`` grid; ``history[-1]`` is the current value."""
    history = np.asarray(history, dtype=np.float64).ravel()
    x = np.empty(history.size + n_steps)
    x[: history.size] = history
    _advance(x, history.size - 1, n_steps, dt, tau, beta, gamma, power)
    return x[history.size:].copy()


def generate(
    n_samples: int,
    seed: int,
    *,
    taus: Sequence[float] = (17.0, 30.0),
    betas: Sequence[float] = (0.2,),
    switch_fractions: Sequence[float] = (0.5,),
    lags: int = 4,
    lag_spacing: int = 6,
    horizon: int = 1,
    sample_interval: float = 1.0,
    dt: float = 0.1,
    warmup: float = 1000.0,
    noise_std: float = 0.0,
) -> TaskStream:
    """Generate a Mackey-Glass prediction stream (see the module docstring)."""
    fractions = check_fractions(NAME, "switch_fractions", switch_fractions)
    taus = check_per_segment(NAME, "taus", taus, low=1.0, high=1000.0)
    betas = check_per_segment(NAME, "betas", betas, low=0.0, low_open=True, high=2.0)
    lags = check_int(NAME, "lags", lags, minimum=1, maximum=64)
    lag_spacing = check_int(NAME, "lag_spacing", lag_spacing, minimum=1, maximum=1000)
    horizon = check_int(NAME, "horizon", horizon, minimum=1, maximum=1000)
    sample_interval = check_real(NAME, "sample_interval", sample_interval, low=0.0, low_open=True,
                                 high=100.0)
    dt = check_real(NAME, "dt", dt, low=0.0, low_open=True, high=1.0)
    warmup = check_real(NAME, "warmup", warmup, low=0.0, high=1e5)
    noise_std = check_real(NAME, "noise_std", noise_std, low=0.0)
    ratio = sample_interval / dt
    substeps = int(round(ratio))
    if substeps < 1 or abs(ratio - substeps) > 1e-9 * ratio or substeps > 1000:
        raise ValueError(f"{NAME}: 'sample_interval / dt' must be an integer in [1, 1000], "
                         f"got {sample_interval} / {dt}")
    if min(taus) < dt:
        raise ValueError(f"{NAME}: every delay in 'taus' must be >= dt ({dt}), got {taus}")

    n = n_samples
    n_seg = len(fractions) + 1
    seg_tau, seg_beta = cycle(taus, n_seg), cycle(betas, n_seg)
    first = (lags - 1) * lag_spacing  # sample index of the current value of stream sample 0
    n_points = first + n + horizon  # sampled series length
    warm_steps = int(round(warmup / dt))
    hist_len = max(_delay_steps(t, dt)[0] for t in seg_tau) + 2
    total_steps = warm_steps + (n_points - 1) * substeps

    rng = make_rng(seed)
    level = rng.uniform(0.5, 1.3)
    x = np.empty(hist_len + total_steps)
    # Filled newest-first so the recent history does not depend on ``hist_len`` (i.e. on taus).
    x[:hist_len] = level + 0.01 * rng.standard_normal(hist_len)[::-1]
    origin = hist_len - 1 + warm_steps  # fine index of sampled point 0

    # Fine-grid index at which each segment's parameters take over.
    starts = [hist_len - 1] + [origin + (first + int(s)) * substeps
                               for s in segment_starts(n, fractions)]
    end = hist_len - 1 + total_steps
    for k in range(n_seg):
        a = min(max(starts[k], hist_len - 1), end)
        b = end if k == n_seg - 1 else min(max(starts[k + 1], a), end)
        if b > a:
            _advance(x, a, b - a, dt, seg_tau[k], seg_beta[k], GAMMA, POWER)

    series = x[origin::substeps][:n_points]
    if noise_std > 0.0:
        series = series + noise_std * rng.standard_normal(n_points)
    scaled = (series - OFFSET) / SCALE
    idx = first + np.arange(n)
    offsets = (np.arange(lags) - (lags - 1)) * lag_spacing
    inputs = scaled[idx[:, None] + offsets[None, :]]
    target = scaled[idx + horizon][:, None]

    meta = {
        "seed": seed,
        "taus": seg_tau,
        "betas": seg_beta,
        "gamma": GAMMA,
        "power": POWER,
        "switch_fractions": fractions,
        "lags": lags,
        "lag_spacing": lag_spacing,
        "horizon": horizon,
        "sample_interval": sample_interval,
        "dt": dt,
        "warmup": warmup,
        "noise_std": noise_std,
        "initial_level": level,
        "regime": regime_index(n, fractions),
        "x_offset": np.full(lags, OFFSET),
        "x_scale": np.full(lags, SCALE),
        "y_offset": np.full(1, OFFSET),
        "y_scale": np.full(1, SCALE),
    }
    return TaskStream(NAME, inputs, target, switch_indices(n, fractions), meta)
