"""The synthesis estimate: longest register-to-register path of a netlist, resource counts, families."""

from __future__ import annotations

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.family import resolve_family
from codesign.fpga.synth import resources_from_stat
from codesign.fpga.timing_estimate import critical_path

_ULTRASCALE_PLUS = find_board("xcvu9p").family.delays  # speed grade 2


def _cell(kind: str, ins: dict[str, list[int]], outs: dict[str, list[int]], **params) -> dict:
    return {
        "type": kind,
        "parameters": params,
        "port_directions": {**{p: "input" for p in ins}, **{p: "output" for p in outs}},
        "connections": {**ins, **outs},
    }


def _netlist(cells: dict) -> dict:
    return {"modules": {"top": {"ports": {"clk": {"direction": "input", "bits": [1]}}, "cells": cells}}}


def test_longest_path_through_luts_and_a_dsp():
    model = _ULTRASCALE_PLUS
    cells = {
        "r0": _cell("FDRE", {"C": [1], "D": [20], "CE": ["1"], "R": ["0"]}, {"Q": [10]}),
        "l1": _cell("LUT2", {"I0": [10], "I1": [10]}, {"O": [11]}),
        "m": _cell("DSP48E2", {"A": [11], "B": [10]}, {"P": [12]}, AREG="0", BREG="0", MREG="0", PREG="0"),
        "l2": _cell("LUT1", {"I0": [12]}, {"O": [13]}),
        "r1": _cell("FDRE", {"C": [1], "D": [13], "CE": ["1"], "R": ["0"]}, {"Q": [20]}),
        # a short path that must not win
        "l3": _cell("LUT1", {"I0": [10]}, {"O": [14]}),
        "r2": _cell("FDRE", {"C": [1], "D": [14], "CE": ["1"], "R": ["0"]}, {"Q": [21]}),
    }
    path = critical_path(_netlist(cells), "top", model)
    want = model.ff_clk_to_out + 3 * model.net + 2 * model.lut + model.dsp_mult + model.net + model.ff_setup
    assert path["path_ns"] == pytest.approx(want, abs=1e-3)
    assert path["period_ns"] == pytest.approx(want + model.margin, abs=1e-3)
    assert path["levels"] == {"DSP48E2": 1, "FDRE": 1, "LUT": 2}
    assert path["end"] == "r1"


def test_a_registered_dsp_cuts_the_path():
    model = _ULTRASCALE_PLUS
    cells = {
        "r0": _cell("FDRE", {"D": [20]}, {"Q": [10]}),
        "m": _cell("DSP48E2", {"A": [10], "B": [10]}, {"P": [12]}, AREG="0", BREG="0", MREG="0", PREG="1"),
        "l": _cell("LUT1", {"I0": [12]}, {"O": [13]}),
        "r1": _cell("FDRE", {"D": [13]}, {"Q": [20]}),
    }
    path = critical_path(_netlist(cells), "top", model)
    into_dsp = model.ff_clk_to_out + model.net + model.dsp_setup + model.dsp_mult
    out_of_dsp = model.dsp_clk_to_out + model.net + model.lut + model.net + model.ff_setup
    assert path["path_ns"] == pytest.approx(max(into_dsp, out_of_dsp), abs=1e-3)


def test_a_block_ram_starts_and_ends_paths():
    # the read leaves the RAM at its clock-to-out, through a mux LUT into a DSP; the write data end at its setup
    model = _ULTRASCALE_PLUS
    cells = {
        "ram": _cell("RAMB36E2", {"CLKARDCLK": [1], "ADDRARDADDR": [10], "DINADIN": [13]}, {"DOUTBDOUT": [11]}),
        "mux": _cell("LUT3", {"I0": [11], "I1": [11], "I2": [10]}, {"O": [12]}),
        "m": _cell("DSP48E2", {"A": [12], "B": [10]}, {"P": [14]}, AREG="0", BREG="0", MREG="0", PREG="1"),
        "r0": _cell("FDRE", {"D": [20]}, {"Q": [10]}),
        "l": _cell("LUT1", {"I0": [14]}, {"O": [13]}),
    }
    path = critical_path(_netlist(cells), "top", model)
    read = model.bram_clk_to_out + model.net + model.lut + model.net + model.dsp_setup + model.dsp_mult
    write = model.dsp_clk_to_out + model.net + model.lut + model.net + model.bram_setup
    assert path["path_ns"] == pytest.approx(max(read, write), abs=1e-3)
    assert path["endpoint_ns"]["ram"] == pytest.approx(write, abs=1e-3)
    assert path["endpoint_ns"]["m"] == pytest.approx(read, abs=1e-3)


