"""Sweeps on a Ray head started inside the test (2 CPUs, this machine only): same points as the local pool, resume across executors."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")

from codesign.cli import main  # noqa: E402
from codesign.fpga.explore import POINTS_FILE, explore  # noqa: E402
from codesign.processes import ToolError  # noqa: E402
from codesign.sweep import make_executor  # noqa: E402
from codesign.sweep.runner import check_workers  # noqa: E402

SMALL = dict(learner="kan_online", grid=(4, 8), bits=(12,), hidden=((2,), (4,)), samples=2000)
# six points slow enough (about a second each) that an interrupt lands while some are still running
SLOW = ["kan_online", "--grid", "4,8,16", "--bits", "12", "--hidden", "2,4", "--samples", "60000"]
SLOW_ARGS = dict(learner="kan_online", grid=(4, 8, 16), bits=(12,), hidden=((2,), (4,)), samples=60000)
NO_CXX = "codesign-test-no-such-compiler"


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head in this process with 2 CPUs; its workers see a CXX that does not exist (for the tool check)."""
    if ray.is_initialized():
        ray.shutdown()
    context = ray.init(num_cpus=2, include_dashboard=False, logging_level="warning",
                       runtime_env={"env_vars": {"CXX": NO_CXX}})
    yield context.address_info["gcs_address"]
    ray.shutdown()


def _without_seconds(points: list[dict]) -> dict[str, dict]:
    return {p["name"]: {k: v for k, v in p.items() if k != "seconds"} for p in points}


def test_ray_points_equal_the_local_pools(ray_head, tmp_path):
    local = explore(out=tmp_path / "local", workers=2, **SMALL)
    on_ray = explore(out=tmp_path / "ray", executor="ray", **SMALL)
    assert on_ray["computed"] == local["computed"] == 4
    a, b = _without_seconds(local["points"]), _without_seconds(on_ray["points"])
    assert a == b  # every field: the integers (resources, cycles, parameters) and the MSEs, exactly
    assert all(isinstance(p["estimate"]["lut"], int) for p in on_ray["points"])
    assert [p["name"] for p in local["front"]] == [p["name"] for p in on_ray["front"]]


def _interrupt_after_first_point(args: list[str]) -> None:
    """Run `codesign explore ARGS`, press Ctrl-C once the first point is reported, and expect exit 130."""
    proc = subprocess.Popen([sys.executable, "-m", "codesign.cli", "explore", *args], stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if line.startswith("[1/6]"):
                proc.send_signal(signal.SIGINT)
                break
        proc.stderr.read()
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()


def _finished(out) -> int:
    partial = out.parent / f".{out.name}.codesign-partial"
    return len([line for line in (partial / POINTS_FILE).read_text().splitlines() if line.strip()])


def test_interrupted_under_ray_resumes_locally(ray_head, tmp_path):
    out = tmp_path / "ex"
    _interrupt_after_first_point([*SLOW, "--executor", "ray", "--ray-address", ray_head, "--out", str(out)])
    done = _finished(out)
    assert 1 <= done < 6
    resumed = explore(out=out, workers=2, **SLOW_ARGS)
    assert resumed["computed"] == 6 - done and len(resumed["points"]) == 6
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6


def test_interrupted_locally_resumes_under_ray(ray_head, tmp_path):
    out = tmp_path / "ex"
    _interrupt_after_first_point([*SLOW, "--workers", "2", "--out", str(out)])
    done = _finished(out)
    assert 1 <= done < 6
    resumed = explore(out=out, executor="ray", **SLOW_ARGS)
    assert resumed["computed"] == 6 - done and len(resumed["points"]) == 6
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6


def test_a_ray_worker_missing_a_tool_is_named(ray_head):
    # this process finds g++; the Ray workers, whose CXX names no compiler, do not
    with make_executor("ray") as executor:
        with pytest.raises(ToolError, match=rf"^g\+\+: not usable on ray worker .*{NO_CXX}"):
            check_workers(executor, ("g++",))


def test_a_ray_without_the_needed_api_is_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.delattr(ray, "cancel")
    rc = main(["explore", *SLOW, "--executor", "ray", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == (f"codesign: error: Ray {ray.__version__} has no ray.cancel, which --executor ray "
                               "needs: pip install -U 'codesign[distributed]'")


def test_an_unreachable_ray_address_is_one_line_exit_2(tmp_path, capsys):
    with socket.socket() as s:  # a port on this machine that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["explore", *SLOW, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(f"codesign: error: --ray-address 127.0.0.1:{port}: no Ray head answers there")
    assert not (tmp_path / "ex").exists()
