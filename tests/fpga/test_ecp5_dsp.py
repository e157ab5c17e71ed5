"""On ECP5 the KAN's products are MULT18X18D holding the registers around them; other families' RTL is unchanged.

synth_ecp5 maps a multiply to a bare MULT18X18D and leaves the pipeline registers in the fabric, with the
routes to and from the DSP row between two of them (a routed default spec: 15.2 ns, 62 % routing), and
splits a product whose unsigned basis operand takes 19 signed bits over two DSPs and a carry chain. The
family record (Family.dsp_instance) puts the MULT18X18D in the placement, and the RTL instantiates it
with its input and output registers (rtl/dsp_mult.svh): one DSP per product, no fabric register on it.
"""

from __future__ import annotations

import json
import shutil

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.rtl_emit import emit_rtl
from codesign.fpga.search import choose_pipeline
from codesign.fpga.synth import find_yosys, run_synth
from codesign.kan.spec import KANSpec

ECP5 = find_board("lfe5u-85f")


def _top(folder) -> str:
    return (folder / "kan_online_top.sv").read_text()


def test_only_the_family_that_asks_gets_the_dsp_instances(tmp_path):
    spec = KANSpec(clock_mhz=100.0)
    assert ECP5.family.dsp_instance == "MULT18X18D" and find_board("xcvu9p").family.dsp_instance == ""
    for board, expected in ((ECP5, True), (find_board("xcvu9p"), False), (find_board("xc7z020"), False)):
        choice = choose_pipeline(spec, board, "deep")
        manifest = emit_rtl(spec, tmp_path / board.name, pipeline=choice.placement)
        assert (".ECP5_DSP(1)" in _top(tmp_path / board.name)) is expected, board.name
        assert (manifest["pipeline"].get("dsp") == "MULT18X18D") is expected  # the manifest records it
    # the placement's registers, cycles and text do not depend on where the DSP registers sit
    on_ecp5, on_vu9p = (choose_pipeline(spec, b, "deep").placement for b in (ECP5, find_board("xcvu9p")))
    assert on_ecp5 == on_vu9p and on_ecp5.text == on_vu9p.text


@pytest.mark.slow
@pytest.mark.synth  # Yosys (the tier tests/conftest.py gives test_synth* files by name)
def test_synth_ecp5_puts_each_product_in_one_registered_mult18x18d(tmp_path):
    try:
        find_yosys()
    except FileNotFoundError:
        pytest.skip("no Yosys")
    # 1-1, k = 3: four banks, a forward product B*c and an update product g*B each (no D*c: one layer)
    spec = KANSpec(widths=(1, 1), grid_size=5, clock_mhz=100.0)
    choice = choose_pipeline(spec, ECP5, "deep")
    emit_rtl(spec, tmp_path / "rtl", pipeline=choice.placement)
    result = run_synth(tmp_path / "rtl", ECP5, keep_netlist=True)
    assert result["dsp"] == 8  # the 18-bit unsigned basis times a coefficient: one DSP, no split
    netlist = json.loads((tmp_path / "rtl" / "synth" / "netlist.json").read_text())
    mults = [c for m in netlist["modules"].values() for c in m.get("cells", {}).values() if c["type"] == "MULT18X18D"]
    assert len(mults) == 8
    registered = {(c["parameters"].get("REG_INPUTA_CLK"), c["parameters"].get("REG_INPUTB_CLK"),
                   c["parameters"].get("REG_OUTPUT_CLK")) for c in mults}
    # forward: the rows and bank read registers in front, the product cut behind; update: REG_F's hold and the
    # error cut in front (both inputs registered: nextpnr times a DSP with one input register as if it had none)
    assert registered == {("CLK0", "CLK0", "CLK0")}
    shutil.rmtree(tmp_path / "rtl" / "synth", ignore_errors=True)
