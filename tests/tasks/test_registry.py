"""Cross-task properties of make_stream: determinism, shapes, ranges, validation."""

import numpy as np
import pytest

from codesign.tasks import TASKS, TaskStream, list_tasks, make_stream, task_options

NAMES = sorted(TASKS)
N = 4000


@pytest.fixture(scope="module", params=NAMES)
def stream(request):
    return make_stream(request.param, N, seed=11)


def test_registry_lists_the_four_tasks_with_descriptions():
    tasks = list_tasks()
    assert set(tasks) == {"function_tracking", "qubit_readout", "mackey_glass", "pendulum_id"}
    assert set(tasks) == set(TASKS)
    for text in tasks.values():
        assert isinstance(text, str) and text and "\n" not in text


def test_shapes_dtypes_and_finiteness(stream):
    assert isinstance(stream, TaskStream)
    assert len(stream) == N
    assert stream.x.shape == (N, stream.n_inputs) and stream.y.shape == (N, stream.n_outputs)
    assert stream.x.dtype == np.float64 and stream.y.dtype == np.float64
    assert np.isfinite(stream.x).all() and np.isfinite(stream.y).all()
    assert stream.meta["seed"] == 11
    assert stream.meta["regime"].shape == (N,)


def test_values_scaled_into_unit_range(stream):
    for arr in (stream.x, stream.y):
        inside = np.mean(np.abs(arr) <= 1.5, axis=0)
        assert (inside >= 0.99).all(), (stream.name, inside)
        # The scaling must not squash a feature into a tiny sliver of [-1, 1].
        assert (arr.std(axis=0) > 0.05).all(), (stream.name, arr.std(axis=0))


def test_scaling_constants_do_not_depend_on_seed_or_length():
    for name in NAMES:
        a = make_stream(name, 500, seed=1).meta
        b = make_stream(name, 3000, seed=2).meta
        for key in ("x_offset", "x_scale", "y_offset", "y_scale"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=f"{name}:{key}")


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_is_bitwise_identical(name):
    a = make_stream(name, 3000, seed=5)
    b = make_stream(name, 3000, seed=5)
    assert a.x.tobytes() == b.x.tobytes() and a.y.tobytes() == b.y.tobytes()
    assert a.switches == b.switches
    if "labels" in a.meta:
        np.testing.assert_array_equal(a.meta["labels"], b.meta["labels"])


@pytest.mark.parametrize("name", NAMES)
def test_different_seeds_give_different_streams(name):
    a = make_stream(name, 3000, seed=5)
    b = make_stream(name, 3000, seed=6)
    assert not np.allclose(a.x, b.x)
    assert a.switches == b.switches  # switch times depend only on n and the options


@pytest.mark.parametrize("name", NAMES)
def test_default_switches_are_proportional_to_length(name):
    for n in (1000, 20_000):
        s = make_stream(name, n, seed=0)
        assert len(s.switches) >= 1
        assert all(0 < k < n for k in s.switches)
        fractions = [k / n for k in s.switches]
        other = make_stream(name, 2 * n, seed=0)
        assert [k / (2 * n) for k in other.switches] == pytest.approx(fractions, abs=1e-3)
        # The regime counter steps exactly at the switches.
        steps = np.flatnonzero(np.diff(s.meta["regime"])) + 1
        assert tuple(steps) == s.switches


@pytest.mark.parametrize("name", NAMES)
def test_switch_fractions_option_moves_switches(name):
    s = make_stream(name, 1000, seed=0, switch_fractions=(0.1, 0.9))
    assert s.switches == (100, 900)
    s = make_stream(name, 1000, seed=0, switch_fractions=())
    assert s.switches == ()
    assert (s.meta["regime"] == 0).all()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_tiny_streams(name, n):
    s = make_stream(name, n, seed=0)
    assert len(s) == n
    assert all(0 < k < n for k in s.switches)
    assert np.isfinite(s.x).all() and np.isfinite(s.y).all()


@pytest.mark.parametrize("name", NAMES)
def test_arrays_are_read_only(name):
    s = make_stream(name, 50, seed=0)
    with pytest.raises(ValueError):
        s.x[0, 0] = 1.0
    with pytest.raises(ValueError):
        s.y[0, 0] = 1.0


