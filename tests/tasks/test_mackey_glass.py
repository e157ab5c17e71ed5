"""mackey_glass: the integrator solves the right delay equation and the delay switches."""

import numpy as np
import pytest

from codesign.tasks import make_stream
from codesign.tasks.mackey_glass import OFFSET, SCALE, integrate_mackey_glass

DT = 0.1


def _series(tau, n_steps, dt=DT, level=1.2, beta=0.2, history=None):
    if history is None:
        history = np.full(int(round(tau / dt)) + 2, level)
    return integrate_mackey_glass(history, n_steps, dt=dt, tau=tau, beta=beta)


def _dde_residual(x, dt, tau, beta=0.2, gamma=0.1, power=10.0):
    """RMS mismatch between a central-difference derivative and the DDE right-hand side."""
    d = tau / dt
    d_int = int(np.floor(d + 1e-9))
    frac = d - d_int if d - d_int > 1e-9 else 0.0
    k = np.arange(d_int + 2, x.size - 1)
    deriv = (x[k + 1] - x[k - 1]) / (2 * dt)
    xd = (1 - frac) * x[k - d_int] + frac * x[k - d_int - 1]
    rhs = beta * xd / (1 + xd**power) - gamma * x[k]
    return float(np.sqrt(np.mean((deriv - rhs) ** 2)))


@pytest.mark.parametrize("tau", [17.0, 30.0])
def test_solution_satisfies_the_delay_equation_with_its_own_tau(tau):
    x = _series(tau, 30_000)[5000:]
    right = _dde_residual(x, DT, tau)
    assert right < 5e-5
    # The same series is clearly inconsistent with a neighbouring delay.
    for wrong in (tau - 1.0, tau + 1.0):
        assert _dde_residual(x, DT, wrong) > 20 * right


def test_second_order_convergence():
    def at(t, dt):
        return _series(17.0, int(round(t / dt)), dt=dt)[-1]

    ref = at(150.0, 0.0125)
    e1 = abs(at(150.0, 0.1) - ref)
    e2 = abs(at(150.0, 0.05) - ref)
    assert e1 < 1e-3
    assert 3.0 < e1 / e2 < 6.0  # halving the step cuts the error ~4x


def test_non_integer_delay():
    """tau / dt = 170.5 is off the grid; the solution must still obey its own delay."""
    x = _series(17.05, 30_000, history=np.full(400, 1.1))[5000:]
    right = _dde_residual(x, DT, 17.05)
    assert right < 5e-5
    assert _dde_residual(x, DT, 17.0) > 20 * right
    assert _dde_residual(x, DT, 17.1) > 20 * right


def test_tau17_is_chaotic_and_short_delay_is_not():
    def divergence(tau):
        h = np.full(int(tau / DT) + 2, 1.2)
        h2 = h.copy()
        h2[-1] += 1e-9
        a, b = _series(tau, 80_000, history=h), _series(tau, 80_000, history=h2)
        return float(np.max(np.abs(a - b)[-20_000:]))

    assert divergence(17.0) > 0.05  # sensitive dependence on initial conditions
    assert divergence(10.0) < 1e-6  # tau = 10 settles on a stable limit cycle


def test_tau17_attractor_range_and_period():
    x = _series(17.0, 200_000)[20_000::10]  # unit-time samples after the transient
    assert 0.38 < x.min() < 0.48 and 1.28 < x.max() < 1.36
    spec = np.abs(np.fft.rfft(x - x.mean()))
    freq = np.fft.rfftfreq(x.size)
    assert 1 / freq[np.argmax(spec[1:]) + 1] == pytest.approx(50.0, rel=0.05)


def test_stream_windows_are_consistent():
    s = make_stream("mackey_glass", 3000, seed=2)
    assert s.n_inputs == 4 and s.n_outputs == 1
    # Columns are oldest-first lags spaced 6 samples apart; the target is the next value.
    np.testing.assert_array_equal(s.x[6:, :-1], s.x[:-6, 1:])
    np.testing.assert_array_equal(s.x[1:, -1], s.y[:-1, 0])
    s3 = make_stream("mackey_glass", 500, seed=2, lags=3, lag_spacing=2, horizon=5)
    np.testing.assert_array_equal(s3.x[5:, -1], s3.y[:-5, 0])
    np.testing.assert_array_equal(s3.x[2:, 0], s3.x[:-2, 1])


def test_stream_scaling_and_raw_values():
    s = make_stream("mackey_glass", 20_000, seed=1)
    raw = s.y[:, 0] * SCALE + OFFSET
    assert 0.15 < raw.min() and raw.max() < 1.45
    assert np.all(np.abs(s.x) < 1.1)


def test_switch_changes_only_the_future_at_the_exact_sample():
    sw_stream = make_stream("mackey_glass", 4000, seed=3)
    plain = make_stream("mackey_glass", 4000, seed=3, taus=(17.0,))
    (sw,) = sw_stream.switches
    assert sw == 2000
    np.testing.assert_array_equal(sw_stream.x[:sw + 1], plain.x[:sw + 1])
    np.testing.assert_array_equal(sw_stream.y[:sw], plain.y[:sw])
    assert np.max(np.abs(sw_stream.y[sw:sw + 5] - plain.y[sw:sw + 5])) > 1e-3


def _acf_minimum(seg, max_lag=60):
    """Lag (in samples) of the deepest autocorrelation trough: about half the pseudo-period."""
    c = seg - seg.mean()
    acf = [np.dot(c[:-lag], c[lag:]) for lag in range(1, max_lag)]
    return int(np.argmin(acf)) + 1


@pytest.mark.parametrize("seed", [0, 4])
def test_switch_changes_the_oscillation_time_scale(seed):
    s = make_stream("mackey_glass", 20_000, seed=seed)
    (sw,) = s.switches
    v = s.x[:, -1]
    assert 22 <= _acf_minimum(v[:sw]) <= 26  # tau = 17: pseudo-period ~ 50
    assert 33 <= _acf_minimum(v[sw + 1000:]) <= 41  # tau = 30: markedly slower


def test_beta_switch():
    s = make_stream("mackey_glass", 6000, seed=0, taus=(17.0,), betas=(0.2, 0.25))
    plain = make_stream("mackey_glass", 6000, seed=0, taus=(17.0,))
    (sw,) = s.switches
    np.testing.assert_array_equal(s.y[:sw], plain.y[:sw])
    assert s.meta["betas"] == (0.2, 0.25)
    # A larger gain feeds more back: the series sits higher on average.
    assert s.y[sw + 500:].mean() > plain.y[sw + 500:].mean()


def test_stream_prefix_is_causal():
    short = make_stream("mackey_glass", 800, seed=9, switch_fractions=())
    long = make_stream("mackey_glass", 3000, seed=9, switch_fractions=())
    np.testing.assert_array_equal(short.x, long.x[:800])
    np.testing.assert_array_equal(short.y, long.y[:800])


def test_observation_noise():
    clean = make_stream("mackey_glass", 5000, seed=1)
    noisy = make_stream("mackey_glass", 5000, seed=1, noise_std=0.01)
    resid = (noisy.y - clean.y) * SCALE
    assert resid.std() == pytest.approx(0.01, rel=0.1)


def test_history_shorter_than_delay_is_rejected():
    with pytest.raises(ValueError, match="history"):
        integrate_mackey_glass(np.ones(50), 10, dt=0.1, tau=17.0)
