"""Coefficient banks past the distributed-RAM depth: large G in the spec, block RAM, its registered read and the fit check."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesign.cli import main
from codesign.config import load_spec
from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.cost import features, period_ns, timing_features
from codesign.fpga.cost_parts import bram36_tiles, bram_mux_levels, lutram_mux_levels
from codesign.fpga.estimate import estimate
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.kan.cycles import LUTRAM_MAX_DEPTH, kan_bank_geometry, kan_bank_memory, kan_folds, kan_stage_structure
from codesign.fpga.kan.rtl import kan_core_parameters
from codesign.fpga.placement import CUT_BITS, Pipeline
from codesign.fpga.search import choose_pipeline
from codesign.kan.spec import KANSpec

# 18 fraction bits: the 2^-12 cells of G = 8,192 on [-1, 1) and the 2^6-entry ROMs resolve the input
WIDE_ACT = "ap_fixed<24,6,AP_RND_CONV,AP_SAT>"


def _spec(grid_size: int, widths: tuple[int, ...] = (2, 4, 1)) -> KANSpec:
    return KANSpec(widths=widths, grid_size=grid_size, act_t=FixedType.parse(WIDE_ACT))


def test_the_spec_takes_a_grid_of_8192_cells_and_refuses_more():
    spec = _spec(8192)
    assert spec.num_parameters == 12 * (8192 + 3)
    with pytest.raises(ValueError, match="grid_size"):
        _spec(8193)


def test_banks_deeper_than_lutram_go_to_block_ram():
    # 4 banks per input: G + k = 2,048 coefficients are 512 words, one more is a 513-word bank
    assert kan_bank_geometry(_spec(2045))[1] == LUTRAM_MAX_DEPTH and kan_bank_memory(_spec(2045)) == "lutram"
    assert kan_bank_memory(_spec(2046)) == "bram"
    board = find_board("xcvu9p")
    small, large = estimate(_spec(2045), board, "auto"), estimate(_spec(8192), board, "auto")
    assert small["bram"] == 0 and small["lutram"] > 0
    # layer 0: 8 banks of 64-bit words, layer 1: 16 banks of 16-bit words, 2,049 deep
    assert large["lutram"] == 0 and large["bram"] == 8 * bram36_tiles(64, 2049) + 16 * bram36_tiles(16, 2049) == 64
    assert kan_core_parameters(_spec(8192))["BANK_BRAM"] == 1 and kan_core_parameters(_spec(2045))["BANK_BRAM"] == 0


def test_block_ram_shapes():
    assert bram36_tiles(64, 1024) == 2  # 2 x 1K x 36
    assert bram36_tiles(64, 1025) == 3  # 3 x 512 x 72
    assert bram36_tiles(16, 2049) == 1.5  # 3 x 1K x 18 (18 Kb halves)


@pytest.mark.parametrize("request_", ["auto", "ii1", "staged"])
def test_block_ram_banks_keep_the_registered_read(request_):
    board = find_board("xcvu9p")
    assert choose_pipeline(_spec(8192), board, request_).placement.cut("read") == 1
    if request_ == "ii1":  # distributed RAM reads asynchronously: ii1 keeps no register
        assert choose_pipeline(_spec(2045), board, request_).placement.cut("read") == 0


def test_the_mux_over_a_deep_banks_rams_is_counted_in_lut_levels():
    assert bram_mux_levels(64, 2049) == 2  # 5 x 512 x 72: a LUT6 selects one of 4, then one of 2
    assert bram_mux_levels(16, 2049) == 1  # 2 x 2K x 18
    assert bram_mux_levels(16, 1025) == 0  # one 2K x 18: no mux


def test_auto_places_the_register_after_the_block_ram_mux_and_counts_it():
    board = find_board("xcvu9p")
    bram_out = 1 << CUT_BITS["bram_out"]
    large, small = _spec(8192), _spec(2045)
    chosen = choose_pipeline(large, board, "auto")
    assert chosen.clock_met and chosen.placement.cut("bram_out") == 1
    without = Pipeline(chosen.placement.phases, chosen.placement.cuts & ~bram_out, chosen.placement.tree_split)
    # without it, the RAMs' clock-to-out, their mux and the product are one path: 250 MHz is missed
    assert period_ns(large, without, board) > 4.0 >= period_ns(large, chosen.placement, board)
    # one cycle more per layer (both layers' words pass it), and its flip-flops: every bank word of both layers
    with_it, less = kan_stage_structure(large, chosen.placement), kan_stage_structure(large, without)
    assert with_it.n_stages == less.n_stages + 2 and with_it.pred_stage == less.pred_stage + 2
    ff = sum(features(large, chosen.placement, board.family)["ff"].values())
    words = 2 * 4 * 4 * 16 + 4 * 4 * 1 * 16
    assert words <= ff - sum(features(large, without, board.family)["ff"].values()) <= words + 4  # and the control's two stages
    # LUTRAM banks build nothing for the bit: auto does not place it, and it changes no count
    lutram = choose_pipeline(small, board, "auto").placement
    assert lutram.cut("bram_out") == 0
    both = Pipeline(lutram.phases, lutram.cuts | bram_out, lutram.tree_split)
    assert kan_stage_structure(small, both) == kan_stage_structure(small, lutram)
    assert features(small, both, board.family) == features(small, lutram, board.family)


def test_an_error_not_formed_in_the_forward_cast_subtracts_before_its_cast():
    # act_t keeps 18 fraction bits, err_t 10: the error is a subtraction and then the err_t cast, one adder level
    # more than the cast (Yosys, examples/kan_98k.toml: 4.0 ns), so auto places the round register inside the cast
    board = find_board("xcvu9p")
    large = _spec(8192)
    assert not kan_folds(large)["error"]
    no_round = Pipeline(0x6, 0x637D, 2)  # every register auto placed before, the err register after the cast
    assert timing_features(large, no_round, COEFFICIENTS["period_ns"]) == {"constant": 1.0, "kan_cast": 1.0, "kan_adder_levels": 1.0}
    assert period_ns(large, no_round, board) > 4.0
    assert choose_pipeline(large, board, "auto").placement.cut("round") == 1


def test_banks_that_do_not_fit_the_part_are_a_fit_warning(tmp_path, capsys):
    config = tmp_path / "big.toml"
    config.write_text(f'[spec]\nwidths = [4, 16, 1]\ngrid_size = 8192\nact_t = "{WIDE_ACT}"\n')
    argv = ["estimate", "kan_online", "--target", "xc7z020", "--config", str(config)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "does not fit" in err and "bram" in err.lower() and "Traceback" not in err
    assert main([*argv, "--strict"]) == 3
    assert "does not fit" in capsys.readouterr().err


def test_a_lutram_bank_deeper_than_one_primitive_reads_through_a_mux_the_estimate_charges():
    # RAM64M8 reads 64 words: deeper LUTRAM banks are several with a LUT mux after them (Yosys, 2-4-1 G = 1,024:
    # 257-word banks, five RAM64M8 and two LUT levels into the read register, 4.28 ns with the live bank address)
    assert [lutram_mux_levels(d) for d in (3, 64, 65, 256, 257, 512)] == [0, 0, 1, 1, 2, 2]
    board = find_board("xcvu9p")
    chosen = choose_pipeline(_spec(1024), board, "auto")
    # the mux and the bank address adder do not fit one 4 ns stage: auto registers the address (the decode cut)
    assert chosen.clock_met and chosen.placement.cut("decode") == 1
    assert choose_pipeline(KANSpec(), board, "auto").placement.cut("decode") == 0  # 3-word banks: no mux


def test_the_wide_example_is_a_50k_parameter_learner_that_fits_at_its_clock():
    spec = load_spec("kan_online", Path(__file__).parents[2] / "examples" / "kan_wide_82k.toml")
    assert spec.widths == (4, 8, 1) and spec.num_parameters == 40 * (2048 + 3) > 50_000
    report = estimate(spec, find_board("xcvu9p"), "auto")
    assert kan_bank_memory(spec) == "bram" and report["bram"] > 0 and report["lutram"] == 0
    assert report["clock_met"] and report["latency_ns"] <= 100.0
