"""pendulum_id: RK4 pendulum with switching mass and friction."""

import math

import numpy as np
import pytest

from codesign.tasks import make_stream
from codesign.tasks.pendulum_id import GRAVITY, simulate_pendulum


def _physical(stream):
    """Undo the fixed scaling: angle, velocity, torque and next velocity."""
    xs = stream.meta["x_scale"]
    theta, omega, torque = (stream.x * xs).T
    return theta, omega, torque


def test_least_squares_recovers_mass_and_friction_per_segment():
    s = make_stream("pendulum_id", 40_000, seed=2, target="velocity")
    theta, omega, torque = _physical(s)
    nxt = s.y[:, 0] * s.meta["y_scale"][0]
    dt = s.meta["dt"]
    regime = s.meta["regime"]
    for k, (m, c) in enumerate(zip(s.meta["masses"], s.meta["frictions"])):
        idx = np.flatnonzero(regime == k)
        idx = idx[idx > 0]
        idx = idx[(regime[idx - 1] == k) & (torque[idx] == torque[idx - 1])]
        accel = (nxt[idx] - omega[idx - 1]) / (2 * dt)  # central difference at sample idx
        feats = np.column_stack([torque[idx], -omega[idx], -np.sin(theta[idx])])
        coef, *_ = np.linalg.lstsq(feats, accel, rcond=None)
        np.testing.assert_allclose(coef, [1 / m, c / m, GRAVITY], rtol=0.01, err_msg=f"segment {k}")


def test_switches_change_the_dynamics():
    s = make_stream("pendulum_id", 20_000, seed=5)
    assert s.meta["masses"] == (1.0, 2.0, 2.0, 1.0)
    assert s.meta["frictions"] == (0.3, 0.3, 0.8, 0.8)
    same = make_stream("pendulum_id", 20_000, seed=5, masses=(1.0,), frictions=(0.3,))
    sw = s.switches[0]
    np.testing.assert_array_equal(s.x[:sw + 1], same.x[:sw + 1])  # same torque, same past
    np.testing.assert_array_equal(s.y[:sw], same.y[:sw])
    assert s.y[sw, 0] != same.y[sw, 0]  # the first transition under the new mass differs


def test_energy_is_conserved_without_torque_and_friction():
    n, dt = 20_000, 0.02
    theta, omega = simulate_pendulum(2.0, 0.0, np.zeros(n), dt, np.ones(n), np.zeros(n), 2)
    energy = 0.5 * omega**2 - GRAVITY * np.cos(theta)
    assert np.max(np.abs(energy - energy[0])) < 1e-6 * abs(energy[0])
    # Large-amplitude swing: period exceeds the small-angle value 2 pi sqrt(l/g).
    crossings = np.flatnonzero((theta[:-1] < 0) & (theta[1:] >= 0))
    period = np.mean(np.diff(crossings)) * dt
    assert period > 1.3 * 2 * math.pi / math.sqrt(GRAVITY)


def test_friction_dissipates_energy_monotonically():
    n = 5000
    theta, omega = simulate_pendulum(1.0, 0.0, np.zeros(n), 0.02, 1.0, 0.5, 2)
    energy = 0.5 * omega**2 - GRAVITY * np.cos(theta)
    assert np.all(np.diff(energy) <= 1e-12)
    assert energy[-1] < -GRAVITY + 1e-3  # settled at the bottom


def test_small_angle_matches_damped_oscillator():
    n, dt, b = 2000, 0.01, 0.4
    theta, _ = simulate_pendulum(1e-4, 0.0, np.zeros(n), dt, 1.0, b, 1)
    t = np.arange(n + 1) * dt
    w0 = math.sqrt(GRAVITY)
    wd = math.sqrt(w0**2 - b**2 / 4)
    exact = 1e-4 * np.exp(-b * t / 2) * (np.cos(wd * t) + b / (2 * wd) * np.sin(wd * t))
    np.testing.assert_allclose(theta, exact, atol=1e-10)


def test_targets_are_consistent():
    inc = make_stream("pendulum_id", 3000, seed=1)
    vel = make_stream("pendulum_id", 3000, seed=1, target="velocity")
    np.testing.assert_array_equal(inc.x, vel.x)
    ws = inc.meta["omega_scale"]
    np.testing.assert_allclose(inc.y[:, 0] * inc.meta["increment_scale"],
                               vel.y[:, 0] * ws - inc.x[:, 1] * ws, atol=1e-12)
    np.testing.assert_allclose(vel.y[:-1, 0], vel.x[1:, 1], atol=1e-15)


def test_torque_excitation():
    s = make_stream("pendulum_id", 50_000, seed=0, torque_hold=10.0)
    u = s.x[:, 2]
    assert np.abs(u).max() <= 1.0
    changes = np.count_nonzero(np.diff(u))
    assert len(s) / (changes + 1) == pytest.approx(10.0, rel=0.05)
    assert u.std() == pytest.approx(1 / math.sqrt(3), rel=0.05)  # uniform levels


def test_angle_is_wrapped_and_motion_is_rich():
    s = make_stream("pendulum_id", 50_000, seed=0)
    theta = s.x[:, 0]
    assert np.all(np.abs(theta) <= 1.0)
    for k in range(4):
        sel = s.meta["regime"] == k
        assert np.abs(theta[sel]).max() > 0.2  # swings beyond 36 degrees in every regime


def test_measurement_noise():
    clean = make_stream("pendulum_id", 4000, seed=3)
    noisy = make_stream("pendulum_id", 4000, seed=3, noise_std=0.01)
    resid = (noisy.x[:, 1] - clean.x[:, 1]) * clean.meta["omega_scale"]
    assert resid.std() == pytest.approx(0.01, rel=0.1)
