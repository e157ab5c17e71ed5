"""Integer test vectors of the operation tests: the corner values of a type and random raw values."""

from __future__ import annotations

import numpy as np

from codesign.fixed import FixedType
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec


def raw_range(t: FixedType) -> tuple[int, int]:
    """The smallest and the largest raw integer of a type."""
    if t.signed:
        return -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
    return 0, (1 << t.width) - 1


def corners(t: FixedType) -> np.ndarray:
    """The extremes of a type, one step inside them, and -1, 0, 1 where the type holds them."""
    lo, hi = raw_range(t)
    return np.unique(np.clip(np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi], dtype=np.int64), lo, hi))


def random_raw(t: FixedType, shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Uniform raw values over the whole range of a type."""
    lo, hi = raw_range(t)
    return rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)


def extreme_raw(t: FixedType, shape: int | tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Raw values drawn from the type's corners only (saturating sums, zero products)."""
    c = corners(t)
    return c[rng.integers(0, c.size, size=shape)]


def reference_tables(spec: KANSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(types, grid, basis ROM, derivative ROM): the packed tables the Python kernel reads."""
    learner = KANLearner(spec)
    return learner.types, learner.grid, learner.brom, learner.drom


NO_STATS = np.zeros((0, 5))
