"""The ECP5 form of the KAN RTL (ECP5_DSP: every product a dsp_mult holding the registers around it) is bit-exact.

Verilator runs dsp_mult's behavioural registers (MULT18X18D has no simulation model; under synthesis the
same registers are the DSP's own), fed the values the fabric registers in front of the products load:
the co-simulation checks that those registers give the cycles the placement promises. Placements: deep
(rows, read, product and hold registers all in the DSP), the decode register without the rows one, and
the overlapped bank read (FORWARD), where the forward products keep their fabric input registers.
"""

from __future__ import annotations

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.cosim import run_cosim
from codesign.fpga.placement import Pipeline
from codesign.fpga.search import choose_pipeline
from codesign.fpga.stimulus import CORNER_SAMPLES
from codesign.kan.spec import KANSpec

pytest.importorskip("cocotb")

ECP5 = find_board("lfe5u-85f")


@pytest.mark.slow
@pytest.mark.parametrize("widths,placement", [
    ((1, 1), "deep"),
    ((2, 2, 1), "deep"),
    ((2, 2, 1), Pipeline(3, 0x3FF, 2)),  # the decode register in front of the products, no rows register
    ((2, 2, 1), Pipeline(0, 0x1FFF, 2)),  # FORWARD: the bank read in the overlapped front
])
def test_ecp5_products_are_bit_exact(widths, placement, tmp_path):
    spec = KANSpec(widths=widths, grid_size=5, clock_mhz=ECP5.clock_mhz)
    choice = choose_pipeline(spec, ECP5, placement)
    assert choice.placement.dsp == "MULT18X18D"
    samples = 300
    result = run_cosim(spec, samples=samples, pipeline=choice.placement, work_dir=tmp_path, resets=2)
    assert result["passed"], result["failures"]
    assert result["bit_exact"] is True and result["samples"] == samples + CORNER_SAMPLES
    assert result["prediction_mismatches"] == 0 and result["state_mismatches"] == 0
    assert result["state_values"] == spec.num_parameters
    expected = result["expected"]
    assert result["ii"] == expected["ii"]
    assert result["latency_cycles"] == expected["prediction_latency_cycles"]
    assert result["update_latency_cycles"] == expected["update_latency_cycles"]
