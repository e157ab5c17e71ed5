"""What a part's family means to every flow, resolved once: the frozen :class:`Family` record of a board.

``board_files/families.toml`` holds each family's facts (Yosys recipe, DSP and LUTRAM primitives,
delay model and what it assumes, router); a board file names its family, speed grade and, where a
router runs, the router's device options. :func:`resolve_family` makes the record when the board
is loaded, so the estimator, synthesis, the clock estimate and place-and-route read fields of one
value instead of parsing part strings or keeping tables of their own.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from functools import cache
from importlib.resources import files
from typing import Any

from codesign.fpga.routers import ROUTERS, Router

__all__ = ["DelayModel", "Family", "family_facts", "resolve_family", "SERIAL_PINS", "SYNTH_RECIPES"]

SYNTH_RECIPES = ("xilinx", "ecp5", "nexus")
SERIAL_PINS = ("ap_clk", "scan_in", "scan_out")  # the serial timing harness's ports (codesign.fpga.port_registers)


@dataclass(frozen=True)
class DelayModel:
    """Delays in ns of the cell arcs and nets of one family and speed grade (codesign.fpga.timing_estimate)."""

    lut: float
    net: float
    muxf: float
    carry_in: float
    carry_step: float
    dsp_mult: float
    dsp_add: float
    dsp_clk_to_out: float
    dsp_setup: float
    lutram_read: float
    lutram_clk_to_out: float
    lutram_setup: float
    ff_clk_to_out: float
    ff_setup: float
    margin: float
    carry_out: float  # ECP5 CCU2C: carry in to a sum output (Xilinx CARRY cells use carry_step)
    bram_clk_to_out: float
    bram_setup: float

    def scaled(self, factor: float) -> DelayModel:
        """Every delay times ``factor``."""
        return DelayModel(**{f.name: getattr(self, f.name) * factor for f in fields(self)})


@dataclass(frozen=True)
class Family:
    """One part's family as every flow needs it: Yosys family and recipe, primitives, delays at its grade, router."""

    key: str  # the Yosys family: xcup, xcu, xc7, ecp5
    title: str  # "AMD UltraScale+"
    synth: str  # the Yosys recipe: "xilinx" (synth_xilinx -family KEY), "ecp5" (synth_ecp5) or "nexus" (synth_nexus)
    dsp_widths: tuple[int, int]  # one DSP multiplier's signed input widths (larger, smaller)
    dsp_signed_only: bool  # Yosys splits a wide multiply into signed slices (one bit of headroom each)
    dsp_min_width: int  # an operand slice narrower than this stays in LUTs (Yosys mul2dsp's DSP_*_MINWIDTH)
    model_checked: tuple[str, ...]  # what of the analytic model was checked for this family (lut, ff, dsp, lutram, clock)
    lutram_luts: int  # LUTs of the distributed-RAM primitive at depth 64
    lutram_bits: int  # bits that primitive stores at depth lutram_depth
    lutram_depth: int  # 64: the Xilinx RAM64M family (twice the bits at 32); shallower: tiled in depth and width
    speed_grade: int
    delays: DelayModel  # at this part's speed grade
    assumptions: tuple[str, ...]
    router: Router | None  # the open place-and-route flow (its record, resolved from the name); None where none runs
    router_args: tuple[str, ...]  # the router's device, package and speed options for this part
    router_pins: tuple[tuple[str, str], ...] = ()  # (harness port, package pin) where the router needs every pin placed
    dsp_instance: str = ""  # the DSP primitive the RTL instantiates with its registers ("": synthesis packs them)

    @property
    def serial_harness(self) -> bool:
        """The router needs every pin placed (its record says so): the timing harness is the serial one, on ``router_pins``."""
        return self.router is not None and self.router.serial_pins


@cache
def family_facts() -> dict[str, dict[str, Any]]:
    """Every family of ``board_files/families.toml``, by Yosys family name, as parsed."""
    return tomllib.loads(files("codesign.board_files").joinpath("families.toml").read_text())


