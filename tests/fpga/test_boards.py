"""Board files: every part loads with its published resources; --target accepts parts, boards, aliases."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

import codesign.board_files
import codesign.fpga
from codesign.cli import main
from codesign.fpga.boards import _parse_board, find_board, load_boards

REQUIRED = {"xcvu9p", "xcvu13p", "xcu250", "xczu9eg", "xczu7ev", "xc7z020", "lfe5u-85f"}


def test_every_required_part_has_a_board_file():
    boards = load_boards()
    assert REQUIRED <= set(boards)
    for b in boards.values():
        assert b.part.lower().startswith(b.name) and b.clock_mhz > 0 and b.source
        assert min(b.lut, b.ff, b.dsp, b.bram_36k) > 0 and b.uram >= 0
        # UltraScale+ and 7-series CLBs hold two flip-flops per LUT6; an ECP5 slice one per LUT4
        assert b.ff == (b.lut if b.family.key in ("ecp5", "nexus") else 2 * b.lut)


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


_STRING_METHODS = {"lower", "upper", "split", "startswith", "endswith", "strip", "match", "search", "fullmatch",
                   "findall", "partition", "replace", "find", "index"}
_PART_NAMES = {"part", "series"}  # the part string and the data sheet's name of its series: for reports and tools only


def _parses_a_part(node: ast.AST) -> bool:
    """A call that reads a part string or a series name as text: x.part.lower(), re.match(..., board.part), ...."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = node.func.value
    if isinstance(receiver, ast.Attribute) and receiver.attr in _PART_NAMES and node.func.attr in _STRING_METHODS:
        return True
    if node.func.attr in _STRING_METHODS:
        for arg in node.args:
            for inner in ast.walk(arg):
                if isinstance(inner, ast.Attribute) and inner.attr in _PART_NAMES:
                    return True
                if isinstance(inner, ast.Name) and inner.id in _PART_NAMES:
                    return True
    return False


def test_no_fpga_module_parses_a_part_string_outside_the_board_loader():
    root = Path(codesign.fpga.__file__).parent
    offenders = []
    for path in sorted(root.glob("*.py")):
        if path.name in ("boards.py", "family.py"):  # the loader resolves a board file into its Family once
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if _parses_a_part(node):
                offenders.append(f"{path.name}:{node.lineno}")
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                named = [a.arg for a in (*node.args.args, *node.args.kwonlyargs) if a.arg in _PART_NAMES]
                offenders += [f"{path.name}:{node.lineno} {node.name}({name})" for name in named]
    assert offenders == [], offenders


def test_every_board_resolves_its_family_once():
    boards = load_boards()
    assert {b.family.key for b in boards.values()} == {"xcup", "xc7", "ecp5", "nexus"}
    for b in boards.values():
        assert (b.family.router.name if b.family.router else "") == {"ecp5": "nextpnr-ecp5", "nexus": "nextpnr-nexus"}.get(b.family.key, "")
        assert bool(b.family.router_args) == bool(b.family.router)
        assert b.family.serial_harness == (b.family.key == "nexus")
        assert b.family.dsp_widths[0] >= b.family.dsp_widths[1] > 0 and b.family.assumptions
    assert find_board("xcvu9p").family is find_board("vcu118").family  # read once per process


@pytest.mark.parametrize("change, message", [
    ({"family": "virtex"}, "family 'virtex' is not in board_files/families.toml"),
    ({"speed_grade": "2"}, "field 'speed_grade' has the wrong type"),
    ({"family": "ecp5", "router_args": []}, "needs router_args"),
    ({"family": "nexus", "router_args": ["--device", "LIFCL-40-9BG400C"]}, "router_pins must name the package pins of ap_clk"),
    ({"family": "nexus", "router_args": ["--device", "LIFCL-40-9BG400C"], "router_pins": {"ap_clk": "D3"}},
     "router_pins must name the package pins of ap_clk, scan_in, scan_out"),
    ({"family": "ecp5", "router_args": ["--85k"], "router_pins": {"ap_clk": "D3"}}, "nextpnr-ecp5 places them itself"),
    ({"router_pins": ["D3"]}, "router_pins must map harness ports to package pins"),
])
def test_a_board_file_with_a_bad_family_is_refused(change, message):
    data = tomllib.loads((Path(codesign.board_files.__file__).parent / "xcvu9p.toml").read_text())
    data.update(change)
    with pytest.raises(ValueError, match=message):
        _parse_board("mine.toml", data)
