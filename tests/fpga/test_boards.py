"""Board files: every part loads with its published resources; --target accepts parts, boards, aliases."""

from __future__ import annotations

import pytest

from codesign.cli import main
from codesign.fpga.boards import find_board, load_boards

REQUIRED = {"xcvu9p", "xcvu13p", "xcu250", "xczu9eg", "xczu7ev", "xc7z020", "lfe5u-85f"}


def test_every_required_part_has_a_board_file():
    boards = load_boards()
    assert REQUIRED <= set(boards)
    for b in boards.values():
        assert b.part.lower().startswith(b.name) and b.clock_mhz > 0 and b.source
        assert min(b.lut, b.ff, b.dsp, b.bram_36k) > 0 and b.uram >= 0
        # UltraScale+ and 7-series CLBs hold two flip-flops per LUT6; an ECP5 slice one per LUT4
        assert b.ff == (b.lut if b.family == "ECP5" else 2 * b.lut)


def test_vu9p_numbers_are_the_published_ones():
    b = find_board("xcvu9p")
    assert (b.part, b.board) == ("xcvu9p-flga2104-2L-e", "VCU118")
    assert (b.lut, b.ff, b.dsp, b.bram_36k, b.uram) == (1_182_240, 2_364_480, 6_840, 2_160, 960)


@pytest.mark.parametrize(
    "target, name",
    [("xcvu9p", "xcvu9p"), ("VCU118", "xcvu9p"), ("pynq-z2", "xc7z020"), ("zcu102", "xczu9eg"),
     ("u250", "xcu250"), ("xczu7ev-ffvc1156-2-e", "xczu7ev"), ("XCVU13P", "xcvu13p"),
     ("ulx3s", "lfe5u-85f"), ("LFE5U-85F-6BG381C", "lfe5u-85f")],
)
def test_target_is_a_part_a_board_or_an_alias(target, name):
    assert find_board(target).name == name


def test_unknown_target_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown target 'xc9999'") as info:
        find_board("xc9999")
    for name in REQUIRED:
        assert name in str(info.value)


def test_boards_command_lists_every_board(capsys):
    assert main(["boards"]) == 0
    out = capsys.readouterr().out
    for b in load_boards().values():
        assert b.name in out and b.part in out
    assert "1,182,240" in out and "VCU118" in out
