"""The Verilator model is kept in codesign's cache: an unchanged design is not built again, a changed one is."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from codesign.cli import main
from codesign.fpga.simulator import BIN_CACHE, bench_dir, prepare_simulation, rtl_dir, run_bench
from codesign.processes import WorkerPool
from codesign.resources import cache_dir

from .test_fixed_cast import _packed

pytest.importorskip("cocotb")

SHAPES = [(24, 7, 10, 1), (12, -3, 10, 1)]
TOP = "fixed_cast_harness"
TINY = """widths = [1, 1]
grid_size = 4
spline_order = 1
lut_bits = 3
"""


def _parameters(shapes: list[tuple[int, int, int, int]]) -> dict[str, object]:
    return {
        "N_SHAPES": len(shapes),
        "W_IN_TABLE": _packed([s[0] for s in shapes]), "SHIFT_TABLE": _packed([s[1] for s in shapes]),
        "W_OUT_TABLE": _packed([s[2] for s in shapes]), "SIGNED_TABLE": _packed([s[3] for s in shapes]),
    }


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """An empty codesign cache of this test's own (the Verilator runtime objects, not under test, from the usual one)."""
    runtime = cache_dir() / "verilator-runtime"
    cache = tmp_path / "cache"
    cache.mkdir()
    if runtime.is_dir():
        (cache / "verilator-runtime").symlink_to(runtime)
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(cache))
    return cache


def test_an_unchanged_design_reuses_the_kept_model_and_a_change_rebuilds(tmp_path, own_cache):
    sources = [rtl_dir() / "pipe_reg.sv", rtl_dir() / "fixed_cast.sv", bench_dir() / "fixed_cast_harness.sv"]
    first = prepare_simulation(sources, TOP, tmp_path / "a", _parameters(SHAPES))
    assert not first.reused
    kept = own_cache / BIN_CACHE
    assert sorted(p.name for p in kept.iterdir()) == [first.key]  # the build folder was renamed into place whole
    assert (kept / first.key / TOP).is_file() and not any(p.suffix == ".o" for p in (kept / first.key).iterdir())
    assert (tmp_path / "a" / "verilator_build.log").is_file()

    # the same design in another folder: the kept model, not a build (no build log there)
    second = prepare_simulation(sources, TOP, tmp_path / "b", _parameters(SHAPES))
    assert second.reused and second.key == first.key and (tmp_path / "b" / TOP).is_file()
    assert not (tmp_path / "b" / "verilator_build.log").exists()
    shapes = [dict(w_in=a, shift=b, w_out=c, signed=d) for a, b, c, d in SHAPES]
    result = run_bench(second.folder, TOP, "fixed_cast_bench", {"shapes": shapes, "n_random": 50, "seed": 1})
    assert result["passed"], result["failures"]
    assert result["mismatches"] == [] and result["checked"] > 0

    # another parameter value, or one changed byte of a source: built again
    other = prepare_simulation(sources, TOP, tmp_path / "c", _parameters(SHAPES[:1]))
    assert not other.reused and other.key != first.key
    edited = tmp_path / "src" / "fixed_cast.sv"
    edited.parent.mkdir()
    edited.write_text((rtl_dir() / "fixed_cast.sv").read_text() + "\n// edited\n")
    changed = prepare_simulation([sources[0], edited, sources[2]], TOP, tmp_path / "d", _parameters(SHAPES))
    assert not changed.reused and changed.key not in (first.key, other.key)
    assert sorted(p.name for p in kept.iterdir()) == sorted([first.key, other.key, changed.key])


def _build_fixed_cast(folder: str) -> tuple[bool, str]:
    """(reused, key) of the fixed_cast harness built into folder (in a worker process)."""
    sources = [rtl_dir() / "pipe_reg.sv", rtl_dir() / "fixed_cast.sv", bench_dir() / "fixed_cast_harness.sv"]
    build = prepare_simulation(sources, TOP, folder, _parameters(SHAPES[1:]))
    return build.reused, build.key


def test_two_processes_building_the_same_model_at_once(tmp_path, own_cache):
    """Each builds in a folder of its own and renames it into place; the second rename finds the first's model."""
    with WorkerPool(_build_fixed_cast, 2) as pool:
        results = dict(pool.map_unordered([str(tmp_path / "p"), str(tmp_path / "q")]))
    keys = {key for _, key in results.values()}
    assert len(keys) == 1 and not any(reused for reused, _ in results.values())  # both built: the second rename lost
    (key,) = keys
    assert [p.name for p in (own_cache / BIN_CACHE).iterdir()] == [key]  # no build folder left behind
    for name in ("p", "q"):
        assert (tmp_path / name / TOP).is_file()
        assert (tmp_path / name / TOP).read_bytes() == (own_cache / BIN_CACHE / key / TOP).read_bytes()


def _cosim_log(stdout: str) -> str:
    line = next(ln for ln in stdout.splitlines() if ln.strip().startswith("measured"))
    return line.rsplit("; log ", 1)[1].rstrip(")")


def test_cosim_log_is_named_in_the_final_folder(tmp_path, monkeypatch, capsys):
    """A relative --out: the log on the console and in report.json is where the build ended up, and exists."""
    (tmp_path / "tiny.toml").write_text(TINY)
    monkeypatch.chdir(tmp_path)
    code = main(["build", "kan_online", "--config", "tiny.toml", "--samples", "20", "--cosim", "--out", "b"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads((tmp_path / "b" / "report.json").read_text())
    assert report["cosim"]["bit_exact"] is True
    for log in (report["cosim"]["log"], _cosim_log(out)):
        assert Path(log).is_file(), log
        assert "codesign-partial" not in log and Path(log).resolve().is_relative_to(tmp_path / "b")


def test_cosim_in_folders_with_spaces_and_sim_reuses_the_model(tmp_path, monkeypatch, capsys):
    """The output folder and codesign's cache with spaces in their paths (GNU Make cannot build there); then
    `codesign sim` of the unchanged build takes the model the build made."""
    runtime = cache_dir() / "verilator-runtime"
    cache = tmp_path / "my cache"
    cache.mkdir()
    if runtime.is_dir():
        (cache / "verilator-runtime").symlink_to(runtime)
    monkeypatch.setenv("CODESIGN_CACHE_DIR", str(cache))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # a fresh per-user model folder there
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tiny.toml").write_text(TINY)
    out = tmp_path / "my build"
    code = main(["build", "kan_online", "--config", str(tmp_path / "tiny.toml"), "--samples", "20", "--cosim",
                 "--out", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    cosim = json.loads((out / "report.json").read_text())["cosim"]
    assert cosim["bit_exact"] is True and cosim["build_cached"] is False
    assert Path(cosim["log"]).is_file() and Path(_cosim_log(stdout)).is_file()
    kept = tmp_path / "tmp" / f"codesign-{os.getuid()}" / BIN_CACHE  # the cache's path has a space: a folder without
    assert len([p for p in kept.iterdir() if not p.name.startswith(".")]) == 1

    assert main(["sim", str(out)]) == 0
    assert "reused from codesign's cache" in capsys.readouterr().out
    again = json.loads((out / "report.json").read_text())["cosim"]
    assert again["bit_exact"] is True and again["build_cached"] is True
    assert again["build_seconds"] < cosim["build_seconds"]
