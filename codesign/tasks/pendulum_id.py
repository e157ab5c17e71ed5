r"""Pendulum identification: learn the one-step dynamics of a damped driven pendulum.

The plant is a rigid pendulum (point mass ``m`` on a massless rod of length
``l = 1 m``, ``g = 9.81 m/s^2``) with viscous friction ``c`` driven by a torque
``u(t)``:

.. math::

    m l^2 \ddot\theta = u - c\,\dot\theta - m g l \sin\theta .

The torque is an amplitude-modulated random step signal (the usual
system-identification excitation): a level drawn uniformly from
``[-max_torque, max_torque]`` (default 6 N m) is held for a geometrically
distributed number of samples with mean ``torque_hold`` (25).  The state is
sampled every ``dt`` (0.02 s) and integrated with ``substeps`` (2) classical
Runge-Kutta (RK4) steps per sample; the torque is constant over a sample, so
RK4 keeps its fourth-order accuracy.  The initial state is
``theta_0 ~ U(-pi/4, pi/4)``, ``omega_0 = 0``.

Sample ``k`` maps the current (measured) state and torque to the next step:
input ``(wrap(theta_k) / pi, omega_k / omega_scale, u_k / max_torque)`` and
target ``(omega_{k+1} - omega_k) / increment_scale`` (``target="increment"``,
default) or ``omega_{k+1} / omega_scale`` (``target="velocity"``).  Optional
Gaussian measurement noise ``noise_std`` (rad, rad/s) corrupts the observed
angle and velocity; the target uses the same measurements.

Switches: the mass and the friction change abruptly.  Defaults
``switch_fractions = (0.25, 0.5, 0.75)`` (switches at ``floor(n/4)``,
``floor(n/2)``, ``floor(3n/4)``), ``masses = (1.0, 2.0, 2.0, 1.0)`` kg and
``frictions = (0.3, 0.3, 0.8, 0.8)`` N m s (per segment, cycled).  Sample
``switches[j]`` is the first transition simulated with the new parameters.

Scaling (option-derived constants, independent of the generated data):
``omega_scale = 2 sqrt(g / l)`` (the bottom speed on the separatrix, 6.26
rad/s) and ``increment_scale = dt (g / l + max_torque / (min(masses) l^2))``
(the largest gravity-plus-torque velocity change in one sample).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ._common import (
    check_choice,
    check_fractions,
    check_int,
    check_per_segment,
    check_real,
    cycle,
    make_rng,
    regime_index,
    switch_indices,
)
from .stream import TaskStream

__all__ = ["NAME", "DESCRIPTION", "GRAVITY", "LENGTH", "simulate_pendulum", "generate"]

NAME = "pendulum_id"
DESCRIPTION = "one-step system identification of a damped driven pendulum; mass/friction switch"

GRAVITY = 9.81
LENGTH = 1.0


def simulate_pendulum(theta0: float, omega0: float, torque: np.ndarray, dt: float,
                      inv_inertia: np.ndarray, damping: np.ndarray, substeps: int = 2,
                      g_over_l: float = GRAVITY / LENGTH) -> tuple[np.ndarray, np.ndarray]:
    """RK4-integrate ``theta'' = a u - b theta' - (g/l) sin(theta)``; returns n+1 states."""
    n = len(torque)
    drive = (np.asarray(torque, dtype=np.float64) * np.broadcast_to(inv_inertia, (n,))).tolist()
    damp = np.broadcast_to(np.asarray(damping, dtype=np.float64), (n,)).tolist()
    h = dt / substeps
    h2, h6 = 0.5 * h, h / 6.0
    sin = math.sin
    th, om = float(theta0), float(omega0)
    thetas = [th]
    omegas = [om]
    for k in range(n):
        a, b = drive[k], damp[k]
        for _ in range(substeps):
            k1 = a - b * om - g_over_l * sin(th)
            om2 = om + h2 * k1
            k2 = a - b * om2 - g_over_l * sin(th + h2 * om)
            om3 = om + h2 * k2
            k3 = a - b * om3 - g_over_l * sin(th + h2 * om2)
            om4 = om + h * k3
            k4 = a - b * om4 - g_over_l * sin(th + h * om3)
            th += h6 * (om + 2.0 * om2 + 2.0 * om3 + om4)
            om += h6 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        thetas.append(th)
        omegas.append(om)
    return np.array(thetas), np.array(omegas)


