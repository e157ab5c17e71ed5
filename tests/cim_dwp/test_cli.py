"""`codesign cim train` / `cim eval`: one-line errors, and a tiny end-to-end run on digits."""

from __future__ import annotations

import torch

from codesign.cim.dwp.checkpoint import load_checkpoint
from codesign.cli import main


def _one_line_error(capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip()
    assert err.startswith("codesign: error:") and message in err and "\n" not in err, err


def test_bad_inputs_exit_2_with_one_line(capsys, tmp_path):
    out = str(tmp_path / "run")
    _one_line_error(capsys, ["cim", "train", "--dataset", "cifar", "--out", out], "unknown dataset 'cifar'")
    _one_line_error(capsys, ["cim", "train", "--model", "resnet", "--out", out], "unknown model 'resnet'")
    _one_line_error(capsys, ["cim", "train", "--method", "sam", "--out", out], "unknown method 'sam'")
    _one_line_error(capsys, ["cim", "train", "--measure", "entropy", "--out", out], "'entropy'")
    _one_line_error(capsys, ["cim", "train", "--k", "0", "--out", out], "k=0")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    _one_line_error(capsys, ["cim", "train", "--out", str(busy)], "codesign did not write")
    assert (busy / "notes.txt").read_text() == "mine"
    _one_line_error(capsys, ["cim", "eval", str(tmp_path / "none.pt")], "no such file")
    foreign = tmp_path / "foreign.pt"
    torch.save({"state_dict": {}, "format": "other/1"}, foreign)
    _one_line_error(capsys, ["cim", "eval", str(foreign)], "not a codesign DWP checkpoint")
    text = tmp_path / "text.pt"
    text.write_text("hello")
    _one_line_error(capsys, ["cim", "eval", str(text)], "not a codesign DWP checkpoint")


def test_train_then_eval_end_to_end(capsys, tmp_path):
    out = tmp_path / "run"
    argv = ["cim", "train", "--method", "dwp", "--dataset", "digits", "--model", "mlp", "--epochs", "1",
            "--out", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "checkpoint" in captured.out and "[" in captured.err  # summary on stdout, progress bar on stderr
    result = load_checkpoint(out / "model.pt")
    assert result.config.method == "dwp" and result.config.model == "mlp" and result.train_seconds > 0
    _one_line_error(capsys, argv, "--force")  # a second run does not overwrite
    assert main(["cim", "eval", str(out / "model.pt"), "--sweep", "mismatch", "--chips", "2"]) == 0
    table = capsys.readouterr().out
    rows = [line.split() for line in table.splitlines() if line.split() and line.split()[0] in
            ("0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7")]
    assert len(rows) == 8
    assert float(rows[0][2]) == 0.0  # no mismatch: every chip gives the same accuracy
    assert float(rows[0][1]) > float(rows[-1][1])  # 70 % mismatch costs accuracy
    assert (out / "mismatch.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _one_line_error(capsys, ["cim", "eval", str(out), "--sweep", "mismatch", "--chips", "3"], "exists")
    _one_line_error(capsys, ["cim", "eval", str(out), "--sweep", "noise"], "unknown sweep 'noise'")
    from codesign.cim.dwp import evaluate_checkpoint  # the same from Python

    table, png = evaluate_checkpoint(out, "drift", n_chips=1)
    assert "compensated" in table and "uncompensated" in table and table.count("1 year") == 2
    assert png == out / "drift.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_noise_source_choices(capsys, tmp_path):
    _one_line_error(capsys, ["cim", "train", "--noise-source", "gpu", "--out", str(tmp_path / "a")], "unknown noise_source 'gpu'")
    out = tmp_path / "hwa"
    argv = ["cim", "train", "--method", "noise", "--noise-source", "pcm", "--k", "1", "--epochs", "1", "--quiet",
            "--out", str(out)]
    assert main(argv) == 0
    assert load_checkpoint(out / "model.pt").config.noise_source == "pcm"
