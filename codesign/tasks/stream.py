"""The :class:`TaskStream` container shared by all online-learning tasks.

A stream is a fixed sequence of ``(x[t], y[t])`` pairs that an online learner
consumes in order (predict ``y[t]`` from ``x[t]``, then update).  ``switches``
lists the sample indices at which the data-generating process changes
abruptly: sample ``switches[k]`` is the first sample produced by the new
regime.  ``train`` holds the train-enable of every sample (1: predict, then update; 0: predict only);
all ones unless the stream says otherwise (a user's data file may).  ``meta`` carries the task parameters, the seed, the fixed scaling
constants and task-specific extras (for example ``meta['labels']`` for the
qubit-readout task and ``meta['regime']``, the per-sample regime index, for
every task).

The arrays are validated on construction (2-D, float64, matching lengths,
finite, switches strictly increasing inside ``(0, n)``) and made read-only so
that a stream can be shared between learners without defensive copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["TaskStream"]


@dataclass(frozen=True, eq=False)
class TaskStream:
    """A seeded, finite online-learning stream with known switch points."""

    name: str
    x: np.ndarray
    y: np.ndarray
    switches: tuple[int, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    # (n,) int64 0/1; left out (None), every sample trains: the ones are filled in on construction
    train: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        x = np.ascontiguousarray(self.x, dtype=np.float64)
        y = np.ascontiguousarray(self.y, dtype=np.float64)
        if x.ndim != 2 or y.ndim != 2:
            raise ValueError(
                f"TaskStream '{self.name}': x and y must be 2-D, got shapes {x.shape} and {y.shape}"
            )
        if x.shape[0] != y.shape[0]:
            raise ValueError(
                f"TaskStream '{self.name}': x has {x.shape[0]} samples but y has {y.shape[0]}"
            )
        if x.shape[0] < 1:
            raise ValueError(f"TaskStream '{self.name}': a stream needs at least one sample")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise ValueError(f"TaskStream '{self.name}': x or y contains NaN or inf")
        switches = tuple(int(s) for s in self.switches)
        n = x.shape[0]
        if any(s <= 0 or s >= n for s in switches) or any(
            b <= a for a, b in zip(switches, switches[1:])
        ):
            raise ValueError(
                f"TaskStream '{self.name}': switches must be strictly increasing "
                f"in (0, {n}), got {switches}"
            )
        train = np.ones(n, dtype=np.int64) if self.train is None else np.asarray(self.train)
        if train.shape != (n,) or not np.isin(train, (0, 1)).all():
            raise ValueError(f"TaskStream '{self.name}': train must hold one 0 or 1 per sample")
        train = np.ascontiguousarray(train, dtype=np.int64)
        x.flags.writeable = False
        y.flags.writeable = False
        train.flags.writeable = False
        object.__setattr__(self, "train", train)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "switches", switches)

    @property
    def n_inputs(self) -> int:
        """Number of input features per sample."""
        return int(self.x.shape[1])

    @property
    def n_outputs(self) -> int:
        """Number of target values per sample."""
        return int(self.y.shape[1])

    def __len__(self) -> int:
        """Number of samples in the stream."""
        return int(self.x.shape[0])

    def __repr__(self) -> str:
        return (
            f"TaskStream(name={self.name!r}, n={len(self)}, n_inputs={self.n_inputs}, "
            f"n_outputs={self.n_outputs}, switches={self.switches})"
        )
