"""What the bit-exact online learners share: type packing for the kernels, stream checks, run()."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from codesign.fixed import FixedType, OMode
from codesign.fixed.kernel import Int, fixed_cast
from codesign.kan.spec import KANSpec, MLPSpec

try:  # numba compiles the per-sample loops; without it they run (slowly) as plain Python.
    from numba import njit
except ImportError:  # pragma: no cover - numba is a hard dependency; this keeps imports working
    def njit(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
        """Identity decorator used when numba is missing."""
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

__all__ = ["OnlineLearner", "pack_type", "type_row", "probe", "note_clamp", "STAT_COLUMNS", "njit"]

# Columns of a profile's stats table, one row per named signal.
STAT_COLUMNS = ("min", "max", "saturations", "first_saturation", "count")
_WIDE = 62
_SAT = int(OMode.AP_SAT)


def pack_type(t: FixedType) -> np.ndarray:
    """A FixedType as the int64 row (width, frac, signed, qmode, omode) that the kernels read."""
    return np.array([t.width, t.frac, int(t.signed), int(t.qmode), int(t.omode)], dtype=np.int64)


TypeRow = tuple[int, int, bool, int, int]  # width, frac, signed (0/1), qmode, omode


@njit(cache=True)
def type_row(types: np.ndarray, row: int) -> TypeRow:
    """Row ``row`` of a packed type table as a tuple (width, frac, signed, qmode, omode)."""
    # A tuple is held in registers: fields read from the table inside a loop that stores into
    # another int64 array are reloaded on every cast, since numba cannot rule out aliasing.
    return types[row, 0], types[row, 1], types[row, 2], types[row, 3], types[row, 4]


@njit(cache=True)
def probe(v: int, frac_in: int, trow: TypeRow, stats: np.ndarray | None, sid: int, t: int) -> Int:
    """Cast v (frac_in fractional bits) to the type ``trow``; with a stats table, record it and any overflow of signal sid."""
    r = fixed_cast(v, frac_in - trow[1], trow[0], trow[2], trow[3], trow[4])
    # stats=None (not profiling) compiles a kernel with this branch removed (numba prunes `is None` on an argument)
    if stats is not None and stats.shape[0] > 0:
        _record(v, frac_in, trow, r, stats, sid, t)
    return r


@njit(cache=True)
def _record(v: int, frac_in: int, trow: TypeRow, r: Int, stats: np.ndarray, sid: int, t: int) -> None:
    """Record value v (frac_in fractional bits), cast to r, in signal sid's row of a profile's stats table."""
    x = v * 2.0 ** (-frac_in)
    if stats[sid, 4] == 0 or x < stats[sid, 0]:
        stats[sid, 0] = x
    if stats[sid, 4] == 0 or x > stats[sid, 1]:
        stats[sid, 1] = x
    # the same rounding into a type too wide to overflow: any difference is an overflow
    if fixed_cast(v, frac_in - trow[1], _WIDE, True, trow[3], _SAT) != r:
        stats[sid, 2] += 1
        if stats[sid, 3] < 0:
            stats[sid, 3] = t
    stats[sid, 4] += 1


@njit(cache=True)
def note_clamp(x: int, frac: int, clamped: int, stats: np.ndarray | None, sid: int, t: int) -> None:
    """Record an input of the grid (value, and whether the grid clamped it) when profiling."""
    if stats is not None and stats.shape[0] > 0:
        v = x * 2.0 ** (-frac)
        if stats[sid, 4] == 0 or v < stats[sid, 0]:
            stats[sid, 0] = v
        if stats[sid, 4] == 0 or v > stats[sid, 1]:
            stats[sid, 1] = v
        if clamped:
            stats[sid, 2] += 1
            if stats[sid, 3] < 0:
                stats[sid, 3] = t
        stats[sid, 4] += 1


def _train_flags(train: bool | np.ndarray, n: int) -> np.ndarray:
    """Per-sample train-enable flags from a bool or an array."""
    return np.broadcast_to(np.asarray(train, dtype=np.int64), (n,)).copy()


class OnlineLearner(ABC):
    """Base of the bit-exact learners: quantizes a float stream and runs the integer kernel."""

    spec: KANSpec | MLPSpec

    def _check_stream(self, x: np.ndarray, y: np.ndarray, train: bool | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.ndim == 1:
            x = x[:, None]
        if y.ndim == 1:
            y = y[:, None]
        if x.ndim != 2 or x.shape[1] != self.spec.n_inputs:
            raise ValueError(f"inputs have shape {x.shape}, expected (n, {self.spec.n_inputs})")
        if y.ndim != 2 or y.shape[1] != self.spec.n_outputs:
            raise ValueError(f"targets have shape {y.shape}, expected (n, {self.spec.n_outputs})")
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"{x.shape[0]} inputs but {y.shape[0]} targets")
        for name, arr in (("inputs", x), ("targets", y)):
            bad = ~np.isfinite(arr)
            if bad.any():
                idx = np.argwhere(bad)[0]
                raise ValueError(f"{name} hold a non-finite value {arr[tuple(idx)]} at sample {idx[0]}")
        return x, y, _train_flags(train, x.shape[0])

    def run(self, x: np.ndarray, y: np.ndarray, train: bool | np.ndarray = True) -> np.ndarray:
        """Stream float samples through the learner (predict, then update); returns float predictions."""
        x, y, train_arr = self._check_stream(x, y, train)
        act = self.spec.act_t
        pred = self.run_raw(act.quantize(x), act.quantize(y), train_arr)
        return act.to_float(pred)

    @abstractmethod
    def signal_names(self) -> list[str]:
        """Names of the instrumented signals, in the row order of a profile's stats table."""

    @abstractmethod
    def run_raw(self, x_raw: np.ndarray, y_raw: np.ndarray, train: bool | np.ndarray = True,
                stats: np.ndarray | None = None, lr_shifts: int | np.ndarray | None = None) -> np.ndarray:
        """Stream raw act_t integers through the learner; returns raw predictions (n, n_outputs).

        With a stats table (rows = signal_names(), columns = STAT_COLUMNS, first_saturation
        preset to -1) every named signal's range and overflows are recorded in it. ``lr_shifts``:
        the learning-rate shift of every sample (or one for all), each in the spec's run-time range
        lr_shift .. lr_shift_max (the AXI shell's LR_SHIFT); None: lr_shift.
        """

    def _lr_shifts(self, lr_shifts: int | np.ndarray | None, n: int) -> np.ndarray:
        """Per-sample learning-rate shifts, checked against the spec's run-time range."""
        spec = self.spec
        shifts = np.broadcast_to(np.asarray(spec.lr_shift if lr_shifts is None else lr_shifts, dtype=np.int64), (n,)).copy()
        bad = (shifts < spec.lr_shift) | (shifts > spec.lr_shift_max)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"learning-rate shift {int(shifts[k])} at sample {k} is outside the spec's run-time range "
                             f"{spec.lr_shift}..{spec.lr_shift_max}")
        return shifts

    def _kernel_arrays(self, x_raw: np.ndarray, y_raw: np.ndarray, train: bool | np.ndarray) -> tuple[np.ndarray, ...]:
        """What every kernel takes: contiguous int64 samples and targets, train flags, an empty
        prediction array and the layer widths."""
        x_raw = np.ascontiguousarray(x_raw, dtype=np.int64)
        y_raw = np.ascontiguousarray(y_raw, dtype=np.int64)
        pred = np.zeros((x_raw.shape[0], self.spec.n_outputs), dtype=np.int64)
        widths = np.array(self.spec.widths, dtype=np.int64)
        return x_raw, y_raw, _train_flags(train, x_raw.shape[0]), pred, widths

    def new_stats(self) -> np.ndarray:
        """An empty stats table for run_raw()."""
        stats = np.zeros((len(self.signal_names()), len(STAT_COLUMNS)))
        stats[:, 3] = -1
        return stats
