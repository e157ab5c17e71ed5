"""The AXI top in Verilator, driven by cocotbext-axi under back-pressure, gaps and resets, equals the reference.

One small staged 2-2-1 KAN (II = 4, so a reset can fall between a sample's prediction and
its update): every prediction taken from the master stream and the final coefficients (from the
banks and over AXI4-Lite, after coefficient writes) equal the Python reference integer for
integer, and the AXI4-Lite counters equal the bench's count (SATURATIONS the reference's overflow
count, codesign.kan.profiler.cast_overflows). The design starts from --init
coefficients (a float KAN's, quantized), so the RTL's initial-state file is exercised too, and has a
run-time learning-rate range: LR_SHIFT is written mid-stream and every shift of the range trains.
benchmarks/axi_stream.py runs 10,000 samples per configuration.
"""

from __future__ import annotations

import pytest

from codesign.kan.spec import KANSpec

pytest.importorskip("cocotb")
pytest.importorskip("cocotbext.axi")


@pytest.mark.rtl
@pytest.mark.slow
def test_axi_stream_is_bit_exact_under_back_pressure_and_resets(tmp_path):
    import torch

    from codesign.fpga.axi_cosim import run_axi_cosim
    from codesign.kan.float_model import KAN
    from codesign.kan.initial_state import load_initial_state

    # with a run-time learning-rate range (LR_SHIFT 4..6): the bench trains at all three shifts
    spec = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=3, lr_shift_span=2)
    # the RTL starts from a float KAN's quantized coefficients (--init), read back first over AXI4-Lite
    torch.save(KAN(spec.widths, grid_size=4, spline_order=1, init_scale=0.5, seed=5).state_dict(), tmp_path / "model.pt")
    initial = load_initial_state(tmp_path / "model.pt", spec).coefficients
    result = run_axi_cosim(spec, tmp_path / "work", samples=300, pipeline="staged", resets=6, seed=1, initial=initial)
    assert result["passed"], result["failures"]
    assert result["bit_exact"] is True
    assert result["expected"]["stages"] == 4
    # every sample accepted once; all but the reset-dropped predictions checked; the corner block included
    assert result["samples"] == result["predictions_checked"] + result["dropped_predictions"] > 300
    assert result["state_values"] == spec.num_parameters and result["state_mismatches"] == 0
    assert result["resets"] >= 2 and result["counters"] == result["counters_expected"]
    assert result["counters"]["SAMPLES"] > 0
    # SATURATIONS equals the reference's cast overflows after the last reset (the corner block saturates)
    assert result["counters"]["SATURATIONS"] > 0
    assert result["lr_shifts_used"] == [4, 5, 6]  # each shift of the range trained, bit-exact with the reference
    # coefficients over AXI4-Lite: the initial state read back, 12 written (before and mid-stream), the final read back
    assert result["coefficient_access"] and result["coefficients_written"] == 12
    assert result["initial_readback_mismatches"] == 0 and result["final_readback_mismatches"] == 0


@pytest.mark.rtl
@pytest.mark.slow
def test_axi_stream_counts_updates_of_overlapped_samples(tmp_path):
    """A sample accepted behind one not yet done (auto: II 8 of 10 stages) keeps its own train flag for UPDATES."""
    from codesign.fpga.axi_cosim import run_axi_cosim
    from codesign.fpga.boards import find_board
    from codesign.fpga.search import choose_pipeline

    spec = KANSpec(widths=(1, 1), grid_size=5, spline_order=3)
    placement = choose_pipeline(spec, find_board("xcvu9p"), "auto").placement  # auto, resolved for the part first
    result = run_axi_cosim(spec, tmp_path / "work", samples=300, pipeline=placement, resets=2, seed=2)
    assert result["expected"]["ii"] < result["expected"]["stages"]  # the overlap is on
    assert result["passed"], result["failures"]
    assert result["bit_exact"] is True
    assert result["counters"] == result["counters_expected"]
    assert 0 < result["counters"]["UPDATES"] < result["counters"]["SAMPLES"]  # training is off for part of the stream
    assert result["counters"]["SATURATIONS"] > 0  # equal to the reference's (above), with the overlap on