def test_unknown_task_lists_valid_names():
    with pytest.raises(ValueError, match="unknown task 'nope'") as info:
        make_stream("nope")
    for name in NAMES:
        assert name in str(info.value)


@pytest.mark.parametrize("n", [0, -5, 2.5, True, "100", None])
def test_bad_n_samples(n):
    with pytest.raises(ValueError, match="n_samples"):
        make_stream("function_tracking", n)


@pytest.mark.parametrize("seed", [-1, 1.5, "0", None])
def test_bad_seed(seed):
    with pytest.raises(ValueError, match="seed"):
        make_stream("function_tracking", 10, seed=seed)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_option_is_named(name):
    with pytest.raises(ValueError, match="'bogus'") as info:
        make_stream(name, 10, bogus=1)
    assert "switch_fractions" in str(info.value)  # valid options are listed
    assert "\n" not in str(info.value)


BAD_OPTIONS = [
    ("function_tracking", {"n_inputs": 0}, "n_inputs"),
    ("function_tracking", {"n_inputs": 2.0}, "n_inputs"),
    ("function_tracking", {"functions": ("sines", "cubic")}, "cubic"),
    ("function_tracking", {"functions": "sines"}, "functions"),
    ("function_tracking", {"functions": ()}, "functions"),
    ("function_tracking", {"noise_std": -0.1}, "noise_std"),
    ("function_tracking", {"switch_fractions": (0.5, 0.25)}, "switch_fractions"),
    ("function_tracking", {"switch_fractions": (0.0, 0.5)}, "switch_fractions"),
    ("function_tracking", {"switch_fractions": (0.5, 1.0)}, "switch_fractions"),
    ("function_tracking", {"switch_fractions": 0.5}, "switch_fractions"),
    ("qubit_readout", {"noise_levels": (0.3, 0.0)}, "noise_levels"),
    ("qubit_readout", {"noise_levels": ()}, "noise_levels"),
    ("qubit_readout", {"p_excited": 1.5}, "p_excited"),
    ("qubit_readout", {"decay_ratio": -1.0}, "decay_ratio"),
    ("qubit_readout", {"drift_period": 0.0}, "drift_period"),
    ("qubit_readout", {"walk_std": float("nan")}, "walk_std"),
    ("mackey_glass", {"taus": (17.0, 0.5)}, "taus"),
    ("mackey_glass", {"betas": (0.0,)}, "betas"),
    ("mackey_glass", {"lags": 0}, "lags"),
    ("mackey_glass", {"lag_spacing": 0}, "lag_spacing"),
    ("mackey_glass", {"horizon": 0}, "horizon"),
    ("mackey_glass", {"dt": 0.3}, "sample_interval / dt"),
    ("mackey_glass", {"dt": 0.0}, "dt"),
    ("mackey_glass", {"warmup": -1.0}, "warmup"),
    ("pendulum_id", {"masses": (1.0, -2.0)}, "masses"),
    ("pendulum_id", {"frictions": (-0.1,)}, "frictions"),
    ("pendulum_id", {"max_torque": 0.0}, "max_torque"),
    ("pendulum_id", {"torque_hold": 0.5}, "torque_hold"),
    ("pendulum_id", {"substeps": 0}, "substeps"),
    ("pendulum_id", {"target": "angle"}, "target"),
    ("pendulum_id", {"dt": 1.0}, "dt"),
]


@pytest.mark.parametrize("name, options, needle", BAD_OPTIONS)
def test_bad_option_values(name, options, needle):
    with pytest.raises(ValueError) as info:
        make_stream(name, 100, **options)
    message = str(info.value)
    assert needle in message and name in message and "\n" not in message


def test_task_options_reports_defaults():
    opts = task_options("mackey_glass")
    assert opts["lags"] == 4 and opts["taus"] == (17.0, 30.0)
    with pytest.raises(ValueError, match="unknown task"):
        task_options("pendulum")


@pytest.mark.parametrize("name", NAMES)
def test_generation_is_fast_enough(name):
    import time

    make_stream(name, 1000, seed=0)
    start = time.perf_counter()
    make_stream(name, 100_000, seed=0)
    # Generous bound (the target is well under a second) to stay robust on slow CI.
    assert time.perf_counter() - start < 5.0
