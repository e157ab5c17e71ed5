"""FPGA parts and boards: one TOML file per part in ``board_files/`` (shipped as ``codesign.board_files``).

A board file holds the part's short name, the board it sits on (empty for a bare part),
aliases, the full part string that Vitis HLS takes, its series (how data sheets name it), its
family (a key of ``board_files/families.toml``) and speed grade, the default clock and the
device's resource counts (LUT, FF, DSP, BRAM36, URAM), with the data sheet they come from.
Loading a board resolves its family once into a frozen :class:`~codesign.fpga.family.Family`:
the part string is only ever handed on to the tools (Vitis HLS), never parsed.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from codesign.fpga.family import Family, need_field, resolve_family

__all__ = ["Board", "load_boards", "find_board"]

_RESOURCES = ("lut", "ff", "dsp", "bram_36k", "uram")


@dataclass(frozen=True)
class Board:
    """One FPGA part (and the board that carries it), as read from its board file."""

    name: str  # short part name, e.g. "xcvu9p"
    board: str  # board name, e.g. "VCU118"; empty for a bare part
    aliases: tuple[str, ...]  # other names --target accepts, e.g. ("vcu118",)
    part: str  # full part string, e.g. "xcvu9p-flga2104-2L-e"
    series: str  # how data sheets name the part's series, e.g. "Virtex UltraScale+"
    family: Family  # what the family means to every flow, resolved at load
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
            "name": self.name, "board": self.board, "part": self.part, "family": self.series,
            "yosys_family": self.family.key, "speed_grade": self.family.speed_grade,
            "clock_mhz": self.clock_mhz,
            "resources": {r: getattr(self, r) for r in _RESOURCES},
            "source": self.source,
        }


def _parse_board(file_name: str, data: dict) -> Board:
    """A Board from a parsed board file; a missing or ill-typed field is a one-line error."""
    need = functools.partial(need_field, f"board file {file_name}")

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
    router_args = data.get("router_args", [])
    if not isinstance(router_args, list) or not all(isinstance(a, str) for a in router_args):
        raise ValueError(f"board file {file_name}: router_args must be a list of strings")
    pins = data.get("router_pins", {})
    if not isinstance(pins, dict) or not all(isinstance(v, str) for v in pins.values()):
        raise ValueError(f"board file {file_name}: router_pins must map harness ports to package pins (strings)")
    family = resolve_family(file_name, need(data, "family", str), need(data, "speed_grade", int), tuple(router_args),
                            tuple(sorted(pins.items())))
    return Board(
        name=need(data, "name", str), board=need(data, "board", str), aliases=tuple(aliases),
        part=need(data, "part", str), series=need(data, "series", str), family=family, clock_mhz=clock,
        source=need(data, "source", str), **counts,
    )


def load_boards() -> dict[str, Board]:
    """Every board file shipped with the package, by short part name, sorted by name."""
    return dict(_read_boards())


@cache
def _read_boards() -> tuple[tuple[str, Board], ...]:
    """The board files, read and resolved once per process."""
    boards = {}
    for entry in files("codesign.board_files").iterdir():
        if entry.name.endswith(".toml") and entry.name != "families.toml":
            board = _parse_board(entry.name, tomllib.loads(entry.read_text()))
            boards[board.name] = board
    return tuple(sorted(boards.items()))


def find_board(target: str) -> Board:
    """The board a --target names: a short part name, a board name, an alias or a full part string."""
    boards = load_boards()
    wanted = target.strip().lower()
    for board in boards.values():
        if wanted in board.names():
            return board
    valid = ", ".join(b.label for b in boards.values())
    raise ValueError(f"unknown target {target!r}: choose one of {valid} (or a full part string of these)")