def _torque_signal(rng: np.random.Generator, n: int, max_torque: float,
                   hold: float) -> np.ndarray:
    """Random step levels held for geometric durations with mean ``hold`` samples."""
    n_levels = int(n / hold * 1.5) + 16
    levels = rng.uniform(-max_torque, max_torque, n_levels)
    changes = rng.random(n) < 1.0 / hold
    changes[0] = False
    idx = np.cumsum(changes)
    return levels[idx % n_levels]


def generate(
    n_samples: int,
    seed: int,
    *,
    masses: Sequence[float] = (1.0, 2.0, 2.0, 1.0),
    frictions: Sequence[float] = (0.3, 0.3, 0.8, 0.8),
    switch_fractions: Sequence[float] = (0.25, 0.5, 0.75),
    max_torque: float = 6.0,
    torque_hold: float = 25.0,
    dt: float = 0.02,
    substeps: int = 2,
    target: str = "increment",
    noise_std: float = 0.0,
) -> TaskStream:
    """Generate a pendulum system-identification stream (see the module docstring)."""
    fractions = check_fractions(NAME, "switch_fractions", switch_fractions)
    masses = check_per_segment(NAME, "masses", masses, low=0.0, low_open=True, high=1e3)
    frictions = check_per_segment(NAME, "frictions", frictions, low=0.0, high=1e3)
    max_torque = check_real(NAME, "max_torque", max_torque, low=0.0, low_open=True, high=1e3)
    torque_hold = check_real(NAME, "torque_hold", torque_hold, low=1.0)
    dt = check_real(NAME, "dt", dt, low=0.0, low_open=True, high=0.2)
    substeps = check_int(NAME, "substeps", substeps, minimum=1, maximum=100)
    target = check_choice(NAME, "target", target, ("increment", "velocity"))
    noise_std = check_real(NAME, "noise_std", noise_std, low=0.0)

    n = n_samples
    n_seg = len(fractions) + 1
    seg_mass, seg_friction = cycle(masses, n_seg), cycle(frictions, n_seg)
    regime = regime_index(n, fractions)
    inertia = np.asarray(seg_mass)[regime] * LENGTH**2
    damping = np.asarray(seg_friction)[regime] / inertia

    rng = make_rng(seed)
    theta0 = rng.uniform(-np.pi / 4, np.pi / 4)
    torque = _torque_signal(rng, n, max_torque, torque_hold)
    theta, omega = simulate_pendulum(theta0, 0.0, torque, dt, 1.0 / inertia, damping, substeps)
    if noise_std > 0.0:
        theta = theta + noise_std * rng.standard_normal(n + 1)
        omega = omega + noise_std * rng.standard_normal(n + 1)

    omega_scale = 2.0 * math.sqrt(GRAVITY / LENGTH)
    increment_scale = dt * (GRAVITY / LENGTH + max_torque / (min(masses) * LENGTH**2))
    wrapped = np.mod(theta[:-1] + np.pi, 2.0 * np.pi) - np.pi
    x = np.column_stack([wrapped / np.pi, omega[:-1] / omega_scale, torque / max_torque])
    if target == "increment":
        y = (omega[1:] - omega[:-1]) / increment_scale
        y_scale = increment_scale
    else:
        y = omega[1:] / omega_scale
        y_scale = omega_scale

    meta = {
        "seed": seed,
        "masses": seg_mass,
        "frictions": seg_friction,
        "switch_fractions": fractions,
        "max_torque": max_torque,
        "torque_hold": torque_hold,
        "dt": dt,
        "substeps": substeps,
        "target": target,
        "noise_std": noise_std,
        "gravity": GRAVITY,
        "length": LENGTH,
        "omega_scale": omega_scale,
        "increment_scale": increment_scale,
        "regime": regime,
        "x_offset": np.zeros(3),
        "x_scale": np.array([np.pi, omega_scale, max_torque]),
        "y_offset": np.zeros(1),
        "y_scale": np.full(1, y_scale),
    }
    return TaskStream(NAME, x, y[:, None], switch_indices(n, fractions), meta)
