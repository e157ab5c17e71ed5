"""TaskStream validation."""

import numpy as np
import pytest

from codesign.tasks import TaskStream


def _make(x=None, y=None, switches=(2,)):
    x = np.zeros((5, 2)) if x is None else x
    y = np.zeros((5, 1)) if y is None else y
    return TaskStream("toy", x, y, switches, {})


def test_properties_and_conversion():
    s = _make(x=np.arange(10, dtype=np.float32).reshape(5, 2), switches=[1, 3])
    assert s.n_inputs == 2 and s.n_outputs == 1 and len(s) == 5
    assert s.x.dtype == np.float64 and s.switches == (1, 3)
    assert "toy" in repr(s)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_rejected(bad):
    x = np.zeros((5, 2))
    x[3, 1] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        _make(x=x)
    y = np.zeros((5, 1))
    y[0, 0] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        _make(y=y)


@pytest.mark.parametrize("switches", [(0,), (5,), (3, 3), (3, 2), (-1,)])
def test_bad_switches_rejected(switches):
    with pytest.raises(ValueError, match="switches"):
        _make(switches=switches)


def test_shape_mismatch_rejected():
    with pytest.raises(ValueError, match="samples"):
        _make(y=np.zeros((4, 1)))
    with pytest.raises(ValueError, match="2-D"):
        _make(y=np.zeros(5))
    with pytest.raises(ValueError, match="at least one"):
        TaskStream("toy", np.zeros((0, 1)), np.zeros((0, 1)), (), {})


def test_frozen():
    s = _make()
    with pytest.raises(AttributeError):
        s.name = "other"