def test_a_combinational_loop_is_an_error():
    cells = {
        "a": _cell("LUT1", {"I0": [11]}, {"O": [10]}),
        "b": _cell("LUT1", {"I0": [10]}, {"O": [11]}),
    }
    with pytest.raises(ValueError, match="combinational loop"):
        critical_path(_netlist(cells), "top", _ULTRASCALE_PLUS)


def test_speed_grade_and_family_scale_the_delays():
    fast, base, slow = (resolve_family("test", "xcup", grade, ()).delays for grade in (3, 2, 1))
    assert fast.dsp_mult < base.dsp_mult < slow.dsp_mult
    assert base.dsp_mult == pytest.approx(1000 / 410, rel=1e-3)  # DS923, -2, no pipeline registers
    assert find_board("xcvu9p").family.delays == base
    assert find_board("xc7z020").family.delays.lut > slow.lut  # 7-series at -1


def test_resources_count_luts_lutram_ffs_dsps_brams():
    stat = {"modules": {"\\top": {"num_cells_by_type": {
        "LUT2": 10, "LUT6": 5, "INV": 1, "RAM32M16": 2, "SRLC32E": 1, "FDRE": 7, "FDSE": 1,
        "DSP48E2": 3, "RAMB36E2": 1, "RAMB18E2": 3, "CARRY8": 4, "IBUF": 9,
    }}}}
    assert resources_from_stat(stat, "top") == {"lut": 16, "lutram": 17, "ff": 8, "dsp": 3, "bram": 2.5, "uram": 0}
    with pytest.raises(ValueError, match="no module other"):
        resources_from_stat(stat, "other")


def test_family_of_every_board():
    assert find_board("xcvu9p").family.key == "xcup"
    assert find_board("xczu9eg").family.key == "xcup"
    assert find_board("xc7z020").family.key == "xc7"
    assert find_board("lfe5u-85f").family.key == "ecp5"


def test_ecp5_cells_on_the_longest_path():
    model = find_board("lfe5u-85f").family.delays
    cells = {
        "r0": _cell("TRELLIS_FF", {"CLK": [1], "DI": [20], "LSR": ["0"]}, {"Q": [10]}),
        "l": _cell("LUT4", {"A": [10], "B": [10], "C": ["0"], "D": ["0"]}, {"Z": [11]}),
        # bit 1's inputs do not reach S0; the carry out feeds the next CCU2C without a route
        "c0": _cell("CCU2C", {"A0": [11], "A1": [10], "CIN": ["0"]}, {"S0": [12], "S1": [13], "COUT": [14]}),
        "c1": _cell("CCU2C", {"A0": [10], "A1": [10], "CIN": [14]}, {"S0": [15], "S1": [16], "COUT": [17]}),
        "c2": _cell("CCU2C", {"A0": [10], "A1": [10], "CIN": [17]}, {"S0": [21], "S1": [22], "COUT": [23]}),
        "m": _cell("MULT18X18D", {"A0": [22], "B0": [10], "C0": [10]}, {"P0": [18]}),
        "ram": _cell("TRELLIS_DPR16X4", {"RAD": [10], "WAD": [18], "DI": [10], "WRE": [10], "WCK": [1]}, {"DO": [19]}),
        "r1": _cell("TRELLIS_FF", {"CLK": [1], "DI": [19], "LSR": ["0"]}, {"Q": [20]}),
    }
    path = critical_path(_netlist(cells), "top", model)
    # FF -> LUT4 -> into the carry -> along it -> out of it -> multiplier -> RAM write address (setup 0)
    want = (model.ff_clk_to_out + model.net + model.lut + model.net + model.carry_in + model.carry_step
            + model.carry_out + model.net + model.dsp_mult + model.net + model.lutram_setup)
    assert path["path_ns"] == pytest.approx(want, abs=1e-3)
    assert path["end"] == "ram" and path["levels"]["CCU2C"] == 3 and path["levels"]["MULT18X18D"] == 1
    assert model.margin == 0.0 and model.dsp_mult == pytest.approx(3.93)


def test_ecp5_resources_from_stat():
    stat = {"modules": {"\\top": {"num_cells_by_type": {
        "LUT4": 10, "CCU2C": 3, "PFUMX": 2, "TRELLIS_DPR16X4": 2, "TRELLIS_FF": 7, "MULT18X18D": 4, "DP16KD": 3,
    }}}}
    assert resources_from_stat(stat, "top") == {"lut": 16, "lutram": 12, "ff": 7, "dsp": 4, "bram": 1.5, "uram": 0}
