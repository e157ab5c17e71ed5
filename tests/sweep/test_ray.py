"""Sweeps on a Ray head started inside the test (2 CPUs, this machine only): same points as the local pool, resume across executors."""

from __future__ import annotations

import os
import signal
import socket

import pytest

ray = pytest.importorskip("ray")

from codesign.cli import main  # noqa: E402
from codesign.fpga.explore import POINTS_FILE, explore  # noqa: E402
from codesign.processes import ToolError  # noqa: E402
from codesign.sweep import make_executor  # noqa: E402
from codesign.sweep.runner import check_workers  # noqa: E402

SMALL = dict(learner="kan_online", grid=(4, 8), bits=(12,), hidden=((2,), (4,)), samples=2000)
# six points slow enough (a tenth of a second or more each) that an interrupt lands while some are still running
SLOW = dict(learner="kan_online", grid=(4, 8, 16), bits=(12,), hidden=((2,), (4,)), samples=10000)
TINY_ARGV = ["kan_online", "--grid", "4", "--bits", "12", "--hidden", "2", "--samples", "200"]
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
    local = explore(out=tmp_path / "local", workers=1, **SMALL)  # in this process: torch is imported already
    on_ray = explore(out=tmp_path / "ray", executor="ray", **SMALL)
    assert on_ray["computed"] == local["computed"] == 4
    a, b = _without_seconds(local["points"]), _without_seconds(on_ray["points"])
    assert a == b  # every field: the integers (resources, cycles, parameters) and the MSEs, exactly
    assert all(isinstance(p["estimate"]["lut"], int) for p in on_ray["points"])
    assert [p["name"] for p in local["front"]] == [p["name"] for p in on_ray["front"]]


def test_cim_grid_on_ray_equals_the_local_executor_point_for_point(ray_head, tiny_checkpoint, tmp_path):
    from codesign.cim.dwp.grid import grid_sweep

    grid = dict(chips=2, times=(1.0, 31557600.0), mismatch=(0.0, 0.7))
    local = grid_sweep(tiny_checkpoint, out=tmp_path / "local", workers=1, **grid)
    on_ray = grid_sweep(tiny_checkpoint, out=tmp_path / "ray", executor="ray", **grid)
    assert on_ray["computed"] == local["computed"] == 8
    a, b = _without_seconds(list(local["records"].values())), _without_seconds(list(on_ray["records"].values()))
    assert a == b  # the correct counts (integers) and the accuracies (floats), exactly
    assert len({r["correct"] for r in a.values()}) > 1  # the chips, times and levels differ: not one value everywhere
    assert local["rows"] == on_ray["rows"]


def _interrupted_run(monkeypatch, out, **options) -> int:
    """Explore, pressing Ctrl-C (a real SIGINT to this process) once the first point is written; the points finished."""
    import codesign.fpga.explore as module

    describe = module._describe

    def then_interrupt(record: dict) -> str:
        os.kill(os.getpid(), signal.SIGINT)
        return describe(record)

    monkeypatch.setattr(module, "_describe", then_interrupt)
    # Python's own handler: a Ctrl-C raises KeyboardInterrupt (codesign's handler, once installed by an
    # earlier main() in this process, would end the test process on a second one)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            explore(out=out, **SLOW, **options)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.setattr(module, "_describe", describe)
    partial = out.parent / f".{out.name}.codesign-partial"
    return len((partial / POINTS_FILE).read_text().splitlines())


def test_interrupted_under_ray_resumes_locally(ray_head, tmp_path, monkeypatch):
    out = tmp_path / "ex"
    done = _interrupted_run(monkeypatch, out, executor="ray")
    assert 1 <= done < 6
    resumed = explore(out=out, workers=1, **SLOW)
    assert resumed["computed"] == 6 - done and len(resumed["points"]) == 6
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6


def test_interrupted_locally_resumes_under_ray(ray_head, tmp_path, monkeypatch):
    out = tmp_path / "ex"
    done = _interrupted_run(monkeypatch, out, workers=1)
    assert done == 1
    resumed = explore(out=out, executor="ray", **SLOW)
    assert resumed["computed"] == 5 and len(resumed["points"]) == 6
    assert len((out / POINTS_FILE).read_text().splitlines()) == 6


def test_a_ray_worker_missing_a_tool_is_named(ray_head):
    # this process finds g++; the Ray workers, whose CXX names no compiler, do not
    with make_executor("ray") as executor:
        with pytest.raises(ToolError, match=rf"^g\+\+: not usable on ray worker .*{NO_CXX}"):
            check_workers(executor, ("g++",))


def test_a_ray_without_the_needed_api_is_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.delattr(ray, "cancel")
    rc = main(["explore", *TINY_ARGV, "--executor", "ray", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == (f"codesign: error: Ray {ray.__version__} has no ray.cancel, which --executor ray "
                               "needs: pip install -U 'codesign[distributed]'")


def test_an_unreachable_ray_address_is_one_line_exit_2(tmp_path, capsys):
    with socket.socket() as s:  # a port on this machine that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["explore", *TINY_ARGV, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(f"codesign: error: --ray-address 127.0.0.1:{port}: no Ray head answers there")
    assert not (tmp_path / "ex").exists()


def test_cim_grid_interrupted_locally_resumes_under_ray(ray_head, tiny_checkpoint, tmp_path, monkeypatch):
    import codesign.cim.dwp.grid as module

    describe = module._describe

    def then_interrupt(record: dict) -> str:
        os.kill(os.getpid(), signal.SIGINT)
        return describe(record)

    monkeypatch.setattr(module, "_describe", then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    grid = dict(chips=2, times=(1.0, 86400.0), mismatch=(0.0, 0.3))
    out = tmp_path / "g"
    try:
        with pytest.raises(KeyboardInterrupt):
            module.grid_sweep(tiny_checkpoint, out=out, workers=1, **grid)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.setattr(module, "_describe", describe)
    resumed = module.grid_sweep(tiny_checkpoint, out=out, executor="ray", **grid)
    assert resumed["computed"] == 7 and len((out / POINTS_FILE).read_text().splitlines()) == 8


def test_cim_grid_with_an_unreachable_ray_address_is_one_line_exit_2(tiny_checkpoint, tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc = main(["cim", "eval", str(tiny_checkpoint), "--sweep", "grid", "--executor", "ray", "--ray-address",
               f"127.0.0.1:{port}", "--out", str(tmp_path / "g")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(f"codesign: error: --ray-address 127.0.0.1:{port}: no Ray head answers there")
    assert "\n" not in err and not (tmp_path / "g").exists()
