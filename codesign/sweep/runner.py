"""Run a sweep's points on an executor: resume from ``points.jsonl``, check the workers, retry a failed point once.

:func:`run_sweep` computes the points not yet in the resume file on an executor
(codesign.sweep.executors: the local process pool or Ray), appends each result to the file the
moment it arrives and prints a progress line with an ETA on stderr. A point that raises is tried
once more after the others; if it fails again its error is recorded in the file (and it is tried
again by the next run). Ctrl-C stops the workers and leaves the file as it is: a rerun resumes.
A point's result depends only on its parameters, so the executor changes nothing in the file.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from codesign.outputs import Progress
from codesign.processes import ToolError
from codesign.sweep.resume import append_point, read_points

__all__ = ["SweepResult", "SweepProgress", "attempt", "failed_outcome", "worker_count", "check_workers", "run_sweep"]


def worker_count(workers: int) -> int:
    """``workers`` when it is a positive integer, else a one-line error."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r}: need at least one worker")
    return workers


@dataclass
class SweepResult:
    """The records of a sweep by point name, the points that failed twice, and how many points this run computed."""

    records: dict[str, dict]
    failed: dict[str, dict] = field(default_factory=dict)
    computed: int = 0


def attempt(func: Callable[[dict], dict], point: dict) -> dict:
    """``{"ok": func(point)}``, or ``{"error": "Type: message"}`` when it raises (run on the worker)."""
    try:
        return {"ok": func(point)}
    except Exception as exc:  # noqa: BLE001 - recorded with the point, retried once by the runner
        return failed_outcome(exc)


def failed_outcome(exc: BaseException) -> dict:
    """The outcome of a point whose run raised ``exc``, its error on one line."""
    text = " ".join(str(exc).split())
    return {"error": f"{type(exc).__name__}: {text}" if text else type(exc).__name__}


class SweepProgress(Progress):
    """One line per finished point on stderr: ``[12/48] name: what (eta 31 s)``, counting points done before."""

    def __init__(self, total: int, already: int, todo: int, stream: TextIO | None = None):
        super().__init__(total, stream if stream is not None else sys.stderr)
        self.index, self.todo, self.here = already, todo, 0
        self.started = time.perf_counter()

    def finished(self, text: str) -> None:
        """Count a finished point and print its line with the time the rest should take at this rate."""
        self.index += 1
        self.here += 1
        eta = (time.perf_counter() - self.started) / self.here * (self.todo - self.here)
        print(f"[{self.index}/{self.total}] {text} (eta {eta:.0f} s)", file=self.stream, flush=True)

    def note(self, text: str) -> None:
        """A line about the sweep that counts no point."""
        print(text, file=self.stream, flush=True)


def check_workers(executor: Any, tools: Sequence[str]) -> None:
    """Every worker runs this codesign and has ``tools``, or a one-line error names the worker and what it lacks."""
    from codesign import __version__

    for report in executor.worker_reports(tools):
        where = f"{executor.name} worker {report['host']}"
        if report["codesign"] != __version__:
            raise ValueError(f"{where} runs codesign {report['codesign']}, this is {__version__}: install the same "
                             "version there (points would not match)")
        for tool, why in report["missing"].items():
            raise ToolError(tool, f"not usable on {where}: {why}")


def _default_text(record: dict) -> str:
    return record["name"]


def run_sweep(
    func: Callable[[dict], dict], points: Sequence[dict], points_file: str | Path, executor: Any, *,
    tools: Sequence[str] = (), describe: Callable[[dict], str] = _default_text, stream: TextIO | None = None,
    label: str = "sweep",
) -> SweepResult:
    """Compute every point of ``points`` (dicts with a unique ``name``) not yet in ``points_file``, on ``executor``.

    ``func(point)`` returns the point's record (a JSON-able dict with its ``name``) and must be a
    module-level function (or a partial of one) so that it pickles; ``tools`` are checked on every
    worker first; ``describe(record)`` is the text of its progress line; ``label`` starts the line about a resume.
    """
    names = [p["name"] for p in points]
    if len(set(names)) != len(names):
        raise ValueError("run_sweep: point names must be unique")
    points_file = Path(points_file)
    done = read_points(points_file)
    todo = [p for p in points if p["name"] not in done]
    result = SweepResult(records=done)
    progress = SweepProgress(len(points), len(points) - len(todo), len(todo), stream)
    if len(todo) < len(points):
        progress.note(f"{label}: resuming, {len(points) - len(todo)} of {len(points)} points already done")
    if not todo:
        return result
    call = functools.partial(attempt, func)
    with executor, open(points_file, "a") as log:
        check_workers(executor, tools)
        pending = todo
        for tries in (1, 2):
            again = []
            for index, outcome in executor.map_unordered(call, pending):
                point = pending[index]
                if "ok" in outcome:
                    record = outcome["ok"]
                    append_point(log, record)
                    done[point["name"]] = record
                    result.computed += 1
                    progress.finished(describe(record))
                elif tries == 1:
                    again.append(point)
                    progress.note(f"{point['name']}: failed ({outcome['error']}); trying it once more at the end")
                else:
                    record = {"name": point["name"], "point": point, "failed": outcome["error"], "attempts": tries}
                    append_point(log, record)
                    result.failed[point["name"]] = record
                    progress.finished(f"{point['name']}: FAILED again: {outcome['error']}")
            pending = again
            if not pending:
                break
    return result
