"""A Vivado non-project flow for the emitted RTL: one Tcl script and one XDC per top (bare and AXI).

The script reads the manifest's sources (and its .mem files), synthesizes the top for the part
given on its command line, and places and routes it under an XDC that puts the spec's clock on
the top's clock port; utilization and timing reports go to files beside a routed checkpoint.
codesign does not run Vivado (it is not installed where codesign is tested): the scripts are
checked for naming exactly the manifest's sources, top and period (tests/fpga/test_vivado.py).

    vivado -mode batch -source vivado_kan_online_top.tcl -tclargs xcvu9p-flga2104-2L-e
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codesign import __version__

__all__ = ["AXI_CLOCK_PORT", "clock_port", "period_ns", "vivado_script", "vivado_xdc", "write_vivado_flow"]

AXI_CLOCK_PORT = "aclk"  # rtl/templates/learner_axi_top.sv


def clock_port(manifest: dict[str, Any]) -> str:
    """The bare top's clock port: the manifest's port whose role is the clock."""
    return next(p["name"] for p in manifest["ports"] if p.get("what") == "clock")


def period_ns(clock_mhz: float) -> str:
    """The clock period in ns as the XDC writes it (three decimals)."""
    return f"{1000.0 / clock_mhz:.3f}"


def vivado_xdc(top: str, port: str, clock_mhz: float) -> str:
    """The XDC of one top: the spec's clock on its clock port."""
    return (f"# {top}: the learner's clock target, {clock_mhz:g} MHz (codesign {__version__})\n"
            f"create_clock -period {period_ns(clock_mhz)} -name {port} [get_ports {port}]\n")


def vivado_script(top: str, sources: list[str], memories: list[str], xdc: str, clock_mhz: float) -> str:
    """The non-project Tcl flow of one top: read, synth_design, opt/place/route_design, reports to files."""
    out = f"vivado_{top}"
    return "\n".join([
        f"# Vivado non-project flow of {top} at {clock_mhz:g} MHz, written by codesign {__version__}.",
        "# Not run by codesign. From any folder:",
        f"#   vivado -mode batch -source {out}.tcl -tclargs <part>     (e.g. xcvu9p-flga2104-2L-e)",
        f"# Reports: {out}/utilization.rpt, {out}/timing_summary.rpt; routed checkpoint {out}/routed.dcp.",
        "if {$argc < 1} {",
        f'    puts "usage: vivado -mode batch -source {out}.tcl -tclargs <part>"',
        "    exit 2",
        "}",
        "set part [lindex $argv 0]",
        "# the .mem files are read from this folder (the tops' MEM_DIR is \".\")",
        "cd [file dirname [file normalize [info script]]]",
        f"file mkdir {out}",
        "read_verilog -sv {" + " ".join(sources) + "}",
        *(["read_mem {" + " ".join(memories) + "}"] if memories else []),
        f"read_xdc {xdc}",
        f"synth_design -top {top} -part $part -include_dirs {{.}}",
        "opt_design",
        "place_design",
        "route_design",
        f"report_utilization -file {out}/utilization.rpt",
        f"report_timing_summary -file {out}/timing_summary.rpt",
        f"write_checkpoint -force {out}/routed.dcp",
        "",
    ])


def write_vivado_flow(folder: str | Path, manifest: dict[str, Any], clock_mhz: float) -> dict[str, Any]:
    """Write the Tcl script and XDC of both tops into ``folder``; returns the manifest's ``vivado`` entry."""
    if not clock_mhz > 0:
        raise ValueError(f"clock_mhz={clock_mhz!r}: must be positive")
    folder = Path(folder)
    tops = [(manifest["top"], list(manifest["sources"]), clock_port(manifest)),
            (manifest["axi"]["top"], list(manifest["axi"]["sources"]), AXI_CLOCK_PORT)]
    entry: dict[str, Any] = {"clock_mhz": clock_mhz, "period_ns": float(period_ns(clock_mhz)), "run_here": False}
    for top, sources, port in tops:
        xdc, script = f"{top}.xdc", f"vivado_{top}.tcl"
        (folder / xdc).write_text(vivado_xdc(top, port, clock_mhz))
        (folder / script).write_text(vivado_script(top, sources, list(manifest.get("memories", [])), xdc, clock_mhz))
        entry[top] = {"script": script, "xdc": xdc, "clock_port": port}
    return entry
