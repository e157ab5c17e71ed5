"""qubit_readout: Gaussian IQ blobs with T1 tails, drifting centres, switching noise."""

import math

import numpy as np
import pytest

from codesign.tasks import make_stream
from codesign.tasks.qubit_readout import _ar1


@pytest.fixture(scope="module")
def stream():
    return make_stream("qubit_readout", 60_000, seed=7)


def test_targets_are_the_labels(stream):
    labels = stream.meta["labels"]
    assert set(np.unique(labels)) == {-1, 1}
    np.testing.assert_array_equal(stream.y[:, 0], labels)
    assert np.mean(labels == 1) == pytest.approx(0.5, abs=0.01)
    skewed = make_stream("qubit_readout", 20_000, seed=7, p_excited=0.2)
    assert np.mean(skewed.meta["labels"] == 1) == pytest.approx(0.2, abs=0.01)


def test_noise_level_switches(stream):
    """Spread of undecayed shots around their true centre follows noise_levels per segment."""
    labels, decayed = stream.meta["labels"], stream.meta["decayed"]
    centre = stream.meta["centers"][np.arange(len(stream)), (labels == 1).astype(int)]
    resid = stream.x - centre
    scale = stream.meta["iq_scale"]
    levels = stream.meta["noise_levels"]
    assert len(levels) == len(stream.switches) + 1
    for k, level in enumerate(levels):
        sel = (stream.meta["regime"] == k) & ~decayed
        assert resid[sel].std(axis=0) * scale == pytest.approx([level, level], rel=0.03)
    # The switches are abrupt: compare the 500 shots on either side of each switch.
    for k, sw in enumerate(stream.switches):
        before = resid[sw - 500:sw][~decayed[sw - 500:sw]].std()
        after = resid[sw:sw + 500][~decayed[sw:sw + 500]].std()
        assert after / before == pytest.approx(levels[k + 1] / levels[k], rel=0.12)


def test_t1_decay_tail(stream):
    labels, decayed = stream.meta["labels"], stream.meta["decayed"]
    assert not decayed[labels == -1].any()
    frac = decayed[labels == 1].mean()
    assert frac == pytest.approx(1 - math.exp(-0.05), abs=0.006)
    # Decayed shots sit between the blobs: projected onto the 0 -> 1 axis they fall
    # short of the excited centre.
    c = stream.meta["centers"]
    axis = c[:, 1] - c[:, 0]
    pos = np.sum((stream.x - c[:, 0]) * axis, axis=1) / np.sum(axis**2, axis=1)
    assert 0.3 < pos[decayed].mean() < 0.7
    assert pos[(labels == 1) & ~decayed].mean() == pytest.approx(1.0, abs=0.02)
    assert pos[labels == -1].mean() == pytest.approx(0.0, abs=0.02)
    none = make_stream("qubit_readout", 5000, seed=7, decay_ratio=0.0)
    assert not none.meta["decayed"].any()


def test_centres_drift_slowly_but_keep_their_separation(stream):
    c = stream.meta["centers"] * stream.meta["iq_scale"]
    sep = np.linalg.norm(c[:, 1] - c[:, 0], axis=1)
    np.testing.assert_allclose(sep, math.hypot(1.6, 1.1), rtol=1e-12)
    angle = np.unwrap(np.arctan2(*(c[:, 1] - c[:, 0]).T[::-1]))
    # Sinusoidal phase drift of amplitude 0.5 rad over a 20 000-sample period.
    assert np.ptp(angle) == pytest.approx(1.0, abs=0.02)
    assert np.max(np.abs(np.diff(angle))) < 2 * math.pi * 0.5 / 20_000 * 1.01
    mid = 0.5 * (c[:, 0] + c[:, 1])
    assert np.ptp(mid[:, 0]) > 0.2  # the blobs really move across the stream
    # The empirical class means follow the true centres.
    for lo in (0, 30_000):
        sl = slice(lo, lo + 2000)
        lab = stream.meta["labels"][sl]
        emp = stream.x[sl][lab == -1].mean(axis=0)
        np.testing.assert_allclose(emp, stream.meta["centers"][sl, 0].mean(axis=0), atol=0.02)


def test_drift_hurts_a_frozen_classifier():
    s = make_stream("qubit_readout", 40_000, seed=3, noise_levels=(0.3,), drift_amplitude=1.0,
                    drift_period=40_000.0)
    lab = s.meta["labels"]
    # Fit a least-squares linear classifier on the first 2000 shots and freeze it.
    feats = np.column_stack([s.x, np.ones(len(s))])
    w, *_ = np.linalg.lstsq(feats[:2000], s.y[:2000, 0], rcond=None)
    acc = (np.where(feats @ w >= 0, 1, -1) == lab).astype(float)
    windows = acc[: (len(s) // 2000) * 2000].reshape(-1, 2000).mean(axis=1)
    assert windows[0] > 0.95
    assert windows.min() < windows[0] - 0.05


def test_accuracy_of_ideal_classifier_follows_the_noise(stream):
    c = stream.meta["centers"]
    d0 = np.sum((stream.x - c[:, 0]) ** 2, axis=1)
    d1 = np.sum((stream.x - c[:, 1]) ** 2, axis=1)
    hit = np.where(d1 < d0, 1, -1) == stream.meta["labels"]
    acc = [hit[stream.meta["regime"] == k].mean() for k in range(4)]
    # noise_levels (0.30, 0.45, 0.25, 0.60): the noisiest segment is the hardest.
    assert acc[2] > acc[0] > acc[1] > acc[3]
    assert acc[3] < 0.95 and acc[2] > 0.97


def test_ar1_matches_recursion():
    rng = np.random.default_rng(0)
    for a, n in [(math.exp(-1 / 300), 5000), (0.3, 50), (0.9, 1)]:
        eps = rng.standard_normal(n)
        ref = np.empty(n)
        prev = 0.7
        for t in range(n):
            prev = a * prev + eps[t]
            ref[t] = prev
        np.testing.assert_allclose(_ar1(eps, a, 0.7), ref, rtol=1e-10, atol=1e-12)


def test_walk_has_requested_statistics():
    s = make_stream("qubit_readout", 200_000, seed=1, drift_amplitude=0.0, walk_std=0.2,
                    walk_correlation=500.0)
    c = s.meta["centers"][:, 0] * s.meta["iq_scale"]
    off = c - np.array([-1.0, -0.2])
    assert off.std(axis=0) == pytest.approx([0.2, 0.2], rel=0.15)
    o = off[:, 0] - off[:, 0].mean()
    lag_corr = np.dot(o[:-500], o[500:]) / np.dot(o, o)
    assert lag_corr == pytest.approx(math.exp(-1), abs=0.12)
