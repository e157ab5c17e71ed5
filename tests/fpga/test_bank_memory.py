"""Coefficient banks past the distributed-RAM depth: large G in the spec, block RAM, its registered read and the fit check."""

from __future__ import annotations

import pytest

from codesign.cli import main
from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.cost_parts import bram36_tiles
from codesign.fpga.estimate import estimate
from codesign.fpga.kan.cycles import LUTRAM_MAX_DEPTH, kan_bank_geometry, kan_bank_memory
from codesign.fpga.kan.rtl import kan_core_parameters
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
    # 4 banks per input: G + k = 4,096 coefficients are 1,024 words, one more is a 1,025-word bank
    assert kan_bank_geometry(_spec(4093))[1] == LUTRAM_MAX_DEPTH and kan_bank_memory(_spec(4093)) == "lutram"
    assert kan_bank_memory(_spec(4094)) == "bram"
    board = find_board("xcvu9p")
    small, large = estimate(_spec(4093), board, "auto"), estimate(_spec(8192), board, "auto")
    assert small["bram"] == 0 and small["lutram"] > 0
    # layer 0: 8 banks of 64-bit words, layer 1: 16 banks of 16-bit words, 2,049 deep
    assert large["lutram"] == 0 and large["bram"] == 8 * bram36_tiles(64, 2049) + 16 * bram36_tiles(16, 2049) == 64
    assert kan_core_parameters(_spec(8192))["BANK_BRAM"] == 1 and kan_core_parameters(_spec(4093))["BANK_BRAM"] == 0


def test_block_ram_shapes():
    assert bram36_tiles(64, 1024) == 2  # 2 x 1K x 36
    assert bram36_tiles(64, 1025) == 3  # 3 x 512 x 72
    assert bram36_tiles(16, 2049) == 1.5  # 3 x 1K x 18 (18 Kb halves)


@pytest.mark.parametrize("request_", ["auto", "ii1", "staged"])
def test_block_ram_banks_keep_the_registered_read(request_):
    board = find_board("xcvu9p")
    assert choose_pipeline(_spec(8192), board, request_).placement.cut("read") == 1
    if request_ == "ii1":  # distributed RAM reads asynchronously: ii1 keeps no register
        assert choose_pipeline(_spec(4093), board, request_).placement.cut("read") == 0


def test_banks_that_do_not_fit_the_part_are_a_fit_warning(tmp_path, capsys):
    config = tmp_path / "big.toml"
    config.write_text(f'[spec]\nwidths = [4, 16, 1]\ngrid_size = 8192\nact_t = "{WIDE_ACT}"\n')
    argv = ["estimate", "kan_online", "--target", "xc7z020", "--config", str(config)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "does not fit" in err and "bram" in err.lower() and "Traceback" not in err
    assert main([*argv, "--strict"]) == 3
    assert "does not fit" in capsys.readouterr().err
