"""online_metrics on synthetic predictions."""

import numpy as np
import pytest

from codesign.tasks import TaskStream, make_stream, online_metrics


def _toy(n=10_000, switches=(2500, 5000, 7500), labels=None, n_outputs=1):
    rng = np.random.default_rng(0)
    y = rng.uniform(-1, 1, (n, n_outputs))
    meta = {} if labels is None else {"labels": labels}
    return TaskStream("toy", np.zeros((n, 1)), y, switches, meta)


def _with_error(stream, err_sq):
    """Predictions whose per-sample squared error is exactly `err_sq`."""
    return stream.y[:, 0] + np.sqrt(err_sq)


def test_perfect_prediction():
    s = make_stream("pendulum_id", 5000, seed=0)
    m = online_metrics(s.y, s)
    assert m["mse"] == 0.0 and m["final_mse"] == 0.0
    assert np.all(m["window_mse"] == 0.0)
    assert m["recovery_times"] == (0, 0, 0)
    assert m["segment_mse"] == (0.0,) * 4 and m["pre_switch_mse"] == (0.0,) * 3
    assert "accuracy" not in m


def test_constant_error_and_1d_predictions():
    s = _toy()
    pred = s.y[:, 0] + 0.2
    m = online_metrics(pred, s, window=100)
    assert m["mse"] == pytest.approx(0.04)
    assert m["final_mse"] == pytest.approx(0.04)
    np.testing.assert_allclose(m["window_mse"], 0.04)
    assert m["recovery_times"] == (0, 0, 0)
    m2 = online_metrics(pred[:, None], s, window=100)
    assert m2["mse"] == m["mse"] and m2["recovery_times"] == m["recovery_times"]


def test_multi_output_error_is_averaged_over_outputs():
    s = _toy(n=1000, switches=(), n_outputs=2)
    pred = s.y + np.array([0.0, 0.2])
    assert online_metrics(pred, s)["mse"] == pytest.approx(0.02)


def test_windowed_and_final_errors_match_naive_loops():
    s = _toy(n=1200, switches=(400, 900))
    rng = np.random.default_rng(1)
    pred = s.y[:, 0] + rng.normal(0, 0.3, 1200) * np.linspace(1, 0.1, 1200)
    w = 150
    m = online_metrics(pred, s, window=w)
    e = (pred - s.y[:, 0]) ** 2
    naive = np.array([e[max(0, t - w + 1):t + 1].mean() for t in range(1200)])
    np.testing.assert_allclose(m["window_mse"], naive, rtol=1e-10, atol=1e-15)
    assert m["final_mse"] == pytest.approx(e[-w:].mean(), rel=1e-12)
    assert m["mse"] == pytest.approx(e.mean(), rel=1e-12)
    assert m["segment_mse"] == pytest.approx([e[:400].mean(), e[400:900].mean(), e[900:].mean()])
    assert m["pre_switch_mse"] == pytest.approx([e[250:400].mean(), e[750:900].mean()])


@pytest.mark.parametrize("m_burst", [0, 1, 37, 400, 1800])
def test_burst_of_m_samples_recovers_in_m(m_burst):
    s = _toy()
    err = np.full(len(s), 0.01)
    for sw in s.switches:
        err[sw:sw + m_burst] = 1.0
    out = online_metrics(_with_error(s, err), s, window=200)
    assert out["recovery_times"] == (m_burst,) * 3
    assert out["pre_switch_mse"] == pytest.approx((0.01,) * 3)


def test_noisy_learner_with_exponential_recovery():
    s = _toy(n=40_000, switches=(10_000, 20_000, 30_000))
    rng = np.random.default_rng(3)
    base = 0.01 * rng.chisquare(1, len(s))  # noisy baseline squared error
    times = []
    for tau in (100.0, 400.0):
        err = base.copy()
        for sw in s.switches:
            t = np.arange(len(s) - sw)
            err[sw:] *= 1 + 200 * np.exp(-t / tau)
        times.append(online_metrics(_with_error(s, err), s, window=500)["recovery_times"])
    fast, slow = np.array(times[0]), np.array(times[1])
    assert np.all(slow > 2.5 * fast)
    # Excess error 200*exp(-t/tau) summed over a 500-window stays below 10 % of the
    # baseline (~0.01 * 500) once t >~ tau * ln(200 * tau / 50): a few tau.
    assert np.all((fast > 300) & (fast < 1000))


def test_never_recovered_and_short_segments_are_none():
    s = _toy()
    err = np.full(len(s), 0.01)
    err[5000:7500] = 0.5  # stays bad for the whole third segment
    out = online_metrics(_with_error(s, err), s, window=200)
    assert out["recovery_times"] == (0, None, 0)
    short = _toy(n=1000, switches=(500, 600))
    out = online_metrics(short.y, short, window=200)
    assert out["recovery_times"] == (None, 0)


def test_recovery_options():
    s = _toy(n=4000, switches=(2000,))
    err = np.full(len(s), 0.01)
    err[2000:] = 0.0105  # settles 5 % above the old level
    assert online_metrics(_with_error(s, err), s, window=100)["recovery_times"] == (0,)
    strict = online_metrics(_with_error(s, err), s, window=100, recovery_factor=1.01)
    assert strict["recovery_times"] == (None,)
    loose = online_metrics(_with_error(s, err), s, window=100, recovery_factor=1.0,
                           recovery_atol=0.001)
    assert loose["recovery_times"] == (0,)


def test_accuracy_for_labelled_streams():
    s = make_stream("qubit_readout", 4000, seed=0)
    labels = s.meta["labels"]
    assert online_metrics(s.y, s)["accuracy"] == 1.0
    assert online_metrics(-s.y, s)["accuracy"] == 0.0
    zero = online_metrics(np.zeros(len(s)), s, window=1000)
    assert zero["accuracy"] == pytest.approx(np.mean(labels == 1))  # 0 counts as +1
    assert zero["final_accuracy"] == pytest.approx(np.mean(labels[-1000:] == 1))
    flip = s.y[:, 0].copy()
    flip[:1000] *= -1
    out = online_metrics(0.3 * flip, s)
    assert out["accuracy"] == pytest.approx(0.75)
    assert out["segment_accuracy"] == pytest.approx((0.0, 1.0, 1.0, 1.0))


def test_bad_inputs():
    s = _toy(n=100, switches=())
    with pytest.raises(ValueError, match="shape"):
        online_metrics(np.zeros(99), s)
    with pytest.raises(ValueError, match="shape"):
        online_metrics(np.zeros((100, 2)), s)
    bad = np.zeros(100)
    bad[5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        online_metrics(bad, s)
    for w in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="window"):
            online_metrics(np.zeros(100), s, window=w)
    with pytest.raises(ValueError, match="recovery_factor"):
        online_metrics(np.zeros(100), s, recovery_factor=0.5)
    with pytest.raises(ValueError, match="recovery_atol"):
        online_metrics(np.zeros(100), s, recovery_atol="x")


def test_window_longer_than_stream():
    s = _toy(n=50, switches=(25,))
    out = online_metrics(s.y[:, 0] + 0.1, s, window=500)
    assert out["final_mse"] == pytest.approx(0.01)
    assert out["recovery_times"] == (None,)
