"""Where a sweep's points run: the local process pool (default, no extra dependency) or a Ray cluster.

Both executors take the same calls: entered as a context manager (leaving it stops the workers,
also on Ctrl-C), ``worker_reports(tools)`` (what each worker can run, codesign.sweep.tools) and
``map_unordered(func, items)``, which yields ``(index, func(items[index]))`` as points finish.
The local executor never imports Ray.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from codesign.processes import WorkerPool
from codesign.sweep.ray_executor import RayExecutor
from codesign.sweep.runner import worker_count
from codesign.sweep.tools import worker_report

__all__ = ["EXECUTORS", "LocalExecutor", "RayExecutor", "make_executor"]


class LocalExecutor:
    """Points on ``workers`` local processes (codesign.processes.WorkerPool); with one worker, in this process."""

    name = "local"

    def __init__(self, workers: int = 2, address: str | None = None) -> None:
        if address:
            raise ValueError("--ray-address: only with --executor ray")
        self.workers = worker_count(workers)
        self._pool: WorkerPool | None = None
        self._func: Callable | None = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.__exit__(*exc)
            self._pool = None

    def worker_reports(self, tools: Sequence[str]) -> list[dict]:
        """This process's report: the workers are its children, with its PATH and its packages."""
        return [worker_report(tools)]

    def map_unordered(self, func: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """(index, func(item)) in the order points finish; one worker runs them here, one after another."""
        items = list(items)
        if self.workers == 1:
            for index, item in enumerate(items):
                yield index, func(item)
            return
        if self._pool is None or self._func is not func:
            self.__exit__(None, None, None)
            self._pool = WorkerPool(func, min(self.workers, len(items))).__enter__()
            self._func = func
        yield from self._pool.map_unordered(items)


# The one registry of executors: --executor NAME.
EXECUTORS: dict[str, type] = {"local": LocalExecutor, "ray": RayExecutor}


def make_executor(name: str, workers: int = 2, address: str | None = None) -> Any:
    """The executor called ``name``, checked now (Ray installed, its API, the address reachable), not yet started."""
    if name not in EXECUTORS:
        raise ValueError(f"--executor {name!r}: choose one of {', '.join(EXECUTORS)}")
    return EXECUTORS[name](workers=workers, address=address)
