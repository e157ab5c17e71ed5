"""Shared helpers of the FPGA backend tests: run `codesign build` in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.cli import main


def run_build(capsys, *argv: str) -> tuple[int, str, str]:
    """`codesign build ARGV...` through the CLI entry point; returns (exit code, stdout, stderr)."""
    code = main(["build", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_report(folder: Path) -> dict:
    """report.json of a build folder."""
    return json.loads((folder / "report.json").read_text())


@pytest.fixture(scope="session")
def bare_build(tmp_path_factory) -> Path:
    """The bare command `codesign build kan_online --target xcvu9p`, run in an empty folder (built once)."""
    cwd = tmp_path_factory.mktemp("bare")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        code = main(["build", "kan_online", "--target", "xcvu9p"])
    assert code == 0
    return cwd / "codesign_out" / "kan_online_xcvu9p"
