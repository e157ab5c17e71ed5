"""The HLS AXI top (INTERFACE axis / s_axilite) in g++ C-simulation equals the Python reference.

The project of a small KAN holds firmware/kan_online_axi.{h,cpp} and tb/kan_online_axi_test.cpp;
the testbench packs each stimulus line into the RTL shell's sample word, streams it through the
AXI top and compares every prediction word, the final state and the three counters (saturations
against the reference's overflowed casts), integer for integer. The template is shared with the
MLP, whose AXI top is run the same way.
"""

from __future__ import annotations

import pytest

from codesign.fpga.axi import stream_layout
from codesign.fpga.boards import find_board
from codesign.fpga.csim import compile_csim, find_ap_types, find_compiler, run_csim
from codesign.fpga.hls_project import write_project
from codesign.fpga.kan import firmware as kan_firmware
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.stimulus import CORNER_SAMPLES, make_stimulus, run_reference
from codesign.fpga.timing import rtl_schedule
from codesign.kan.spec import KANSpec


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    spec = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=3)
    out = tmp_path_factory.mktemp("hls_axi")
    stimulus = make_stimulus(spec, n_samples=300, seed=3)
    reference = run_reference(spec, stimulus, kan_firmware)
    timing = rtl_schedule(fpga_kind(spec).expected_timing(spec), pipeline_timing(spec, resolve_pipeline(spec, "ii1")), "ii1")
    write_project(out, spec, find_board("xcvu9p"), "xcvu9p", stimulus, reference, timing)
    return out, spec


def test_the_axi_top_declares_the_bus_interfaces_and_the_shells_words(project):
    out, spec = project
    top = (out / "firmware" / "kan_online_axi.cpp").read_text()
    for pragma in ("INTERFACE axis port=s_axis", "INTERFACE axis port=m_axis", "INTERFACE s_axilite port=train_enable",
                   "INTERFACE s_axilite port=return"):
        assert f"#pragma HLS {pragma}" in top
    layout = stream_layout(spec.n_inputs, spec.n_outputs, spec.act_t.width)
    header = (out / "firmware" / "kan_online_axi.h").read_text()
    assert f"ap_uint<{layout.s_width}> sample_word_t" in header and f"ap_uint<{layout.m_width}> prediction_word_t" in header
    assert f"TRAIN_BIT = {layout.train_bit};" in header


def test_the_hls_axi_top_is_bit_exact_in_csim(project):
    out, spec = project
    binary = compile_csim(out, "kan_online", find_compiler(), find_ap_types(), top="_axi")
    result = run_csim(binary, out / "tb_data", log_name="csim_axi.log")
    assert result.bit_exact and result.mismatches == 0
    assert result.samples == 300 + CORNER_SAMPLES and result.state_values == spec.num_parameters
    # SATURATIONS (checked against tb_data/expected_saturations.txt by the testbench) is not trivially 0
    expected = int((out / "tb_data" / "expected_saturations.txt").read_text().split("\n")[1])
    assert expected > 0 and f"saturations: {expected}\n" in (binary.parent / "csim_axi.log").read_text()


def test_the_mlp_hls_axi_top_counts_saturations_in_csim(tmp_path):
    from codesign.fpga.mlp import firmware as mlp_firmware
    from codesign.kan.spec import MLPSpec

    spec = MLPSpec()
    stimulus = make_stimulus(spec, n_samples=200, seed=3)
    reference = run_reference(spec, stimulus, mlp_firmware)
    timing = rtl_schedule(fpga_kind(spec).expected_timing(spec), pipeline_timing(spec, resolve_pipeline(spec, "ii1")), "ii1")
    write_project(tmp_path, spec, find_board("xcvu9p"), "xcvu9p", stimulus, reference, timing)
    binary = compile_csim(tmp_path, "mlp_online", find_compiler(), find_ap_types(), top="_axi")
    result = run_csim(binary, tmp_path / "tb_data", log_name="csim_axi.log")
    assert result.bit_exact and result.mismatches == 0
    assert reference.saturations > 0 and f"saturations: {reference.saturations}\n" in (binary.parent / "csim_axi.log").read_text()
