"""`codesign build --data FILE --cosim`: a user's 3-input, 2-output stream through the C-simulation and the RTL, bit-exact."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from codesign.cli import main
from codesign.fpga.stimulus import CORNER_SAMPLES
from tests.test_user_data import smooth_stream

pytest.importorskip("cocotb")


def test_build_cosim_of_a_data_file_is_bit_exact(tmp_path, capsys):
    x, y = smooth_stream(200, seed=5)
    train = (np.arange(200) < 180).astype(np.int64)  # a predict-only tail, as a held-out evaluation would be
    data = tmp_path / "my.npz"
    np.savez(data, x=x, y=y, train=train)
    out = tmp_path / "build"
    assert main(["build", "kan_online", "--data", str(data), "--cosim", "--out", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["spec"]["widths"] == [3, 4, 2]
    assert report["stream"]["data"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert report["csim"]["bit_exact"] and report["csim"]["samples"] == 200 + CORNER_SAMPLES
    cosim = report["cosim"]
    assert cosim["bit_exact"] and cosim["samples"] == 200 + CORNER_SAMPLES and cosim["state_values"] > 0
    assert cosim["predictions_checked"] > 0 and cosim["prediction_mismatches"] == 0 and cosim["state_mismatches"] == 0
    rows = np.loadtxt(out / "tb_data" / "stimulus.txt", dtype=np.int64, ndmin=2)
    assert np.array_equal(rows[:200, 0], train)  # the bench streamed the user's samples and train flags
    assert "200 of data file" in printed and "co-sim" in printed
