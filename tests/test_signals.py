"""Ctrl-C and SIGTERM stop a long command cleanly: workers and child tools gone, exit 130, no traceback.

Each command runs as the real console entry (``python -m codesign.cli``) in a session of its own,
as in a terminal; the process tree is read from /proc while it works and checked after the signal.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codesign.cli import main
from codesign.processes import ToolError, WorkerPool, install_interrupt_handlers, run_tool

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads the process tree from /proc")

CLI = [sys.executable, "-m", "codesign.cli"]
# six points of a fraction of a second each on two workers: still working when the first result is printed
EXPLORE = ["explore", "kan_online", "--samples", "30000", "--grid", "4,8,16", "--bits", "12,16", "--hidden", "8",
           "--workers", "2"]
N_POINTS = 6
PROGRESS = re.compile(r"^\[\d+/\d+\] |^explore: resuming")
GONE_WITHIN_S = 5.0


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a live process, None when it is gone (a zombie counts as gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    if fields[0] in "ZX":
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _descendants(root: int) -> dict[int, int]:
    """Every process below ``root`` (children of children too), pid -> start time."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parents[int(entry)] = (st[1], st[2])
    found, frontier = {}, {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in parents.items() if ppid in frontier and pid not in found}
        found.update({pid: parents[pid][1] for pid in frontier})
    return found


def _alive(procs: dict[int, int]) -> list[int]:
    """The processes of a snapshot still running (same pid and start time)."""
    return [pid for pid, start in procs.items() if (st := _stat(pid)) is not None and st[2] == start]


