"""The output-folder policy (codesign/outputs.py): checked before work, written aside, put in place on success."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codesign.outputs import MANIFEST_NAME, OutputFile, OutputFolder, read_manifest, relocate_paths


def _write(folder: OutputFolder, **files: str) -> Path:
    with folder.writing() as work:
        for name, text in files.items():
            (work / name).write_text(text)
    return folder.target


def test_a_new_folder_appears_only_when_the_run_succeeds(tmp_path):
    out = tmp_path / "deep" / "out"
    folder = OutputFolder(out, "demo", expected=("a.txt",))
    assert not out.parent.exists()  # checking writes nothing, not even the folders above
    with folder.writing() as work:
        (work / "a.txt").write_text("1")
        assert not out.exists() and work.parent == out.parent
    assert (out / "a.txt").read_text() == "1"
    assert read_manifest(out)["entries"] == {"a.txt": "demo"} and read_manifest(out)["command"] == "demo"
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no partial folder left


def test_force_replaces_only_what_codesign_wrote(tmp_path):
    out = _write(OutputFolder(tmp_path / "o", "demo"), **{"a.txt": "old", "b.txt": "old"})
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="--force"):
        OutputFolder(out, "demo")
    _write(OutputFolder(out, "demo", force=True), **{"a.txt": "new"})
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST_NAME, "a.txt", "notes.txt"])  # b.txt was ours
    assert (out / "a.txt").read_text() == "new" and (out / "notes.txt").read_text() == "mine"


def _write_tree(folder: OutputFolder, files: dict[str, str]) -> Path:
    with folder.writing() as work:
        for rel, text in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
    return folder.target


def test_force_keeps_files_the_user_added_inside_generated_folders(tmp_path):
    out = _write_tree(OutputFolder(tmp_path / "o", "build"),
                      {"rtl/top.sv": "old", "rtl/old_only.sv": "old", "firmware/a.cpp": "old", "gone/x.txt": "old"})
    (out / "rtl" / "my_pins.xdc").write_text("pins")
    (out / "firmware" / "extra").mkdir()
    (out / "firmware" / "extra" / "my_extra.cpp").write_text("mine")
    (out / "rtl" / "constraints").mkdir()  # an empty folder of the user's
    _write_tree(OutputFolder(out, "build", force=True), {"rtl/top.sv": "new", "firmware/a.cpp": "new"})
    assert (out / "rtl" / "my_pins.xdc").read_text() == "pins"
    assert (out / "firmware" / "extra" / "my_extra.cpp").read_text() == "mine"
    assert (out / "rtl" / "constraints").is_dir()
    assert (out / "rtl" / "top.sv").read_text() == "new" and (out / "firmware" / "a.cpp").read_text() == "new"
    assert not (out / "rtl" / "old_only.sv").exists() and not (out / "gone").exists()  # codesign's own stale files go
    assert read_manifest(out)["files"] == ["firmware/a.cpp", "rtl/top.sv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # nothing left beside it
    _write_tree(OutputFolder(out, "build", force=True), {"rtl/top.sv": "newer"})  # and again: still the user's
    assert (out / "rtl" / "my_pins.xdc").read_text() == "pins" and not (out / "firmware" / "a.cpp").exists()
    assert (out / "firmware" / "extra" / "my_extra.cpp").read_text() == "mine"


def test_a_user_file_where_the_new_result_writes_is_refused_and_kept(tmp_path):
    out = _write_tree(OutputFolder(tmp_path / "o", "build"), {"rtl/top.sv": "old"})
    (out / "rtl" / "new.sv").write_text("mine")  # the next result writes rtl/new.sv
    (out / "firmware").write_text("a file where the new result makes a folder")
    for files in ({"rtl/top.sv": "new", "rtl/new.sv": "new"}, {"rtl/top.sv": "new", "firmware/a.cpp": "new"}):
        folder = OutputFolder(out, "build", force=True)
        with pytest.raises(FileExistsError, match="not written by codesign"):
            _write_tree(folder, files)
        folder.discard()
    assert (out / "rtl" / "new.sv").read_text() == "mine" and (out / "rtl" / "top.sv").read_text() == "old"
    assert (out / "firmware").read_text().startswith("a file")


def test_derived_folders_inside_the_result_are_codesigns(tmp_path):
    out = _write_tree(OutputFolder(tmp_path / "o", "build", derived=("rtl/cosim",)), {"rtl/top.sv": "old"})
    (out / "rtl" / "cosim" / "sim_build").mkdir(parents=True)  # written later by `codesign sim`
    (out / "rtl" / "cosim" / "sim_build" / "Vtop").write_text("binary")
    (out / "rtl" / "my_pins.xdc").write_text("pins")
    _write_tree(OutputFolder(out, "build", force=True, derived=("rtl/cosim",)), {"rtl/top.sv": "new"})
    assert not (out / "rtl" / "cosim").exists() and (out / "rtl" / "my_pins.xdc").read_text() == "pins"


def test_a_result_from_before_the_file_list_keeps_files_added_after_it(tmp_path):
    out = _write_tree(OutputFolder(tmp_path / "o", "build"), {"rtl/top.sv": "old", "report.json": "{}"})
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    del manifest["files"]  # as written by an earlier codesign
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    past = time.time() - 3600
    for path in (out / "rtl" / "top.sv", out / "report.json", out / MANIFEST_NAME):
        os.utime(path, (past, past))
    (out / "rtl" / "my_pins.xdc").write_text("pins")  # added after that build
    _write_tree(OutputFolder(out, "build", force=True), {"rtl/top.sv": "new", "report.json": "{}"})
    assert (out / "rtl" / "my_pins.xdc").read_text() == "pins" and (out / "rtl" / "top.sv").read_text() == "new"


def test_a_broken_link_as_out_is_refused_before_any_work(tmp_path):
    link = tmp_path / "o"
    link.symlink_to(tmp_path / "missing" / "target")
    for target in (link, link / "inside"):
        with pytest.raises(FileExistsError, match="broken link"):
            OutputFolder(target, "build")
    with pytest.raises(FileExistsError, match="broken link"):
        OutputFile(link / "plot.png", "cim eval")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"] and link.is_symlink()


def test_a_link_to_a_folder_is_written_through(tmp_path):
    real = _write_tree(OutputFolder(tmp_path / "real", "build"), {"rtl/top.sv": "old"})
    (real / "rtl" / "my_pins.xdc").write_text("pins")
    link = tmp_path / "link"
    link.symlink_to(real)
    _write_tree(OutputFolder(link, "build", force=True), {"rtl/top.sv": "new"})
    assert link.is_symlink() and (real / "rtl" / "top.sv").read_text() == "new"
    assert (real / "rtl" / "my_pins.xdc").read_text() == "pins"


def test_a_result_that_cannot_be_moved_in_place_leaves_a_partial_folder_the_next_run_clears(tmp_path, monkeypatch):
    folder = OutputFolder(tmp_path / "o", "build")
    real_replace = os.replace

    def failing_replace(src, dst):
        if Path(src) == folder.partial:
            raise OSError(18, "Invalid cross-device link")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        _write_tree(folder, {"rtl/top.sv": "x"})
    monkeypatch.setattr(os, "replace", real_replace)
    assert folder.partial.is_dir()
    _write_tree(OutputFolder(tmp_path / "o", "build"), {"rtl/top.sv": "y"})  # not refused as someone else's folder
    assert (tmp_path / "o" / "rtl" / "top.sv").read_text() == "y" and not folder.partial.exists()


def test_a_user_file_in_the_way_is_never_replaced(tmp_path):
    out = _write(OutputFolder(tmp_path / "o", "demo"), **{"a.txt": "old"})
    (out / "b.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not written by codesign"):
        OutputFolder(out, "demo", force=True, expected=("a.txt", "b.txt"))
    folder = OutputFolder(out, "demo", force=True)  # not declared: caught when the result is put in place
    with pytest.raises(FileExistsError, match="left in"):
        _write(folder, **{"b.txt": "new"})
    assert (out / "b.txt").read_text() == "mine" and (out / "a.txt").read_text() == "old"


@pytest.mark.parametrize("make", ["foreign", "file", "cwd", "parent", "other_command"])
def test_refusals_with_force(tmp_path, monkeypatch, make):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "canary.txt").write_text("canary")
    target = {"foreign": tmp_path / "f", "file": tmp_path / "canary.txt", "cwd": Path("."), "parent": Path(".."),
              "other_command": tmp_path / "p"}[make]
    if make == "foreign":
        target.mkdir()
        (target / "mine.txt").write_text("mine")
    if make == "other_command":
        _write(OutputFolder(target, "profile"), **{"profile.txt": "x"})
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    message = {"foreign": "codesign did not write", "file": "is a file, not a folder", "cwd": "working directory",
               "parent": "working directory", "other_command": "output of `codesign profile`"}[make]
    with pytest.raises((FileExistsError, ValueError), match=message):
        OutputFolder(target, "build", force=True)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "canary.txt").read_text() == "canary"


def test_interrupted_run_keeps_the_previous_result(tmp_path):
    out = _write(OutputFolder(tmp_path / "o", "demo"), **{"a.txt": "old"})
    folder = OutputFolder(out, "demo", force=True)
    with pytest.raises(KeyboardInterrupt):
        with folder.writing() as work:
            (work / "a.txt").write_text("half")
            raise KeyboardInterrupt
    assert (out / "a.txt").read_text() == "old" and not folder.partial.exists()


def test_a_failed_run_leaves_its_logs_aside_and_the_next_run_clears_them(tmp_path):
    folder = OutputFolder(tmp_path / "o", "demo")
    with pytest.raises(RuntimeError):
        with folder.writing() as work:
            (work / "build.log").write_text("error: ...")
            raise RuntimeError("compiler failed")
    assert not folder.target.exists() and (folder.partial / "build.log").is_file()
    _write(OutputFolder(tmp_path / "o", "demo"), **{"a.txt": "1"})  # no --force needed: nothing was in place
    assert not folder.partial.exists()


def test_a_live_run_writing_the_same_folder_is_refused(tmp_path):
    first = OutputFolder(tmp_path / "o", "demo")
    first.open()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (first.partial / ".codesign-owner").write_text(f"{sleeper.pid}\n")
        with pytest.raises(FileExistsError, match=f"pid {sleeper.pid}"):
            OutputFolder(tmp_path / "o", "demo")
    finally:
        sleeper.kill()
        sleeper.wait()
    OutputFolder(tmp_path / "o", "demo")  # the owner is gone: its partial folder is stale


def test_output_file_is_recorded_and_removed_with_its_folder(tmp_path):
    out = _write(OutputFolder(tmp_path / "run", "cim train"), **{"model.pt": "weights"})
    with OutputFile(out / "mismatch.png", "cim eval").writing() as partial:
        partial.write_text("png")
    assert read_manifest(out)["entries"] == {"model.pt": "cim train", "mismatch.png": "cim eval"}
    with pytest.raises(FileExistsError, match="--force"):
        OutputFile(out / "mismatch.png", "cim eval")
    (out / "notes.png").write_text("mine")
    with pytest.raises(FileExistsError, match="not written by codesign"):
        OutputFile(out / "notes.png", "cim eval", force=True)
    _write(OutputFolder(out, "cim train", force=True), **{"model.pt": "new"})  # the old model's plot goes with it
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST_NAME, "model.pt", "notes.png"])


def test_relocate_paths_moves_only_paths_under_the_source(tmp_path):
    src, dst = tmp_path / ".o.codesign-partial", tmp_path / "o"
    report = {"log": str(src / "csim" / "csim.log"), "n": 3, "items": [str(src), str(tmp_path / ".o.codesign-partialx")]}
    moved = relocate_paths(report, src, dst)
    assert moved == {"log": str(dst / "csim" / "csim.log"), "n": 3, "items": [str(dst), str(tmp_path / ".o.codesign-partialx")]}


def _codesign(*argv: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "codesign.cli", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_build_killed_midway_leaves_nothing_in_place_and_the_rerun_needs_no_force(tmp_path):
    proc = _codesign("build", "kan_online", "--out", "o", cwd=tmp_path)
    partial = tmp_path / ".o.codesign-partial"
    deadline = time.monotonic() + 120
    while not (partial / "firmware").is_dir() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # as hard as a stop can be: no handler runs
    proc.communicate()
    assert partial.is_dir() and not (tmp_path / "o").exists()
    done = subprocess.run([sys.executable, "-m", "codesign.cli", "build", "kan_online", "--out", "o",
                           "--samples", "20"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not partial.exists() and json.loads((tmp_path / "o" / "report.json").read_text())["csim"]["bit_exact"]
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert ".codesign-partial" not in json.dumps(report)  # every path in the report is the final one
