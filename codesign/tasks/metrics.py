"""Online-learning metrics for predict-then-update runs over a :class:`TaskStream`.

``pred[t]`` must be the prediction made for sample ``t`` *before* the learner
was updated on it.  Per-sample error is the squared error averaged over the
outputs, ``e[t] = mean_j (pred[t, j] - y[t, j])**2``.  With ``w = window``:

``mse``
    Mean of ``e`` over the whole stream (the running/average online error).
``final_mse``
    Mean of ``e`` over the last ``min(w, n)`` samples.
``window_mse``
    ``(n,)`` array, trailing mean of ``e`` over ``[t - w + 1, t]`` (fewer
    samples at the start of the stream).
``segment_mse``
    Mean of ``e`` in each segment between switches (``len(switches) + 1``).
``pre_switch_mse``
    For switch ``s``: mean of ``e`` over ``[max(p, s - w), s)``, where ``p`` is
    the previous switch (or 0): the level the learner had reached before it.
``recovery_times``
    For switch ``s`` with next switch (or stream end) ``q``: the smallest
    ``m >= 0`` such that the mean of ``e`` over ``[s + m, s + m + w)`` is at
    most ``recovery_factor * pre_switch_mse + recovery_atol`` with
    ``s + m + w <= q``.  Equivalently, the trailing-window error first falls
    back to the threshold at sample ``s + m + w - 1``; subtracting the window
    length means a learner whose error is elevated for exactly ``m`` samples
    after the switch (and back to its old level afterwards) scores ``m``.
    ``None`` when no such window exists (never recovered before the next
    switch / end, or the segment is shorter than ``w``).
``accuracy``, ``final_accuracy``, ``segment_accuracy``
    Only for streams with ``meta['labels']`` (+1/-1, e.g. qubit readout): the
    fraction of samples where ``sign(pred[:, 0])`` (0 counts as +1) equals
    the label, overall, over the last ``min(w, n)`` samples and per segment.

Windows use cumulative sums, so the cost is O(n) with no per-sample Python
loop (only a loop over the few switches).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .stream import TaskStream

__all__ = ["online_metrics", "output_errors", "squared_errors"]


def squared_errors(pred: np.ndarray, stream: TaskStream) -> np.ndarray:
    """Per-sample squared error averaged over outputs, shape ``(n,)``."""
    p = np.asarray(pred, dtype=np.float64)
    if p.ndim == 1 and stream.n_outputs == 1:
        p = p[:, None]
    if p.shape != stream.y.shape:
        raise ValueError(f"pred has shape {np.shape(pred)}, expected {stream.y.shape}"
                         + (" or (n,)" if stream.n_outputs == 1 else ""))
    if not np.isfinite(p).all():
        raise ValueError("pred contains NaN or inf")
    return np.mean((p - stream.y) ** 2, axis=1)


def output_errors(pred: np.ndarray, stream: TaskStream) -> dict[str, tuple[float, ...]]:
    """Mean squared error and its root per output column over the whole stream: {"mse": (...), "rmse": (...)}."""
    p = np.asarray(pred, dtype=np.float64).reshape(stream.y.shape)
    mse = np.mean((p - stream.y) ** 2, axis=0)
    return {"mse": tuple(float(v) for v in mse), "rmse": tuple(float(v) for v in np.sqrt(mse))}


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _window_means(csum: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    return (csum[stops] - csum[starts]) / (stops - starts)


def online_metrics(pred: np.ndarray, stream: TaskStream, window: int = 500, *,
                   recovery_factor: float = 1.1, recovery_atol: float = 0.0) -> dict[str, Any]:
    """Summarise an online run: average/final/windowed error, recovery after switches."""
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    if not _is_real(recovery_factor) or not 1.0 <= recovery_factor < np.inf:
        raise ValueError(f"recovery_factor must be a finite number >= 1, got {recovery_factor!r}")
    if not _is_real(recovery_atol) or not 0.0 <= recovery_atol < np.inf:
        raise ValueError(f"recovery_atol must be a finite number >= 0, got {recovery_atol!r}")
    err = squared_errors(pred, stream)
    n, w = err.size, int(window)
    csum = np.concatenate([[0.0], np.cumsum(err)])
    # Rounding bound of a difference of two cumulative sums, per window sample.
    slack = 64.0 * np.finfo(np.float64).eps * csum[-1] / w

    t = np.arange(n)
    window_mse = _window_means(csum, np.maximum(t + 1 - w, 0), t + 1)
    bounds = np.array((0,) + stream.switches + (n,))
    segment_mse = _window_means(csum, bounds[:-1], bounds[1:])

    pre, recovery = [], []
    for j, s in enumerate(stream.switches):
        prev, nxt = bounds[j], bounds[j + 2]
        level = float(_window_means(csum, np.array([max(prev, s - w)]), np.array([s]))[0])
        pre.append(level)
        starts = np.arange(s, nxt - w + 1)
        if starts.size == 0:
            recovery.append(None)
            continue
        fwd = _window_means(csum, starts, starts + w)
        ok = np.flatnonzero(fwd <= recovery_factor * level + recovery_atol + slack)
        recovery.append(int(ok[0]) if ok.size else None)

    out: dict[str, Any] = {
        "window": w,
        "mse": float(csum[-1] / n),
        "final_mse": float((csum[-1] - csum[max(n - w, 0)]) / min(w, n)),
        "window_mse": np.maximum(window_mse, 0.0),
        "segment_mse": tuple(float(v) for v in segment_mse),
        "pre_switch_mse": tuple(pre),
        "recovery_times": tuple(recovery),
    }
    labels = stream.meta.get("labels")
    if labels is not None:
        p0 = np.asarray(pred, dtype=np.float64).reshape(n, -1)[:, 0]
        hit = (np.where(p0 >= 0.0, 1, -1) == np.asarray(labels)).astype(np.float64)
        hsum = np.concatenate([[0.0], np.cumsum(hit)])
        out["accuracy"] = float(hsum[-1] / n)
        out["final_accuracy"] = float((hsum[-1] - hsum[max(n - w, 0)]) / min(w, n))
        out["segment_accuracy"] = tuple(float(v) for v in _window_means(hsum, bounds[:-1],
                                                                        bounds[1:]))
    return out