def _names(procs: dict[int, int]) -> set[str]:
    names = set()
    for pid in procs:
        try:
            names.add(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            pass
    return names


class Command:
    """A codesign command started in its own session, stderr to a file."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.stderr_path = cwd / f"stderr_{time.monotonic_ns()}.txt"
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(CLI + args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err,
                                         start_new_session=True)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def wait_for(self, ready, timeout: float = 60.0) -> None:
        """Poll until ``ready()`` holds; fails if the command ends or the time runs out first."""
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"the command ended early ({self.proc.returncode}): {self.stderr}"
            assert time.monotonic() < deadline, f"not ready within {timeout} s: {self.stderr}"
            time.sleep(0.02)

    def stopped(self, tree: dict[int, int], since: float) -> int:
        """Wait for the exit; assert that it and every process of ``tree`` end within GONE_WITHIN_S of ``since``."""
        try:
            code = self.proc.wait(timeout=max(0.1, since + GONE_WITHIN_S - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"still running {GONE_WITHIN_S} s after the signal: {self.stderr}")
        while _alive(tree) and time.monotonic() < since + GONE_WITHIN_S:
            time.sleep(0.02)
        assert not _alive(tree), f"left running: {_names({p: tree[p] for p in _alive(tree)})}"
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _messages(stderr: str) -> list[str]:
    """stderr without the progress lines."""
    return [line for line in stderr.splitlines() if line.strip() and not PROGRESS.match(line)]


def _explore_working(tmp_path: Path) -> tuple[Command, dict[int, int]]:
    """An exploration whose first point is done and whose workers are busy, and its process tree."""
    run = Command(EXPLORE + ["--out", "ex"], tmp_path)
    run.wait_for(lambda: "[1/" in run.stderr)
    tree = _descendants(run.proc.pid)
    assert len(tree) >= 2, "expected two worker processes"
    return run, tree


def _points(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "points.jsonl").read_text().splitlines()]


def test_two_ctrl_c_stop_explore_and_its_workers_at_once(tmp_path):
    run, tree = _explore_working(tmp_path)
    try:
        since = time.monotonic()
        os.killpg(run.proc.pid, signal.SIGINT)  # the terminal's Ctrl-C reaches the whole foreground group
        time.sleep(0.1)
        os.killpg(run.proc.pid, signal.SIGINT)
        assert run.stopped(tree, since) == 130
    finally:
        run.close()
    assert "Traceback" not in run.stderr
    assert len(_messages(run.stderr)) <= 2, run.stderr
    assert "codesign: interrupted" in run.stderr


def test_one_ctrl_c_keeps_the_finished_points_and_a_rerun_resumes(tmp_path, capsys):
    run, tree = _explore_working(tmp_path)
    try:
        since = time.monotonic()
        os.kill(run.proc.pid, signal.SIGINT)  # to the main process only, as `kill -INT`
        assert run.stopped(tree, since) == 130
    finally:
        run.close()
    assert "Traceback" not in run.stderr and _messages(run.stderr) == ["codesign: interrupted"]
    kept = _points(tmp_path / ".ex.codesign-partial")  # an interrupted run stays beside its folder
    assert 1 <= len(kept) < N_POINTS
    assert not (tmp_path / "ex").exists()
    # the rerun, in this process (torch, which the command imports, is loaded here already)
    assert main(EXPLORE + ["--out", str(tmp_path / "ex")]) == 0
    assert f"resuming, {len(kept)} of {N_POINTS} points already done" in capsys.readouterr().err
    points = _points(tmp_path / "ex")
    assert len(points) == N_POINTS and len({p["name"] for p in points}) == N_POINTS
    assert points[: len(kept)] == kept


def test_sigterm_stops_explore_without_orphans(tmp_path):
    run, tree = _explore_working(tmp_path)
    try:
        since = time.monotonic()
        os.kill(run.proc.pid, signal.SIGTERM)
        assert run.stopped(tree, since) == 130
    finally:
        run.close()
    assert "Traceback" not in run.stderr and _messages(run.stderr) == ["codesign: interrupted"]


def test_ctrl_c_during_the_c_simulation_compile_kills_g_plus_plus(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(tmp_path / "cache"))  # an empty cache: this build compiles
    run = Command(["build", "kan_online", "--samples", "200", "--out", "b"], tmp_path)
    try:
        run.wait_for(lambda: "cc1plus" in _names(_descendants(run.proc.pid)), timeout=90)
        tree = _descendants(run.proc.pid)
        since = time.monotonic()
        os.killpg(run.proc.pid, signal.SIGINT)  # g++ runs in its own session: only codesign sees this
        assert run.stopped(tree, since) == 130
    finally:
        run.close()
    assert "Traceback" not in run.stderr
    assert _messages(run.stderr)[-1:] == ["codesign: interrupted"]


def _tool_with_a_grandchild(pid_file: Path) -> list[str]:
    """A shell that leaves a background sleep behind and becomes a sleep itself; it writes both pids."""
    return ["sh", "-c", f"sleep 60 & echo $$ $! > {pid_file}; exec sleep 60"]


def _pids(pid_file: Path) -> dict[int, int]:
    """The pids the tool wrote, with their start times (read while it runs)."""
    deadline = time.monotonic() + 10
    while not (pid_file.is_file() and pid_file.read_text().endswith("\n")):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return {pid: _stat(pid)[2] for pid in map(int, pid_file.read_text().split())}


def _gone(pids: dict[int, int]) -> bool:
    deadline = time.monotonic() + 2
    while _alive(pids) and time.monotonic() < deadline:  # the orphaned grandchild is reaped by init
        time.sleep(0.01)
    return not _alive(pids)


def test_an_interrupted_tool_is_killed_with_its_group(tmp_path):
    pid_file = tmp_path / "pids"
    seen: dict[int, int] = {}

    def ctrl_c(*_):  # as a Ctrl-C: noted the tool's processes, then interrupt
        seen.update(_pids(pid_file))
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_tool(_tool_with_a_grandchild(pid_file), tool="sleep")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < GONE_WITHIN_S
    assert len(seen) == 2 and _gone(seen)


def test_a_tool_past_its_time_limit_is_a_tool_error_and_is_killed(tmp_path):
    pid_file = tmp_path / "pids"
    seen: dict[int, int] = {}
    previous = signal.signal(signal.SIGALRM, lambda *_: seen.update(_pids(pid_file)))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(ToolError, match=r"^sleep: did not finish within 0.6 s \(log: .*tool.log\)$") as info:
            run_tool(_tool_with_a_grandchild(pid_file), tool="sleep", timeout=0.6, log=tmp_path / "tool.log")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert isinstance(info.value, RuntimeError) and info.value.tool == "sleep"
    assert len(seen) == 2 and _gone(seen)


def test_a_missing_program_is_a_tool_error():
    with pytest.raises(ToolError, match="no-such-tool-here not found"):
        run_tool(["no-such-tool-here"], tool="no-such-tool-here")


def square_unless_three(x: int) -> int:
    """A worker function: x squared, an error for 3."""
    if x == 3:
        raise ValueError("three is refused")
    return x * x


def test_the_worker_pool_returns_every_result_and_raises_a_workers_error():
    with WorkerPool(square_unless_three, 2) as pool:
        assert sorted(pool.map_unordered([0, 1, 2, 4, 5])) == [(0, 0), (1, 1), (2, 4), (3, 16), (4, 25)]
        workers = {pid: _stat(pid)[2] for pid in pool.pids}
    assert not _alive(workers)
    with pytest.raises(ValueError, match="three is refused"):
        with WorkerPool(square_unless_three, 2) as pool:
            workers = {pid: _stat(pid)[2] for pid in pool.pids}
            list(pool.map_unordered(range(10)))
    assert not _alive(workers)


def test_workers_of_a_parent_killed_outright_exit_by_themselves(tmp_path):
    """SIGKILL leaves the parent no chance to stop its workers: they notice and exit on their own."""
    script = (
        "import sys, time\n"
        "from codesign.processes import WorkerPool\n"
        "with WorkerPool(time.sleep, 2) as pool:\n"
        "    print(' '.join(str(pid) for pid in pool.pids), flush=True)\n"
        "    list(pool.map_unordered([0.3] * 100))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        workers = {pid: _stat(pid)[2] for pid in map(int, parent.stdout.readline().split())}
        assert len(workers) == 2
        time.sleep(0.5)  # both busy
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(workers)
    finally:
        parent.kill()
    assert "Traceback" not in parent.stderr.read()


def test_install_interrupt_handlers_makes_sigterm_an_interrupt():
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        install_interrupt_handlers()
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
    finally:
        install_interrupt_handlers()  # forget that interrupt: this test process is not being stopped
        for s, handler in previous.items():
            signal.signal(s, handler)
