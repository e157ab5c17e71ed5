"""Design-space exploration: a tiny sweep on two workers, the Pareto front, resume, and the output folder rules."""

from __future__ import annotations

import json

import pytest

from codesign.fpga.explore import POINTS_FILE, explore, pareto_front

TINY = dict(learner="kan_online", target="xcvu9p", task="function_tracking", grid=(4, 8), bits=(12, 16),
            hidden=((2,),), samples=600, workers=2)


def test_explore_resumes_and_writes_the_front(tmp_path, capsys):
    out = tmp_path / "ex"
    first = explore(out=out, **TINY)
    assert len(first["points"]) == 4
    assert (out / "pareto.png").stat().st_size > 0 and "| point |" in (out / "pareto.md").read_text()
    assert first["front"] and set(p["name"] for p in first["front"]) <= set(p["name"] for p in first["points"])
    capsys.readouterr()
    # interrupt: drop the last two finished points and cut the file mid-line; the rerun does only those
    lines = (out / POINTS_FILE).read_text().splitlines()
    (out / POINTS_FILE).write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])
    second = explore(out=out, **TINY)
    err = capsys.readouterr().err
    assert "resuming, 2 of 4 points already done" in err
    assert err.count("[3/4]") == 1 and err.count("[4/4]") == 1 and "[1/4]" not in err
    assert {p["name"]: p["mse"] for p in second["points"]} == {p["name"]: p["mse"] for p in first["points"]}
    explore(out=out, **TINY)
    assert "resuming, 4 of 4 points already done" in capsys.readouterr().err


def test_folder_rules(tmp_path):
    one = {**TINY, "workers": 1}
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("keep")
    for force in (False, True):  # a folder codesign did not write is never written into
        with pytest.raises(FileExistsError, match="codesign did not write"):
            explore(out=foreign, force=force, **one)
    assert [p.name for p in foreign.iterdir()] == ["mine.txt"]
    out = tmp_path / "ex"
    first = explore(out=out, **{**one, "grid": (8,), "bits": (16,)})
    assert len(first["points"]) == 1
    (out / "mine.txt").write_text("keep")  # a file the user adds to the result survives --force
    with pytest.raises(FileExistsError, match="other settings"):
        explore(out=out, **{**one, "grid": (4,), "bits": (16,)})
    result = explore(out=out, force=True, **{**one, "grid": (4,), "bits": (16,)})
    assert len(result["points"]) == 1 and result["points"][0]["name"] != first["points"][0]["name"]
    assert (out / "mine.txt").read_text() == "keep"


def test_pareto_front_is_the_non_dominated_set():
    pts = [
        {"name": "a", "mse": 1.0, "area_percent": 1.0, "ns_per_sample": 1.0},
        {"name": "b", "mse": 2.0, "area_percent": 2.0, "ns_per_sample": 2.0},  # dominated by a
        {"name": "c", "mse": 0.5, "area_percent": 3.0, "ns_per_sample": 1.0},
        {"name": "d", "skipped": "too wide"},
    ]
    assert [p["name"] for p in pareto_front(pts)] == ["c", "a"]


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        explore(out=tmp_path / "x", **{**TINY, "task": "nope"})
    with pytest.raises(ValueError, match="grid="):
        explore(out=tmp_path / "x", **{**TINY, "grid": (0,)})
    with pytest.raises(ValueError, match="pipelines="):
        explore(out=tmp_path / "x", **{**TINY, "pipelines": ("fast",)})
    with pytest.raises(ValueError, match="workers=0"):
        explore(out=tmp_path / "x", **{**TINY, "workers": 0})


def test_cli_explore(tmp_path, capsys):
    from codesign.cli import main

    out = tmp_path / "cli"
    argv = ["explore", "mlp_online", "--task", "function_tracking", "--bits", "16", "--hidden", "4,8",
            "--pipelines", "ii1,staged", "--samples", "400", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    assert "Pareto front" in capsys.readouterr().out
    points = {p["name"]: p for p in map(json.loads, (out / POINTS_FILE).read_text().splitlines())}
    assert sorted(points) == ["2-4-1 16b ii1", "2-4-1 16b staged", "2-8-1 16b ii1", "2-8-1 16b staged"]
    assert points["2-8-1 16b staged"]["estimate"]["ii"] == 4 and points["2-8-1 16b ii1"]["estimate"]["ii"] == 1
    assert points["2-8-1 16b staged"]["mse"] == points["2-8-1 16b ii1"]["mse"]  # the pipeline does not change the arithmetic
    assert main(argv) == 0  # its own folder: resumes (nothing left to do)
    assert main(["explore", "kan_online", "--grid", "4,x", "--out", str(tmp_path / "y")]) == 2
    assert "--grid='4,x'" in capsys.readouterr().err


def test_points_are_chosen_as_a_build_chooses_them(tmp_path):
    # the default sweep builds every point with auto at the target's clock, as `codesign build` does; a point
    # whose estimated clock misses the target (here ii1's single long cycle at 250 MHz) is left off the front
    from codesign.fpga.boards import find_board
    from codesign.fpga.explore import _point_spec
    from codesign.fpga.search import choose_pipeline
    from codesign.kan.spec import KANSpec

    result = explore(out=tmp_path / "ex", **{**TINY, "workers": 1, "grid": (8,), "bits": (16,)}, pipelines=("auto", "ii1"))
    by_name = {p["name"]: p for p in result["points"]}
    auto, ii1 = by_name["2-2-1 16b G8"], by_name["2-2-1 16b G8 ii1"]
    base = KANSpec(widths=(2, 2, 1), clock_mhz=find_board("xcvu9p").clock_mhz)
    built = choose_pipeline(_point_spec(base, auto["point"]), find_board("xcvu9p"), "auto")
    assert auto["placement"] == built.placement.text and auto["clock_met"] is built.clock_met is True
    assert auto["estimate"]["clock_mhz_estimate"] >= 250.0 and auto["estimate"]["ii"] > 1
    assert ii1["clock_met"] is False and ii1["estimate"]["clock_mhz_estimate"] < 250.0
    assert [p["name"] for p in result["front"]] == ["2-2-1 16b G8"]
    assert "left off the front" in (tmp_path / "ex" / "pareto.md").read_text()
