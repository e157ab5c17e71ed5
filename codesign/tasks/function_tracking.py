r"""Function tracking: regress a target function that switches abruptly.

Inputs are drawn i.i.d. uniformly, ``x[t] ~ U([-1, 1]^d)`` (``d = n_inputs``,
default 2), and the target is ``y[t] = f_k(x[t]) + e[t]`` with
``e[t] ~ N(0, noise_std^2)`` (default ``noise_std = 0``, i.e. noiseless).
The active function ``f_k`` is constant within a segment and changes abruptly
at each switch.  Every function maps ``[-1, 1]^d`` into ``[-1, 1]``:

=========  ==========================================================
name       definition (``r = ||x||_2 / sqrt(d)``)
=========  ==========================================================
sines      :math:`\frac{1}{d}\sum_i \sin(\pi x_i)`
bump       :math:`2\exp(-\|x - c\|^2 / (2 s^2)) - 1`, ``c_i = 0.4 (-1)^i``,
           ``s = 0.5 sqrt(d / 2)``
product    :math:`\prod_i \sin(\pi x_i / 2)`
ripple     :math:`\cos(2\pi r)`
=========  ==========================================================

Defaults: ``switch_fractions = (0.25, 0.5, 0.75)``, i.e. switches at samples
``floor(n/4)``, ``floor(n/2)``, ``floor(3n/4)``, and
``functions = ("sines", "bump", "product", "ripple")`` for the four segments
(segment ``k`` uses ``functions[k % len(functions)]``).

Scaling: none is needed; inputs and noiseless targets already lie in
``[-1, 1]`` (``x_scale = y_scale = 1``, offsets 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ._common import (
    check_fractions,
    check_int,
    check_real,
    cycle,
    make_rng,
    regime_index,
    switch_indices,
)
from .stream import TaskStream

__all__ = ["NAME", "DESCRIPTION", "FUNCTIONS", "generate"]

NAME = "function_tracking"
DESCRIPTION = "y = f_k(x) on [-1,1]^d; f_k switches among smooth nonlinear functions"


def _sines(x: np.ndarray) -> np.ndarray:
    return np.sin(np.pi * x).mean(axis=1)


def _bump(x: np.ndarray) -> np.ndarray:
    d = x.shape[1]
    centre = 0.4 * (-1.0) ** np.arange(d)
    width = 0.5 * np.sqrt(d / 2.0)
    return 2.0 * np.exp(-np.sum((x - centre) ** 2, axis=1) / (2.0 * width**2)) - 1.0


def _product(x: np.ndarray) -> np.ndarray:
    return np.prod(np.sin(0.5 * np.pi * x), axis=1)


def _ripple(x: np.ndarray) -> np.ndarray:
    r = np.sqrt(np.sum(x**2, axis=1) / x.shape[1])
    return np.cos(2.0 * np.pi * r)


FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sines": _sines,
    "bump": _bump,
    "product": _product,
    "ripple": _ripple,
}


def generate(
    n_samples: int,
    seed: int,
    *,
    n_inputs: int = 2,
    functions: Sequence[str] = ("sines", "bump", "product", "ripple"),
    switch_fractions: Sequence[float] = (0.25, 0.5, 0.75),
    noise_std: float = 0.0,
) -> TaskStream:
    """Generate a function-tracking stream (see the module docstring)."""
    d = check_int(NAME, "n_inputs", n_inputs, minimum=1, maximum=64)
    fractions = check_fractions(NAME, "switch_fractions", switch_fractions)
    noise_std = check_real(NAME, "noise_std", noise_std, low=0.0)
    if isinstance(functions, str) or not isinstance(functions, Sequence) or not functions:
        raise ValueError(f"{NAME}: option 'functions' must be a non-empty sequence of names, "
                         f"got {functions!r}")
    unknown = [f for f in functions if not isinstance(f, str) or f not in FUNCTIONS]
    if unknown:
        raise ValueError(f"{NAME}: unknown function(s) {unknown} in option 'functions'; "
                         f"valid: {', '.join(FUNCTIONS)}")
    segment_functions = cycle(tuple(functions), len(fractions) + 1)

    rng = make_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n_samples, d))
    noise = rng.standard_normal(n_samples) * noise_std
    regime = regime_index(n_samples, fractions)
    y = np.empty(n_samples)
    for k, fname in enumerate(segment_functions):
        sel = regime == k
        if sel.any():
            y[sel] = FUNCTIONS[fname](x[sel])
    y += noise

    meta = {
        "seed": seed,
        "n_inputs": d,
        "functions": segment_functions,
        "switch_fractions": fractions,
        "noise_std": noise_std,
        "regime": regime,
        "x_offset": np.zeros(d),
        "x_scale": np.ones(d),
        "y_offset": np.zeros(1),
        "y_scale": np.ones(1),
    }
    return TaskStream(NAME, x, y[:, None], switch_indices(n_samples, fractions), meta)
