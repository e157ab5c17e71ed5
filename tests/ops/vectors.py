"""Integer test vectors of the operation tests: the corner values of a type and random raw values."""

from __future__ import annotations

import numpy as np

from codesign.fixed import FixedType
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec, MLPSpec


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


NO_STATS = None  # not profiling


def layer_vectors(spec: KANSpec, layer: int, rng: np.random.Generator, n_random: int = 200,
                  n_extreme: int = 40) -> dict[str, np.ndarray]:
    """Inputs of one layer's operations: n_random vectors, half uniform over each type and half of
    half its bits (sums that do not saturate), then n_extreme drawn from the types' corners.

    coef (n, o, i, m), cell (n, i) (0 and G-1 included), window (n, o, i, k1), basis and dbasis
    (n, i, k1), clamped (n, i), g_out (n, o) of g_t (err_t for the last layer, grad_t otherwise).
    """
    n_in, n_out = spec.layer_shapes[layer]
    k1, n = spec.spline_order + 1, n_random + n_extreme
    g_t = spec.err_t if layer == len(spec.layer_shapes) - 1 else spec.grad_t
    shapes = {
        "coef": (spec.coef_t, (n, n_out, n_in, spec.n_coef)), "window": (spec.coef_t, (n, n_out, n_in, k1)),
        "basis": (spec.basis_t, (n, n_in, k1)), "dbasis": (spec.dbasis_t, (n, n_in, k1)), "g_out": (g_t, (n, n_out)),
    }
    out = {}
    for name, (t, shape) in shapes.items():
        wide = random_raw(t, (n_random - n_random // 2, *shape[1:]), rng)
        narrow = random_raw(t, (n_random // 2, *shape[1:]), rng) >> (t.width // 2)
        out[name] = np.concatenate([wide, narrow, extreme_raw(t, (n_extreme, *shape[1:]), rng)])
    cell = rng.integers(0, spec.grid_size, size=(n, n_in), dtype=np.int64)
    cell[:2] = [[0] * n_in, [spec.grid_size - 1] * n_in]
    out["cell"] = cell
    clamped = rng.integers(0, 2, size=(n, n_in), dtype=np.int64)
    clamped[:2] = 0
    out["clamped"] = clamped
    return out


def assert_equal(name: str, python: np.ndarray, other: np.ndarray, what: str) -> None:
    """python == other element for element, or a message naming the first differing vectors."""
    assert python.shape == other.shape, f"{name}: shapes {python.shape} and {other.shape}"
    bad = np.argwhere(python != other)
    assert bad.size == 0, (
        f"{name}: {len(bad)} values differ, first at {[tuple(b) for b in bad[:3]]}: "
        f"python {python[tuple(bad[:3].T)]} {what} {other[tuple(bad[:3].T)]}"
    )


def _mixed(t: FixedType, shape: tuple[int, ...], n_random: int, n_extreme: int, rng: np.random.Generator) -> np.ndarray:
    """n_random rows half uniform over the type and half of half its bits, then n_extreme rows of its corners."""
    wide = random_raw(t, (n_random - n_random // 2, *shape), rng)
    narrow = random_raw(t, (n_random // 2, *shape), rng) >> (t.width // 2)
    return np.concatenate([wide, narrow, extreme_raw(t, (n_extreme, *shape), rng)])


def dense_vectors(spec: MLPSpec, layer: int, rng: np.random.Generator, n_random: int = 200,
                  n_extreme: int = 40) -> dict[str, np.ndarray]:
    """Inputs of one MLP layer's operations: w (n, o, n_in + 1) of coef_t (each row's weights then its bias),
    x (n, n_in) and z (n, n_out) of act_t (z with -1.0, 0 and 1.0 where act_t holds them, the activations' edges),
    g_out (n, n_out) of g_t (err_t for the last layer, grad_t otherwise), target (n, n_out) of act_t.
    """
    n_in, n_out = spec.layer_shapes[layer]
    g_t = spec.err_t if layer == len(spec.layer_shapes) - 1 else spec.grad_t
    out = {
        "w": _mixed(spec.coef_t, (n_out, n_in + 1), n_random, n_extreme, rng),
        "x": _mixed(spec.act_t, (n_in,), n_random, n_extreme, rng),
        "z": _mixed(spec.act_t, (n_out,), n_random, n_extreme, rng),
        "g_out": _mixed(g_t, (n_out,), n_random, n_extreme, rng),
        "target": _mixed(spec.act_t, (n_out,), n_random, n_extreme, rng),
    }
    lo, hi = raw_range(spec.act_t)
    one = 1 << spec.act_t.frac
    edges = np.clip(np.array([-one - 1, -one, -one + 1, -1, 0, 1, one - 1, one, one + 1]), lo, hi)
    out["z"][: edges.size] = edges[:, None]
    return out