def need_field(where: str, table: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """``table[key]`` when present and of ``kind`` (a bool is never a number); a one-line error naming ``where`` otherwise."""
    if key not in table:
        raise ValueError(f"{where}: missing field {key!r}")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"{where}: field {key!r} has the wrong type ({value!r})")
    return value


def _delays(key: str, facts: dict[str, dict[str, Any]]) -> tuple[DelayModel, float, tuple[str, ...]]:
    """(reference delays before the family's factor, that factor, assumptions) of a family, following *_like."""
    where = f"board_files/families.toml [{key}]"
    family = facts[key]
    if "delays_like" in family:
        base, _, _ = _delays(need_field(where, family, "delays_like", str), facts)
        factor = float(need_field(where, family, "delay_factor", (int, float)))
    else:
        table = need_field(where, family, "delays", dict)
        names = {f.name for f in fields(DelayModel)}
        if set(table) != names:
            raise ValueError(f"{where}: delays must name exactly {', '.join(sorted(names))}")
        base, factor = DelayModel(**{k: float(v) for k, v in table.items()}), 1.0
    source = facts[need_field(where, family, "assumptions_like", str)] if "assumptions_like" in family else family
    assumptions = tuple(need_field(where, source, "assumptions", list))
    return base, factor, assumptions


def resolve_family(board_file: str, key: str, speed_grade: int, router_args: tuple[str, ...],
                   router_pins: tuple[tuple[str, str], ...] = ()) -> Family:
    """The family record of a part: its family's facts with the delays scaled to its speed grade."""
    facts = family_facts()
    if key not in facts:
        raise ValueError(f"board file {board_file}: family {key!r} is not in board_files/families.toml "
                         f"({', '.join(facts)})")
    where = f"board_files/families.toml [{key}]"
    family = facts[key]
    synth = need_field(where, family, "synth", str)
    if synth not in SYNTH_RECIPES:
        raise ValueError(f"{where}: synth {synth!r} is not one of {', '.join(SYNTH_RECIPES)}")
    base, factor, assumptions = _delays(key, facts)
    fmax = {int(g): float(v) for g, v in need_field(where, family, "dsp_fmax_mhz", dict).items()}
    reference = int(need_field(where, family, "reference_grade", int))
    grade_factor = fmax[reference] / fmax[speed_grade] if speed_grade in fmax and reference in fmax else 1.0
    router_name = need_field(where, family, "router", str)
    if router_name and router_name not in ROUTERS:
        raise ValueError(f"{where}: router {router_name!r} is not one of {', '.join(ROUTERS)}")
    router = ROUTERS[router_name] if router_name else None
    if router and not router_args:
        raise ValueError(f"board file {board_file}: family {key} routes with {router.name}, so it needs router_args")
    if router_pins and not (router and router.serial_pins):
        raise ValueError(f"board file {board_file}: router_pins are for a router that needs every pin placed; "
                         f"{router.name if router else 'no router'} places them itself")
    if router and router.serial_pins and {p for p, _ in router_pins} != set(SERIAL_PINS):
        raise ValueError(f"board file {board_file}: {router.name} needs every pin placed: router_pins must name the "
                         f"package pins of {', '.join(SERIAL_PINS)}")
    widths = need_field(where, family, "dsp_widths", list)
    return Family(
        key=key, title=need_field(where, family, "title", str), synth=synth,
        dsp_widths=(int(widths[0]), int(widths[1])),
        dsp_signed_only=bool(need_field(where, family, "dsp_signed_only", bool)),
        dsp_min_width=int(need_field(where, family, "dsp_min_width", int)),
        model_checked=tuple(str(v) for v in need_field(where, family, "model_checked", list)),
        lutram_luts=int(need_field(where, family, "lutram_luts", int)),
        lutram_bits=int(need_field(where, family, "lutram_bits", int)),
        lutram_depth=int(need_field(where, family, "lutram_depth", int)), speed_grade=speed_grade,
        delays=base.scaled(grade_factor * factor), assumptions=assumptions,
        router=router, router_args=router_args, router_pins=router_pins, dsp_instance=str(family.get("dsp_instance", "")),
    )
