"""Validation and switch-schedule helpers shared by the task generators."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_fractions",
    "check_per_segment",
    "cycle",
    "segment_starts",
    "switch_indices",
    "regime_index",
    "make_rng",
]


def _fail(task: str, option: str, requirement: str, value: Any) -> ValueError:
    return ValueError(f"{task}: option '{option}' must be {requirement}, got {value!r}")


def check_int(task: str, option: str, value: Any, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Return ``value`` as an int after checking type and bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _fail(task, option, "an integer", value)
    value = int(value)
    if minimum is not None and value < minimum:
        raise _fail(task, option, f"an integer >= {minimum}", value)
    if maximum is not None and value > maximum:
        raise _fail(task, option, f"an integer <= {maximum}", value)
    return value


def check_real(task: str, option: str, value: Any, *, low: float | None = None,
               high: float | None = None, low_open: bool = False,
               high_open: bool = False) -> float:
    """Return ``value`` as a finite float inside the given (open/closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(task, option, "a real number", value)
    v = float(value)
    if not math.isfinite(v):
        raise _fail(task, option, "finite", value)
    if low is not None and (v < low or (low_open and v == low)):
        raise _fail(task, option, f"{'>' if low_open else '>='} {low}", value)
    if high is not None and (v > high or (high_open and v == high)):
        raise _fail(task, option, f"{'<' if high_open else '<='} {high}", value)
    return v


def check_choice(task: str, option: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise _fail(task, option, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def _as_sequence(task: str, option: str, value: Any) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise _fail(task, option, "a sequence", value)
    return tuple(np.asarray(value).tolist()) if isinstance(value, np.ndarray) else tuple(value)


def check_fractions(task: str, option: str, value: Any) -> tuple[float, ...]:
    """Validate switch positions given as strictly increasing fractions in (0, 1)."""
    items = _as_sequence(task, option, value)
    out = []
    for item in items:
        if (isinstance(item, bool) or not isinstance(item, numbers.Real)
                or not 0.0 < float(item) < 1.0):
            raise _fail(task, option, "fractions strictly between 0 and 1", value)
        out.append(float(item))
    if any(b <= a for a, b in zip(out, out[1:])):
        raise _fail(task, option, "strictly increasing", value)
    return tuple(out)


def check_per_segment(task: str, option: str, value: Any, *, low: float | None = None,
                      high: float | None = None, low_open: bool = False) -> tuple[float, ...]:
    """Validate a non-empty sequence of per-segment real parameters."""
    items = _as_sequence(task, option, value)
    if not items:
        raise _fail(task, option, "a non-empty sequence", value)
    for item in items:
        if isinstance(item, bool) or not isinstance(item, numbers.Real):
            raise _fail(task, option, "a sequence of real numbers", value)
        v = float(item)
        if (not math.isfinite(v) or (low is not None and (v < low or (low_open and v == low)))
                or (high is not None and v > high)):
            bounds = []
            if low is not None:
                bounds.append(f"{'>' if low_open else '>='} {low}")
            if high is not None:
                bounds.append(f"<= {high}")
            raise _fail(task, option, "a sequence of finite values " + " and ".join(bounds), value)
    return tuple(float(v) for v in items)


def cycle(values: Sequence[Any], n_segments: int) -> tuple[Any, ...]:
    """Repeat ``values`` cyclically to cover ``n_segments`` segments."""
    return tuple(values[k % len(values)] for k in range(n_segments))


def segment_starts(n_samples: int, fractions: Sequence[float]) -> np.ndarray:
    """Start index ``floor(f * n)`` of every segment after the first (non-decreasing)."""
    return np.array([int(math.floor(f * n_samples)) for f in fractions], dtype=np.int64)


def switch_indices(n_samples: int, fractions: Sequence[float]) -> tuple[int, ...]:
    """Distinct segment starts that fall strictly inside the stream, i.e. in (0, n)."""
    starts = segment_starts(n_samples, fractions)
    return tuple(sorted({int(i) for i in starts if 0 < i < n_samples}))


def regime_index(n_samples: int, fractions: Sequence[float]) -> np.ndarray:
    """Per-sample segment number: segment k covers ``[floor(f[k-1] n), floor(f[k] n))``."""
    starts = segment_starts(n_samples, fractions)
    return np.searchsorted(starts, np.arange(n_samples), side="right").astype(np.int16)


def make_rng(seed: int) -> np.random.Generator:
    """The generator used by every task (PCG64 seeded with ``seed``)."""
    return np.random.default_rng(seed)
