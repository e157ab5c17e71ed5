"""Child processes that stop with codesign: external tools and worker pools.

Every external tool (g++, Verilator and its make, a compiled simulation, Yosys, nextpnr) runs
through :func:`run_tool`, in a session of its own: a Ctrl-C at the terminal reaches only
codesign, which then stops the tool's whole process group (SIGTERM, then SIGKILL after a short
grace, at once on a second Ctrl-C) and waits for it, so no tool outlives the command.
:class:`WorkerPool` runs a function on worker processes that ignore Ctrl-C; the parent stops
them on an interrupt or an error. :func:`install_interrupt_handlers` makes SIGTERM stop codesign
the way Ctrl-C does, and a second Ctrl-C kill every child at once. A tool that fails raises
:class:`ToolError`: the tool, a one-line cause (plain text: no terminal colours or progress bars),
the log. Inside :func:`heartbeat`, a tool that runs long says every 30 s that it still runs.
"""

from __future__ import annotations

import atexit
import contextvars
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, TextIO

__all__ = ["ToolError", "run_tool", "run_tools", "WorkerPool", "install_interrupt_handlers", "kill_children",
           "STOP_GRACE_SECONDS", "HEARTBEAT_SECONDS", "heartbeat", "plain_text"]

# How long a stopped tool or worker gets to exit after SIGTERM before it is killed.
STOP_GRACE_SECONDS = 2.0
# How often a long tool says that it still runs (inside `heartbeat`).
HEARTBEAT_SECONDS = 30.0

# Terminal escapes (colours, cursor moves: CSI; titles and links: OSC) that some tools print even into a file.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


# A progress bar drawn into a log file line by line (tqdm's " 45%|####5     | 45/100 [00:01<00:01, ...]").
_BAR = re.compile(r"\d+%\|.*\|")


def plain_text(text: str) -> str:
    """``text`` without terminal escapes and without progress bars (a line redrawn with carriage returns, a tqdm bar)."""
    lines = [line.rstrip("\r") for line in _ESCAPES.sub("", text).split("\n")]
    kept = [line for line in lines if "\r" not in line and not _BAR.search(line)]
    return "\n".join("".join(c for c in line if c == "\t" or c.isprintable()) for line in kept)


class ToolError(RuntimeError):
    """An external tool failed or did not finish: which tool, the cause in one line, and its log."""

    def __init__(self, tool: str, cause: str, log: str | Path | None = None) -> None:
        self.tool = tool
        self.cause = " ".join(plain_text(str(cause)).split())  # one plain line, whatever the tool printed
        self.log = Path(log) if log is not None else None
        super().__init__(f"{tool}: {self.cause}" + (f" (log: {self.log})" if self.log is not None else ""))


# Children to kill on a second interrupt: process groups of running tools, pids of pool workers.
_live_groups: set[int] = set()
_live_workers: set[int] = set()
_interrupts = 0


def install_interrupt_handlers() -> None:
    """Ctrl-C and SIGTERM: the first raises KeyboardInterrupt (children stopped, exit 130); the next kills at once.

    The second one kills every running tool's group and worker with SIGKILL and exits with
    status 130 without waiting for anything, whatever the program was doing.
    """
    global _interrupts
    _interrupts = 0
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _on_interrupt)
    except ValueError:  # not the main thread (codesign called from a library thread): leave the signals alone
        return
    atexit.unregister(_exit_after_an_interrupt)
    atexit.register(_exit_after_an_interrupt)


def _exit_after_an_interrupt() -> None:
    # Once interrupted, the children are gone and what is left is Python's teardown of its modules
    # (seconds with torch loaded), during which a Ctrl-C would end the process by SIGINT rather
    # than with status 130 (Python resets its handlers first): skip that teardown.
    if _interrupts:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(130)


def _on_interrupt(signum: int, frame: Any) -> None:
    global _interrupts
    _interrupts += 1
    if _interrupts == 1:
        raise KeyboardInterrupt
    kill_children()
    os.write(2, b"codesign: interrupted again: stopped at once\n")
    os._exit(130)


def kill_children() -> None:
    """SIGKILL every running tool's process group and every pool worker, without waiting."""
    for pgid in list(_live_groups):
        _signal_group(pgid, signal.SIGKILL)
    for pid in list(_live_workers):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):  # the group is already gone
        pass


