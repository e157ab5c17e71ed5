"""FPGA parts and boards: one TOML file per part in ``board_files/`` (shipped as ``codesign.board_files``).

A board file holds the part's short name, the board it sits on (empty for a bare part),
aliases, the full part string that Vitis HLS takes, the family, the default clock and the
device's resource counts (LUT, FF, DSP, BRAM36, URAM), with the data sheet they come from.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib.resources import files

__all__ = ["Board", "load_boards", "find_board", "yosys_family"]

_RESOURCES = ("lut", "ff", "dsp", "bram_36k", "uram")


@dataclass(frozen=True)
class Board:
    """One FPGA part (and the board that carries it), as read from its board file."""

    name: str  # short part name, e.g. "xcvu9p"
    board: str  # board name, e.g. "VCU118"; empty for a bare part
    aliases: tuple[str, ...]  # other names --target accepts, e.g. ("vcu118",)
    part: str  # full part string, e.g. "xcvu9p-flga2104-2L-e"
    family: str
    clock_mhz: float  # default clock of a design on this board
    lut: int
    ff: int
    dsp: int
    bram_36k: int  # 36 Kb block RAMs
    uram: int  # 288 Kb UltraRAMs
    source: str  # where the numbers come from

    @property
    def label(self) -> str:
        """``name (board)``, or the name alone for a bare part."""
        return f"{self.name} ({self.board})" if self.board else self.name

    def names(self) -> set[str]:
        """Every lower-case spelling --target accepts for this board."""
        return {n.lower() for n in (self.name, self.board, self.part, *self.aliases) if n}

    def to_dict(self) -> dict:
        """Plain data for reports."""
        return {
            "name": self.name, "board": self.board, "part": self.part, "family": self.family,
            "clock_mhz": self.clock_mhz,
            "resources": {r: getattr(self, r) for r in _RESOURCES},
            "source": self.source,
        }


def _parse_board(file_name: str, data: dict) -> Board:
    """A Board from a parsed board file; a missing or ill-typed field is a one-line error."""
    def need(table: dict, key: str, kind: type | tuple[type, ...]):
        if key not in table:
            raise ValueError(f"board file {file_name}: missing field {key!r}")
        value = table[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"board file {file_name}: field {key!r} has the wrong type ({value!r})")
        return value

    res = need(data, "resources", dict)
    counts = {}
    for key in _RESOURCES:
        counts[key] = need(res, key, int)
        if counts[key] < 0:
            raise ValueError(f"board file {file_name}: resources.{key} must be >= 0")
    aliases = need(data, "aliases", list)
    if not all(isinstance(a, str) for a in aliases):
        raise ValueError(f"board file {file_name}: aliases must be strings")
    clock = float(need(data, "clock_mhz", (int, float)))
    if clock <= 0:
        raise ValueError(f"board file {file_name}: clock_mhz must be positive")
    return Board(
        name=need(data, "name", str), board=need(data, "board", str), aliases=tuple(aliases),
        part=need(data, "part", str), family=need(data, "family", str), clock_mhz=clock,
        source=need(data, "source", str), **counts,
    )


def load_boards() -> dict[str, Board]:
    """Every board file shipped with the package, by short part name, sorted by name."""
    boards = {}
    for entry in files("codesign.board_files").iterdir():
        if entry.name.endswith(".toml"):
            board = _parse_board(entry.name, tomllib.loads(entry.read_text()))
            boards[board.name] = board
    return dict(sorted(boards.items()))


def find_board(target: str) -> Board:
    """The board a --target names: a short part name, a board name, an alias or a full part string."""
    boards = load_boards()
    wanted = target.strip().lower()
    for board in boards.values():
        if wanted in board.names():
            return board
    valid = ", ".join(b.label for b in boards.values())
    raise ValueError(f"unknown target {target!r}: choose one of {valid} (or a full part string of these)")


def yosys_family(board: Board) -> str:
    """The Yosys family of a board: synth_xilinx's xcup (UltraScale+), xcu (UltraScale), xc7 (7-series), or ecp5 (synth_ecp5)."""
    family = board.family.lower()
    if "ecp5" in family:
        return "ecp5"
    if "ultrascale+" in family or "ultrascale plus" in family:
        return "xcup"
    if "ultrascale" in family:
        return "xcu"
    if re.search(r"(^|[^0-9])7", family) or "7-series" in family or "7 series" in family:
        return "xc7"
    raise ValueError(f"board {board.name}: no Yosys family for {board.family!r} (xcup, xcu, xc7 or ecp5)")
