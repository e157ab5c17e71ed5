"""Registry of the online-learning tasks and the :func:`make_stream` entry point."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from typing import Any

from codesign.limits import check_fits_in_memory

from . import function_tracking, mackey_glass, pendulum_id, qubit_readout
from .stream import TaskStream

# a generous bound on the bytes one sample costs along a command (stream, stimulus, predictions, state)
BYTES_PER_SAMPLE = 512

__all__ = ["TASKS", "check_stream_size", "make_stream", "list_tasks", "task_options"]

TaskFactory = Callable[..., TaskStream]

TASKS: dict[str, TaskFactory] = {
    function_tracking.NAME: function_tracking.generate,
    qubit_readout.NAME: qubit_readout.generate,
    mackey_glass.NAME: mackey_glass.generate,
    pendulum_id.NAME: pendulum_id.generate,
}

_DESCRIPTIONS: dict[str, str] = {
    function_tracking.NAME: function_tracking.DESCRIPTION,
    qubit_readout.NAME: qubit_readout.DESCRIPTION,
    mackey_glass.NAME: mackey_glass.DESCRIPTION,
    pendulum_id.NAME: pendulum_id.DESCRIPTION,
}


def list_tasks() -> dict[str, str]:
    """Map every registered task name to a one-line description."""
    return {name: _DESCRIPTIONS.get(name, (factory.__doc__ or "").strip().splitlines()[0])
            for name, factory in TASKS.items()}


def task_options(name: str) -> dict[str, Any]:
    """Return the keyword options of task ``name`` with their default values."""
    factory = _lookup(name)
    return {p.name: p.default for p in inspect.signature(factory).parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _lookup(name: str) -> TaskFactory:
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]


def check_stream_size(name: str, n_samples: int, streams: int = 1) -> None:
    """Refuse, before any allocation, a stream length (times the streams held at once) that cannot fit in memory."""
    check_fits_in_memory(streams * n_samples * BYTES_PER_SAMPLE, f"{name}: {n_samples:,} samples"
                         + (f" in each of {streams} workers" if streams > 1 else ""))


def make_stream(name: str, n_samples: int = 20_000, seed: int = 0, **options: Any) -> TaskStream:
    """Generate the seeded stream of task ``name`` with ``n_samples`` samples."""
    factory = _lookup(name)
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) or n_samples < 1:
        raise ValueError(f"{name}: n_samples must be an integer >= 1, got {n_samples!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"{name}: seed must be a non-negative integer, got {seed!r}")
    check_stream_size(name, n_samples)
    valid = task_options(name)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {', '.join(map(repr, unknown))}; "
                         f"valid options: {', '.join(valid)}")
    return factory(int(n_samples), int(seed), **options)