def _stop_groups(procs: Sequence[subprocess.Popen], grace: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM each child's process group, wait up to ``grace`` s, then SIGKILL the groups and reap."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        _signal_group(p.pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + grace
        for p in running:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
    finally:  # also on a second Ctrl-C during the grace: kill what is left of every group, at once
        for p in procs:
            _signal_group(p.pid, signal.SIGKILL)
        for p in procs:
            p.wait()


class _Heartbeat:
    """Where and how often running tools say that they still run."""

    def __init__(self, stream: TextIO, interval: float, moved: tuple[Path, Path] | None) -> None:
        self.stream, self.interval, self.moved = stream, interval, moved

    def say(self, tool: str, seconds: float, log: str | Path | None) -> None:
        """One line: the tool, how long it has run, its log where the user will find it."""
        where = ""
        if log is not None:
            shown = str(log)
            if self.moved is not None:  # a log in a partial output folder: named where it will be (as given, or absolute)
                for src, dst in (self.moved, tuple(os.path.abspath(p) for p in self.moved)):
                    if shown == str(src) or shown.startswith(f"{src}{os.sep}"):
                        shown = f"{dst}{shown[len(str(src)):]}"
                        break
            relative = os.path.relpath(shown) if os.path.isabs(shown) else shown
            where = f"; log {relative if not relative.startswith('..') else shown}"
        # a line of its own after the step's open progress line; the step's closing seconds end the last one
        print(f"\n  ... still running {tool} ({_duration(seconds)}{where})", end="", file=self.stream, flush=True)


_heartbeat: contextvars.ContextVar[_Heartbeat | None] = contextvars.ContextVar("codesign_heartbeat", default=None)


def _duration(seconds: float) -> str:
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


@contextmanager
def heartbeat(stream: TextIO, interval: float = HEARTBEAT_SECONDS, moved: tuple[Path, Path] | None = None) -> Iterator[None]:
    """Inside the block, a tool run by run_tools prints ``  ... still running TOOL (1 min 30 s; log LOG)`` to ``stream``
    every ``interval`` s while it runs; ``moved`` is (partial folder, final folder) of an output written in place."""
    if not interval > 0:
        raise ValueError(f"interval={interval!r}: must be a positive number of seconds")
    token = _heartbeat.set(_Heartbeat(stream, float(interval), moved))
    try:
        yield
    finally:
        _heartbeat.reset(token)


def _wait(p: subprocess.Popen, deadline: float | None, beat: _Heartbeat | None, started: float, tool: str,
          log: str | Path | None) -> None:
    """Wait for ``p`` until ``deadline`` (subprocess.TimeoutExpired past it), saying every beat's interval that it runs."""
    while True:
        now = time.monotonic()
        remaining = None if deadline is None else max(0.0, deadline - now)
        if beat is None:
            p.wait(remaining)
            return
        elapsed = now - started
        until_beat = beat.interval * (int(elapsed // beat.interval) + 1) - elapsed
        if remaining is not None and remaining <= until_beat:
            p.wait(remaining)
            return
        try:
            p.wait(until_beat)
            return
        except subprocess.TimeoutExpired:
            beat.say(tool, time.monotonic() - started, log)


def run_tools(
    cmds: Sequence[Sequence[str | Path]],
    *,
    tool: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    log: str | Path | None = None,
    stdout: IO | None = None,
    merge_stderr: bool = False,
) -> list[subprocess.CompletedProcess]:
    """Run commands side by side, each in its own session; returns their results (text output).

    Output is captured (through files, so a chatty tool never blocks) unless ``stdout`` is an
    open file to write to; ``merge_stderr`` sends stderr there too. On Ctrl-C, SIGTERM or an
    error every started group is stopped before the exception goes on; past ``timeout`` seconds
    (for all together) a :class:`ToolError` names ``tool`` and ``log``. A missing program is a
    ToolError too; a non-zero exit status is the caller's to judge. Inside :func:`heartbeat`, a line says
    every interval that the tool still runs.
    """
    with ExitStack() as files:
        procs: list[subprocess.Popen] = []
        captured: list[tuple[IO, IO | None]] = []
        try:
            for cmd in cmds:
                out = stdout if stdout is not None else files.enter_context(tempfile.TemporaryFile("w+b"))
                err = subprocess.STDOUT if merge_stderr else files.enter_context(tempfile.TemporaryFile("w+b"))
                captured.append((out, None if merge_stderr else err))
                procs.append(subprocess.Popen(
                    [str(c) for c in cmd], cwd=cwd, env=None if env is None else dict(env),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                ))
                _live_groups.add(procs[-1].pid)
            started = time.monotonic()
            deadline = None if timeout is None else started + timeout
            beat = _heartbeat.get()
            for p in procs:
                _wait(p, deadline, beat, started, tool, log)
        except subprocess.TimeoutExpired:
            _stop_groups(procs)
            raise ToolError(tool, f"did not finish within {timeout:g} s", log) from None
        except FileNotFoundError as exc:
            _stop_groups(procs)
            raise ToolError(tool, f"{exc.filename or cmds[len(procs)][0]} not found", log) from None
        except BaseException:  # Ctrl-C, SIGTERM (as KeyboardInterrupt) or an error: no tool outlives this call
            _stop_groups(procs)
            raise
        finally:
            for p in procs:  # a group leader that exited may have left children behind
                _signal_group(p.pid, signal.SIGKILL)
                _live_groups.discard(p.pid)
        results = []
        for p, (out, err) in zip(procs, captured):
            results.append(subprocess.CompletedProcess(p.args, p.returncode, _read(out, stdout), _read(err, stdout)))
        return results


def _read(handle: IO | None, callers: IO | None) -> str:
    if handle is None or handle is callers:
        return ""
    handle.seek(0)
    return handle.read().decode(errors="replace")


def run_tool(cmd: Sequence[str | Path], *, tool: str, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run one command in its own session (see :func:`run_tools` for the options); returns its result."""
    return run_tools([cmd], tool=tool, **kwargs)[0]


def _worker(conn: multiprocessing.connection.Connection, func: Callable[[Any], Any]) -> None:
    """A worker's loop: run ``func`` on each item the parent sends, send back (index, ok, result)."""
    parent = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent stops a worker with SIGTERM
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    while True:
        while not conn.poll(1.0):
            if os.getppid() != parent:  # the parent was killed outright: do not linger
                return
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        index, item = message
        try:
            reply = (index, True, func(item))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            reply = (index, False, exc)
        try:
            conn.send(reply)
        except OSError:  # the parent is gone
            return
        except Exception as exc:  # noqa: BLE001 - a result or exception that does not pickle
            conn.send((index, False, RuntimeError(f"worker result could not be sent back: {exc}")))


class WorkerPool:
    """``func`` on ``workers`` processes that ignore Ctrl-C; leaving the ``with`` block stops them.

    On a normal exit the workers finish and are joined; on Ctrl-C, SIGTERM or an error they
    are terminated (killed after a short grace, or at once on a second Ctrl-C). ``func`` and
    the items must pickle (``func`` a module-level function).
    """

    def __init__(self, func: Callable[[Any], Any], workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers={workers!r}: need at least one worker")
        self._func = func
        self._n = workers
        self._procs: list[multiprocessing.process.BaseProcess] = []
        self._conns: list[multiprocessing.connection.Connection] = []

    def __enter__(self) -> WorkerPool:
        ctx = multiprocessing.get_context()
        try:
            with _signals_blocked():  # a Ctrl-C while a worker starts reaches it only once it ignores Ctrl-C
                for _ in range(self._n):
                    parent_end, child_end = ctx.Pipe()
                    proc = ctx.Process(target=_worker, args=(child_end, self._func), daemon=True)
                    proc.start()
                    _live_workers.add(proc.pid)
                    child_end.close()
                    self._procs.append(proc)
                    self._conns.append(parent_end)
        except BaseException:  # e.g. a function that does not pickle: stop the workers already started
            self._stop(grace=0.0)
            raise
        return self

    @property
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [p.pid for p in self._procs]

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            for conn in self._conns:
                try:
                    conn.send(None)
                except OSError:
                    pass
        self._stop(grace=STOP_GRACE_SECONDS if exc_type is None else 0.0)

    def _stop(self, grace: float) -> None:
        """Join the workers for ``grace`` s, terminate the rest, kill what survives a second grace."""
        try:
            deadline = time.monotonic() + grace
            for p in self._procs:
                p.join(max(0.0, deadline - time.monotonic()))
            for p in self._procs:
                if p.is_alive():
                    p.terminate()
            deadline = time.monotonic() + STOP_GRACE_SECONDS
            for p in self._procs:
                p.join(max(0.0, deadline - time.monotonic()))
        finally:  # a second Ctrl-C during the waits lands here: kill at once
            for p in self._procs:
                if p.is_alive():
                    p.kill()
            for p in self._procs:
                p.join()
                _live_workers.discard(p.pid)
            for conn in self._conns:
                conn.close()

    def map_unordered(self, items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        """(index, func(item)) for every item, in the order they finish; a worker's exception is raised here."""
        todo = deque(enumerate(items))
        busy: set[multiprocessing.connection.Connection] = set()
        for conn in self._conns:
            if todo:
                conn.send(todo.popleft())
                busy.add(conn)
        while busy:
            for conn in multiprocessing.connection.wait(list(busy)):
                try:
                    index, ok, value = conn.recv()
                except EOFError:
                    proc = self._procs[self._conns.index(conn)]
                    proc.join(1.0)
                    raise RuntimeError(f"a worker process ended unexpectedly (exit code {proc.exitcode})") from None
                busy.discard(conn)
                if not ok:
                    raise value
                if todo:
                    conn.send(todo.popleft())
                    busy.add(conn)
                yield index, value


@contextmanager
def _signals_blocked() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while processes start (they inherit the mask and unblock it themselves)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
