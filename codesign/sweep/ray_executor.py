"""The Ray executor: a sweep's points as Ray tasks, one CPU each, on a cluster or on a Ray started here.

``address`` (``--ray-address``, else ``RAY_ADDRESS``) joins a running cluster; a Ray already
initialised in this process (a notebook, a test) is used as it is; else a local Ray is started
with ``workers`` CPUs and shut down afterwards. Ray is imported only when this executor is
made, never by the local one. Ray's own task retries are off: the sweep runner retries a failed
point once, the same way under every executor.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from codesign.sweep.runner import failed_outcome, worker_count
from codesign.sweep.tools import worker_report

__all__ = ["RayExecutor", "import_ray", "check_address", "REQUIRED_API"]

# What codesign calls in Ray; a Ray without one of them is refused before any work.
REQUIRED_API = ("init", "is_initialized", "shutdown", "remote", "put", "get", "wait", "cancel", "nodes",
                "exceptions.RayError", "util.scheduling_strategies.NodeAffinitySchedulingStrategy")
# How long a worker node may take to answer the check before work is sent.
CHECK_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 5.0


def import_ray() -> Any:
    """The ray module, or a one-line error: not installed (names the extra) or without an API codesign needs."""
    try:
        import ray
    except ModuleNotFoundError as exc:
        if exc.name == "ray":
            raise ModuleNotFoundError("No module named 'ray'", name="ray") from None
        raise
    try:
        import ray.util.scheduling_strategies  # noqa: F401 - checked with the rest of the API below
    except ImportError:
        pass

    for path in REQUIRED_API:
        node: Any = ray
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                raise ValueError(f"Ray {getattr(ray, '__version__', '(unknown version)')} has no ray.{path}, which "
                                 "--executor ray needs: pip install -U 'codesign[distributed]'")
    return ray


def check_address(address: str) -> None:
    """A Ray head answers at ``address`` (HOST:PORT, ray://HOST:PORT or auto), or a one-line error naming it."""
    if address == "auto":
        return
    host, _, port = address.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--ray-address {address!r}: expected HOST:PORT (e.g. 10.0.0.5:6379), ray://HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise ValueError(f"--ray-address {address}: no Ray head answers there ({exc.strerror or exc}); start one "
                         "with `ray start --head` or give its address") from None


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Hold back what Ray's core writes to stderr (file descriptor 2) while it connects: a line per retry."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _call(func: Callable[[Any], Any], item: Any) -> Any:
    return func(item)


class RayExecutor:
    """Points as Ray tasks (``num_cpus=1``) on the cluster at ``address``, or on a local Ray with ``workers`` CPUs."""

    name = "ray"

    def __init__(self, workers: int = 2, address: str | None = None) -> None:
        self.workers = worker_count(workers)
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self._ray = import_ray()
        if self.address:
            check_address(self.address)
        self._started_here = False

    def __enter__(self) -> RayExecutor:
        ray = self._ray
        if ray.is_initialized():
            return self
        options = {"logging_level": logging.WARNING, "include_dashboard": False}
        try:
            with _quiet_stderr():
                if self.address:
                    ray.init(address=self.address, **options)
                else:
                    ray.init(num_cpus=self.workers, **options)
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; each is one line here
            where = self.address or "a local Ray"
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ValueError(f"--executor ray: could not start or join {where}: {first}") from None
        self._started_here = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._started_here:
            self._ray.shutdown()
            self._started_here = False

    def worker_reports(self, tools: Sequence[str]) -> list[dict]:
        """The report of every alive node with CPUs, each from a task pinned to that node."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]
        if not nodes:
            raise ValueError("--executor ray: the cluster has no alive node with CPUs")
        probe = ray.remote(num_cpus=0, max_retries=0)(worker_report)
        refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(tools)
                for n in nodes]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CHECK_TIMEOUT_S)
        reports = []
        for node, ref in zip(nodes, refs):
            where = f"Ray worker node {node.get('NodeManagerAddress', node['NodeID'])}"
            if ref not in ready:
                ray.cancel(ref, force=True)
                raise ValueError(f"{where} did not answer the tool check within {CHECK_TIMEOUT_S:g} s")
            try:
                reports.append(ray.get(ref))
            except ray.exceptions.RayError as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
                raise ValueError(f"{where} cannot run codesign (is it installed there?): {first}") from None
        return reports

    def map_unordered(self, func: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """(index, func(item)) as tasks finish; a task Ray lost (its worker died) comes back as a failed point."""
        ray = self._ray
        task = ray.remote(num_cpus=1, max_retries=0)(_call)
        func_ref = ray.put(func)
        pending = {task.remote(func_ref, item): index for index, item in enumerate(items)}
        try:
            while pending:
                # a short wait, so that Ctrl-C reaches Python between waits
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
                for ref in ready:
                    index = pending.pop(ref)
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        value = failed_outcome(exc)
                    yield index, value
        finally:  # Ctrl-C or an error: the points not finished do not go on running on the cluster
            if not self._started_here:
                # a Ray this executor did not start lives on: cancel them (a running point gets KeyboardInterrupt,
                # which stops its tools, and its worker stays). A Ray it started or joined ends the job on
                # shutdown, which stops them; cancelling first races with that shutdown inside Ray's core.
                for ref in pending:
                    ray.cancel(ref, force=False)
