r"""Qubit readout: classify drifting single-shot IQ points as ``|0>`` or ``|1>``.

Each sample is one simulated single-shot dispersive readout.  The prepared
state is ``s[t] ~ Bernoulli(p_excited)``; the demodulated, time-integrated
signal is a point in the IQ plane

.. math::

    z_t = m_t + \sigma_k \, \varepsilon_t, \qquad \varepsilon_t \sim N(0, I_2),

    m_t = \begin{cases} \mu_0(t) & s_t = 0 \\
          \mu_1(t) & s_t = 1,\ \text{no decay during readout} \\
          u_t\,\mu_1(t) + (1 - u_t)\,\mu_0(t) & s_t = 1,\ \text{decay at } u_t\,T_{int}
          \end{cases}

T1 decay: the decay time of an excited qubit is exponential with mean ``T1``;
in units of the integration time it is ``u_t = E_t / decay_ratio`` with
``E_t ~ Exp(1)`` and ``decay_ratio = T_int / T1`` (default 0.05, so about 5 %
of the ``|1>`` shots decay and form a tail towards ``|0>``).

Drift: both blob centres rotate about the IQ origin (slow local-oscillator
phase drift) and share a slowly wandering offset,
``mu_s(t) = R(phi_t) mu_s^0 + o_t`` with ``mu_0^0 = (-1.0, -0.2)``,
``mu_1^0 = (0.6, 0.9)``, ``phi_t = drift_amplitude * sin(2 pi t / drift_period
+ phi_0)`` (``phi_0`` uniform, from the seed; defaults 0.5 rad and 20 000
samples) and ``o_t`` a 2-D Ornstein-Uhlenbeck (AR(1)) walk with stationary
standard deviation ``walk_std`` (0.1) and correlation time
``walk_correlation`` samples (2 000).

Switches: the noise level ``sigma_k`` changes abruptly between segments.
Defaults ``switch_fractions = (0.25, 0.5, 0.75)`` (switches at ``floor(n/4)``,
``floor(n/2)``, ``floor(3n/4)``) and ``noise_levels = (0.30, 0.45, 0.25,
0.60)`` (cycled if shorter than the number of segments).

Scaling: ``x = z / iq_scale`` with the option-derived constant
``iq_scale = max_s |mu_s^0| + 3 walk_std + 2 max_k sigma_k`` (2.58 for the
defaults), so points stay in roughly ``[-1, 1]`` independently of the seed or
the stream length.  Target ``y = +1`` for ``|1>`` and ``-1`` for ``|0>``;
classify by the sign of the prediction.

Extras in ``meta``: ``labels`` (int8, +1/-1, the prepared state), ``decayed``
(bool, the shot decayed during readout), ``centers`` (``(n, 2, 2)``, the
scaled centres ``mu_0(t)``, ``mu_1(t)``), ``regime``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._common import (
    check_fractions,
    check_per_segment,
    check_real,
    cycle,
    make_rng,
    regime_index,
    switch_indices,
)
from .stream import TaskStream

__all__ = ["NAME", "DESCRIPTION", "CENTER_0", "CENTER_1", "generate"]

NAME = "qubit_readout"
DESCRIPTION = "classify drifting single-shot IQ points (|0> -> -1, |1> -> +1); noise level switches"

CENTER_0 = (-1.0, -0.2)
CENTER_1 = (0.6, 0.9)


def _ar1(eps: np.ndarray, a: float, start: float) -> np.ndarray:
    """Solve ``w[t] = a w[t-1] + eps[t]`` with ``w[-1] = start``, blockwise with cumsums."""
    n = eps.size
    out = np.empty(n)
    block = max(1, min(n, int(5.0 / max(-math.log(a), 1e-300)) if a > 0 else 1))
    powers = a ** np.arange(block + 1)
    inv = 1.0 / powers[:block]
    prev = start
    for k in range(0, n, block):
        m = min(block, n - k)
        out[k:k + m] = powers[:m] * (a * prev + np.cumsum(eps[k:k + m] * inv[:m]))
        prev = out[k + m - 1]
    return out


def _ou_walk(rng: np.random.Generator, n: int, std: float, corr: float) -> np.ndarray:
    """Stationary 2-D AR(1) walk with standard deviation ``std`` and correlation time ``corr``."""
    a = math.exp(-1.0 / corr)
    start = rng.standard_normal(2) * std
    eps = rng.standard_normal((2, n)) * (std * math.sqrt(1.0 - a * a))
    return np.column_stack([_ar1(eps[j], a, start[j]) for j in range(2)])


def generate(
    n_samples: int,
    seed: int,
    *,
    noise_levels: Sequence[float] = (0.30, 0.45, 0.25, 0.60),
    switch_fractions: Sequence[float] = (0.25, 0.5, 0.75),
    p_excited: float = 0.5,
    decay_ratio: float = 0.05,
    drift_amplitude: float = 0.5,
    drift_period: float = 20_000.0,
    walk_std: float = 0.1,
    walk_correlation: float = 2_000.0,
) -> TaskStream:
    """Generate a qubit-readout stream (see the module docstring)."""
    fractions = check_fractions(NAME, "switch_fractions", switch_fractions)
    levels = check_per_segment(NAME, "noise_levels", noise_levels, low=0.0, low_open=True)
    p_excited = check_real(NAME, "p_excited", p_excited, low=0.0, high=1.0)
    decay_ratio = check_real(NAME, "decay_ratio", decay_ratio, low=0.0)
    drift_amplitude = check_real(NAME, "drift_amplitude", drift_amplitude, low=0.0, high=np.pi)
    drift_period = check_real(NAME, "drift_period", drift_period, low=1.0)
    walk_std = check_real(NAME, "walk_std", walk_std, low=0.0)
    walk_correlation = check_real(NAME, "walk_correlation", walk_correlation, low=1.0)

    n = n_samples
    rng = make_rng(seed)
    excited = rng.random(n) < p_excited
    decay_time = rng.standard_exponential(n)  # in units of T1
    phase0 = rng.uniform(0.0, 2.0 * np.pi)
    walk = _ou_walk(rng, n, walk_std, walk_correlation)
    noise = rng.standard_normal((n, 2))

    # Drifting centres: rotation of the reference centres plus a common offset.
    phi = drift_amplitude * np.sin(2.0 * np.pi * np.arange(n) / drift_period + phase0)
    cos, sin = np.cos(phi), np.sin(phi)
    ref = np.array([CENTER_0, CENTER_1])  # (state, IQ)
    centers = np.empty((n, 2, 2))
    centers[:, :, 0] = cos[:, None] * ref[None, :, 0] - sin[:, None] * ref[None, :, 1]
    centers[:, :, 1] = sin[:, None] * ref[None, :, 0] + cos[:, None] * ref[None, :, 1]
    centers += walk[:, None, :]

    # T1 decay during the integration window pulls |1> shots towards |0>.
    if decay_ratio > 0.0:
        u = decay_time / decay_ratio
    else:
        u = np.full(n, np.inf)
    decayed = excited & (u < 1.0)
    w1 = np.where(excited, np.minimum(u, 1.0), 0.0)
    mean = w1[:, None] * centers[:, 1] + (1.0 - w1[:, None]) * centers[:, 0]

    regime = regime_index(n, fractions)
    sigma = np.asarray(cycle(levels, len(fractions) + 1))[regime]
    iq = mean + sigma[:, None] * noise

    iq_scale = max(float(np.hypot(*CENTER_0)), float(np.hypot(*CENTER_1))) + 3.0 * walk_std \
        + 2.0 * max(levels)
    labels = np.where(excited, 1, -1).astype(np.int8)
    meta = {
        "seed": seed,
        "noise_levels": cycle(levels, len(fractions) + 1),
        "switch_fractions": fractions,
        "p_excited": p_excited,
        "decay_ratio": decay_ratio,
        "drift_amplitude": drift_amplitude,
        "drift_period": drift_period,
        "drift_phase0": phase0,
        "walk_std": walk_std,
        "walk_correlation": walk_correlation,
        "iq_scale": iq_scale,
        "labels": labels,
        "decayed": decayed,
        "centers": centers / iq_scale,
        "regime": regime,
        "x_offset": np.zeros(2),
        "x_scale": np.full(2, iq_scale),
        "y_offset": np.zeros(1),
        "y_scale": np.ones(1),
    }
    return TaskStream(NAME, iq / iq_scale, labels[:, None].astype(np.float64),
                      switch_indices(n, fractions), meta)
