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
