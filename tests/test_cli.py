"""The command line: help, tasks, learn, and one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

from codesign.cli import main


def test_tasks_lists_every_task(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in ("function_tracking", "qubit_readout", "mackey_glass", "pendulum_id"):
        assert name in out


def test_learn_prints_online_metrics(capsys):
    assert main(["learn", "kan_online", "--task", "mackey_glass", "--samples", "3000"]) == 0
    out = capsys.readouterr().out
    assert "kan_online on mackey_glass: 3000 samples" in out and "final_mse" in out


def test_bad_input_is_one_line_and_exit_2(capsys):
    for argv, message in (
        (["learn", "kan_online", "--task", "nope"], "nope"),
        (["learn", "rnn_online"], "unknown learner"),
        (["learn", "kan_online", "--samples", "0"], "--samples=0"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("codesign: error:") and message in err and "\n" not in err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "codesign.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("codesign ")
