"""The KAN core's stage structure and CUTS bits are written once, in codesign.fpga.pipeline, and handed to the RTL."""

from __future__ import annotations

import re

import pytest

from codesign.fpga.kan.cycles import kan_stage_structure
from codesign.fpga.pipeline import pipeline_timing
from codesign.fpga.placement import CUT_BITS, CUT_HEADER, FORWARD, Pipeline, cut_header
from codesign.fpga.rtl_emit import emit_rtl, rtl_parameters
from codesign.fpga.simulator import rtl_dir
from codesign.kan.spec import KANSpec

PLACEMENTS = [Pipeline(), Pipeline(1), Pipeline(6, 0x235D, 2), Pipeline(1, 0x17FE, 0), Pipeline(1, 0x27F8, 0),
              Pipeline(7, 0x3FFF & ~FORWARD, 2), Pipeline(0, 1 << CUT_BITS["read"] | FORWARD, 0)]


def test_the_packaged_cut_header_is_the_rendering_of_cut_bits():
    assert (rtl_dir() / CUT_HEADER).read_text() == cut_header()
    for name, bit in CUT_BITS.items():
        assert f"localparam int CUT_{name.upper()} = (CUTS >> {bit}) & 1;" in cut_header()


def test_no_rtl_module_spells_a_cuts_bit_or_counts_the_stages():
    for path in rtl_dir().glob("*.sv"):
        text = path.read_text()
        assert not re.search(r"\(CUTS\s*>>\s*\d+\)|CUTS\s*&\s*\d", text), path.name
        assert not re.search(r"localparam\s+int\s+(N_STAGES|N_FRONT|PRED_STAGE|READ_IN_FRONT)\b", text) or \
            path.name == "mlp_online.sv", path.name  # the MLP counts its phase registers only


@pytest.mark.parametrize("pipe", PLACEMENTS, ids=lambda p: p.text)
def test_the_core_gets_the_stage_structure_the_timing_promises(pipe):
    spec = KANSpec(widths=(1, 1), grid_size=5) if pipe.forward else KANSpec()
    structure = kan_stage_structure(spec, pipe)
    timing = pipeline_timing(spec, pipe)
    params = rtl_parameters(spec, pipe)
    assert (params["N_STAGES"], params["PRED_STAGE"], params["N_FRONT"], params["READ_IN_FRONT"]) == (
        structure.n_stages, structure.pred_stage, structure.n_front, int(structure.read_in_front))
    assert structure.n_stages == timing["stages"] and structure.n_stages - structure.n_front == timing["ii"]
    assert structure.pred_stage + 1 == timing["prediction_latency_cycles"]
    assert 2 * structure.n_front <= structure.n_stages


def test_an_emitted_folder_holds_the_rendered_header(tmp_path):
    emit_rtl(KANSpec(), tmp_path / "rtl", Pipeline(6, 0x235D, 2))
    assert (tmp_path / "rtl" / CUT_HEADER).read_text() == cut_header()
