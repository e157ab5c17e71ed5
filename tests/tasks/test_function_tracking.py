"""function_tracking: y is a smooth function of x that changes at the switches."""

from itertools import combinations_with_replacement

import numpy as np
import pytest

from codesign.tasks import make_stream


def _features(x, degree):
    cols = [np.ones(len(x))]
    for d in range(1, degree + 1):
        for combo in combinations_with_replacement(range(x.shape[1]), d):
            cols.append(np.prod(x[:, list(combo)], axis=1))
    return np.column_stack(cols)


def _fit_errors(stream, fit, test_pre, test_post, degree=7):
    """Fit a polynomial on `fit`; return held-out MSE before and after the switch."""
    f = _features(stream.x, degree)
    coef, *_ = np.linalg.lstsq(f[fit], stream.y[fit, 0], rcond=None)

    def mse(sl):
        return float(np.mean((f[sl] @ coef - stream.y[sl, 0]) ** 2))

    return mse(test_pre), mse(test_post)


def test_target_is_smooth_within_segments_and_changes_at_switches():
    s = make_stream("function_tracking", 24_000, seed=3)
    assert s.switches == (6000, 12000, 18000)
    for sw in s.switches:
        pre, post = _fit_errors(s, slice(sw - 5000, sw - 1000), slice(sw - 1000, sw),
                                slice(sw, sw + 1000))
        assert pre < 2e-3, (sw, pre)       # the segment is one deterministic smooth map
        assert post > 0.05, (sw, post)     # ... which is not the next segment's map
        assert post > 50 * pre


def test_no_change_when_all_segments_share_a_function():
    s = make_stream("function_tracking", 12_000, seed=3, functions=("bump",))
    assert s.meta["functions"] == ("bump",) * 4
    sw = s.switches[1]
    pre, post = _fit_errors(s, slice(sw - 5000, sw - 1000), slice(sw - 1000, sw),
                            slice(sw, sw + 1000))
    assert post < 2e-3 and pre < 2e-3


def test_inputs_uniform_and_targets_bounded():
    s = make_stream("function_tracking", 50_000, seed=0, n_inputs=3)
    assert s.n_inputs == 3 and s.n_outputs == 1
    assert np.abs(s.x).max() <= 1.0 and np.abs(s.y).max() <= 1.0
    # Uniform marginals: mean 0, variance 1/3.
    np.testing.assert_allclose(s.x.mean(axis=0), 0.0, atol=0.01)
    np.testing.assert_allclose(s.x.var(axis=0), 1 / 3, rtol=0.02)
    # Every segment's function actually uses a good part of the output range.
    for k in range(4):
        seg = s.y[s.meta["regime"] == k, 0]
        assert seg.max() - seg.min() > 1.0, s.meta["functions"][k]


def test_noise_std_sets_the_irreducible_error():
    clean = make_stream("function_tracking", 8000, seed=1, switch_fractions=())
    noisy = make_stream("function_tracking", 8000, seed=1, switch_fractions=(), noise_std=0.1)
    np.testing.assert_array_equal(clean.x, noisy.x)
    resid = noisy.y - clean.y
    assert resid.std() == pytest.approx(0.1, rel=0.05)
    assert abs(resid.mean()) < 0.01


def test_stream_prefix_is_causal():
    """Without switches a shorter stream is a prefix of a longer one: no look-ahead scaling."""
    short = make_stream("function_tracking", 1000, seed=4, switch_fractions=())
    long = make_stream("function_tracking", 5000, seed=4, switch_fractions=())
    np.testing.assert_array_equal(short.x, long.x[:1000])
    np.testing.assert_array_equal(short.y, long.y[:1000])
