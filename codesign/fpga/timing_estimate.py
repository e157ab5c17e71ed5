"""A clock estimate from the logic depth of a Yosys ``synth_xilinx`` netlist (an ESTIMATE, not timing closure).

The longest register-to-register path of the mapped netlist is found with a per-cell delay
model; the clock estimate is the inverse of that path plus a clock margin. No placement or
routing is done, so every net between two cells is charged one average routing delay, and
dedicated connections (carry chains, MUXF7/8, DSP cascades) none. The delays of each family
(``board_files/families.toml``, a board's ``family.delays``) assume:

* UltraScale+ (-2 speed grade): a LUT level 0.10 ns of logic plus 0.40 ns of routing; a DSP48E2
  without internal pipeline registers 2.44 ns from A/B to P (the "without pipeline registers"
  DSP maximum frequency of 410 MHz in AMD DS923, Virtex UltraScale+ data sheet, -2), 1.2 ns
  from C or PCIN to P (assumed); a carry chain 0.25 ns to enter and 0.04 ns per 4 bits; a
  LUTRAM read 0.6 ns; FF clock-to-out 0.10 ns and setup 0.05 ns; clock margin 0.15 ns; a block RAM
  (RAMB18E2/RAMB36E2, registered read) 2.0 ns clock-to-out and 0.3 ns setup (assumed).
  Other speed grades scale every delay like that DSP figure (-1: 338 MHz, -3: 483 MHz).
* 7-series: the same model with every delay x1.6 (assumed, not from a data sheet).
* ECP5 (speed grade 6): the cell delays that nextpnr-ecp5 0.11 charges from its Project Trellis
  timing database (Lattice's own timing data, as extracted from Diamond): LUT4 0.24 ns, PFUMX /
  L6MUX21 0.17 ns, CCU2C 0.45 ns into the carry and 0.07 ns per CCU2C along it, 0.42 ns out of it,
  MULT18X18D without registers 3.93 ns A/B->P, TRELLIS_FF clock-to-out 0.52 ns and setup 0;
  1.17 ns per routed net, FITTED to nextpnr's routed Fmax of 11 specs (benchmarks/ecp5_routed.py;
  its leave-one-out error is in docs/estimator.md); ASSUMED: distributed-RAM read 0.24 ns (a
  LUT4) and write-to-read 0.52 ns, block-RAM clock-to-out 2.0 ns, no clock margin (nextpnr's Fmax has none). The same
  delays serve speed grades 7 and 8 (pessimistic there). benchmarks/ecp5_routed.py measures the
  error against nextpnr's routed Fmax (docs/estimator.md).

* Nexus (speed grade 9): the cell delays nextpnr-nexus 0.11 charges from its prjoxide database
  (board_files/families.toml [nexus] lists them); 0.73 ns per routed net, FITTED to nextpnr-nexus's
  routed Fmax of 18 specs (benchmarks/nexus_routed.py, its leave-one-out error in docs/estimator.md).

These round numbers place the estimate in the right range; a placed and routed design can be
faster (short local routes) or slower (congestion, long routes between DSP columns).
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from typing import Any

from codesign.fpga.family import DelayModel

__all__ = ["DelayModel", "critical_path"]

# The delays and assumptions of each family are data: board_files/families.toml, resolved into a board's
# Family record (codesign.fpga.family); the module docstring above says where the figures come from.


_FF = re.compile(r"^(FD[RSCP]E?(_1)?|TRELLIS_FF|FD1P3[BDIJ]X)$")
_LUT = re.compile(r"^(LUT[1-6]|INV)$")
_LUTRAM = re.compile(r"^RAM(32|64|128|256)")
_SRL = re.compile(r"^SRL")
_LATTICE_RAM = {"TRELLIS_DPR16X4", "DPR16X4"}  # ECP5's and Nexus's 16 x 4 distributed RAM: the same ports
_XILINX_BRAM = re.compile(r"^RAMB(18|36)E[12]$")  # block RAM: its read is registered inside (clock-to-out), every input an endpoint
_ECP5_MUX = {"PFUMX": "C0", "L6MUX21": "SD"}  # the select input is routed; the data inputs come from the slice
_MULT_IN = re.compile(r"^(A|B)\d*$|^SIGNED[AB]$")  # ECP5: a port per bit (A0..A17); Nexus: buses A, B
_NEXUS_MULT = {"MULT9X9", "MULT18X18", "MULT18X36", "MULT36X36"}


def _bits(conn: list) -> list:
    return [b for b in conn if isinstance(b, int)]


def critical_path(netlist: dict[str, Any], top: str, model: DelayModel) -> dict[str, Any]:
    """Longest register-to-register path of the top module: delay (ns) and what lies on it."""
    module = netlist["modules"][top]
    cells = module["cells"]
    arrival: dict[int, float] = {}
    via: dict[int, tuple[str, int | None]] = {}  # bit -> (cell, input bit it came from)
    arcs: list[tuple[str, list[tuple[int, int, float, bool]]]] = []  # cell -> (in, out, delay, routed)
    endpoints: list[tuple[int, float, str]] = []  # (bit, setup, cell)

    def start(bits, delay, cell):
        for b in bits:
            arrival[b] = max(arrival.get(b, 0.0), delay)
            via[b] = (cell, None)

    for name, port in module.get("ports", {}).items():
        if port["direction"] == "input":
            start(_bits(port["bits"]), 0.0, f"input {name}")
    for name, cell in cells.items():
        kind = cell["type"]
        conn = cell["connections"]
        dirs = cell.get("port_directions", {})
        ins = {p: _bits(v) for p, v in conn.items() if dirs.get(p) == "input"}
        outs = {p: _bits(v) for p, v in conn.items() if dirs.get(p) == "output"}
        out_bits = [b for v in outs.values() for b in v]
        if _FF.match(kind):
            start(out_bits, model.ff_clk_to_out, name)
            for p in ("D", "CE", "R", "S", "CLR", "PRE", "DI", "LSR", "M", "SP", "CD", "PD"):
                endpoints += [(b, model.ff_setup, name) for b in ins.get(p, [])]
        elif _LUT.match(kind):
            arcs.append((name, [(i, o, model.lut, True) for i in sum(ins.values(), []) for o in out_bits]))
        elif kind == "WIDEFN9":  # Nexus: two LUT4s into a mux; SEL reaches the mux alone
            arcs.append((name, [(i, o, model.muxf + (0.0 if p == "SEL" else model.lut), True)
                                for p, v in ins.items() for i in v for o in out_bits]))
        elif kind.startswith("MUXF"):
            arcs.append((name, [(i, o, model.muxf, p == "S") for p, v in ins.items() for i in v for o in out_bits]))
        elif kind in _ECP5_MUX:
            arcs.append((name, [(i, o, model.muxf, p == _ECP5_MUX[kind]) for p, v in ins.items() for i in v for o in out_bits]))
        elif kind in ("CCU2C", "CCU2"):
            # two bits of an ECP5 carry chain: data inputs into the chain, CIN along it and out to S0/S1
            arc = []
            for port, v in ins.items():
                for i in v:
                    for out_port, obits in outs.items():
                        if port == "CIN":
                            delay = model.carry_step if out_port == "COUT" else model.carry_out
                        elif port.endswith("1") and out_port == "S0":
                            continue
                        else:
                            delay = model.carry_in
                        arc += [(i, ob, delay, port != "CIN") for ob in obits]
            arcs.append((name, arc))
        elif kind == "MULT18X18D" or kind in _NEXUS_MULT:
            params = cell.get("parameters", {})
            if kind in _NEXUS_MULT:
                registered = any(str(params.get(f"REG{r}", "BYPASS")).strip() == "REGISTER"
                                 for r in ("INPUTA", "INPUTB", "OUTPUT"))
            else:
                registered = any(str(params.get(f"REG_{r}_CLK", "NONE")).strip() not in ("NONE", "")
                                 for r in ("INPUTA", "INPUTB", "PIPELINE", "OUTPUT"))
            mult_in = [i for p, v in ins.items() if _MULT_IN.match(p) for i in v]
            if registered:  # any internal register: both sides end and start at the multiplier
                start(out_bits, model.dsp_clk_to_out + model.dsp_mult / 2, name)
                endpoints += [(i, model.dsp_setup + model.dsp_mult / 2, name) for i in mult_in]
            else:
                arcs.append((name, [(i, o, model.dsp_mult, True) for i in mult_in for o in out_bits]))
        elif kind in _LATTICE_RAM:
            start(out_bits, model.lutram_clk_to_out, name)
            for port in ("WAD", "DI", "WRE"):
                endpoints += [(b, model.lutram_setup, name) for b in ins.get(port, [])]
            arcs.append((name, [(i, o, model.lutram_read, True) for i in ins.get("RAD", []) for o in out_bits]))
        elif kind == "DP16KD" or _XILINX_BRAM.match(kind):
            start(out_bits, model.bram_clk_to_out, name)
            endpoints += [(b, model.bram_setup, name) for p, v in ins.items() if not p.startswith("CLK") for b in v]
        elif kind.startswith("CARRY"):
            # CI/CYINIT ripple to every output; bit k's S/DI reach outputs k and above
            co, sums = outs.get("CO", []), outs.get("O", [])
            arc = []
            for port, v in ins.items():
                for k, i in enumerate(v):
                    for lane_outs in (co, sums):
                        for j, ob in enumerate(lane_outs):
                            if port in ("CI", "CYINIT"):
                                arc.append((i, ob, model.carry_step * (1 + j / 4), port == "CYINIT"))
                            elif j >= k:
                                arc.append((i, ob, model.carry_in + model.carry_step * (j - k) / 4, True))
            arcs.append((name, arc))
        elif kind.startswith("DSP48"):
            params = cell.get("parameters", {})

            def reg(key: str) -> bool:  # called only within this iteration, on this cell's params
                value = str(params.get(key, "0"))  # noqa: B023
                return int(value, 2) != 0 if re.fullmatch(r"[01]+", value) else value not in ("", "0")

            mult_in = [i for q in ("A", "B", "D") for i in ins.get(q, [])]
            add_in = [i for q in ("C", "PCIN", "CARRYIN") for i in ins.get(q, [])]
            if reg("PREG"):
                start(out_bits, model.dsp_clk_to_out, name)
                endpoints += [(i, model.dsp_setup + model.dsp_mult, name) for i in mult_in]
                endpoints += [(i, model.dsp_setup + model.dsp_add, name) for i in add_in]
            elif reg("AREG") or reg("BREG") or reg("MREG"):
                start(out_bits, model.dsp_clk_to_out + model.dsp_add, name)
                endpoints += [(i, model.dsp_setup, name) for i in mult_in]
                arcs.append((name, [(i, o, model.dsp_add, True) for i in add_in for o in out_bits]))
            else:
                arc = [(i, o, model.dsp_mult, q != "PCIN") for q in ("A", "B", "D") for i in ins.get(q, []) for o in out_bits]
                arc += [(i, o, model.dsp_add, q != "PCIN") for q in ("C", "PCIN", "CARRYIN") for i in ins.get(q, []) for o in out_bits]
                arcs.append((name, arc))
        elif _LUTRAM.match(kind) or _SRL.match(kind):
            start(out_bits, model.lutram_clk_to_out, name)
            write = {"WE", "WCLK", "CE", "CLK", "D", "DI"} | {p for p in ins if p.startswith("DI") or p == "ADDRH" or p.startswith("WADR")}
            for port, v in ins.items():
                if port in write:
                    endpoints += [(b, model.lutram_setup, name) for b in v]
            read = [i for port, v in ins.items() if port not in write and port not in ("WCLK", "CLK") for i in v]
            arcs.append((name, [(i, o, model.lutram_read, True) for i in read for o in out_bits]))
        elif kind in ("OBUF",):
            endpoints += [(b, 0.0, name) for b in ins.get("I", [])]
        elif kind in ("IBUF",):
            arcs.append((name, [(i, o, 0.0, False) for i in ins.get("I", []) for o in out_bits]))
        # BUFG and $scopeinfo carry no data

    # topological propagation over cells (a cell fires when every input with a driver has arrived)
    drivers: dict[int, list[int]] = defaultdict(list)  # input bit -> arc cells reading it
    pending = []
    for idx, (_, arc) in enumerate(arcs):
        inputs = {i for i, _, _, _ in arc}
        pending.append(len(inputs))
        for i in inputs:
            drivers[i].append(idx)
    produced_by: dict[int, list[int]] = defaultdict(list)
    for idx, (_, arc) in enumerate(arcs):
        for o in {o for _, o, _, _ in arc}:
            produced_by[o].append(idx)
    # inputs that no arc produces are ready at the start (registers, ports, constants)
    waiting = [0] * len(arcs)
    for idx, (_, arc) in enumerate(arcs):
        waiting[idx] = sum(1 for i in {i for i, _, _, _ in arc} if produced_by.get(i))
    remaining_producers = {o: len(v) for o, v in produced_by.items()}
    queue = deque(idx for idx in range(len(arcs)) if waiting[idx] == 0)
    done = 0
    while queue:
        idx = queue.popleft()
        done += 1
        name, arc = arcs[idx]
        for i, o, d, routed in arc:
            t = arrival.get(i, 0.0) + (model.net if routed else 0.0) + d
            if t > arrival.get(o, -1.0):
                arrival[o] = t
                via[o] = (name, i)
        for o in {o for _, o, _, _ in arc}:
            remaining_producers[o] -= 1
            if remaining_producers[o] == 0:
                for nxt in drivers.get(o, []):
                    waiting[nxt] -= 1
                    if waiting[nxt] == 0:
                        queue.append(nxt)
    if done != len(arcs):
        raise ValueError(f"the netlist of {top} has a combinational loop ({len(arcs) - done} cells never became ready)")

    worst, worst_bit, worst_end = 0.0, None, ""
    endpoint_ns: dict[str, float] = {}  # the slowest path into each endpoint cell
    for b, setup, cell in endpoints:
        t = arrival.get(b, 0.0) + model.net + setup
        endpoint_ns[cell] = max(endpoint_ns.get(cell, 0.0), t)
        if t > worst:
            worst, worst_bit, worst_end = t, b, cell
    # walk back along the path for a summary of what it crosses
    kinds: dict[str, int] = defaultdict(int)
    path: list[str] = []
    arrival_of: dict[str, float] = {}
    bit = worst_bit
    while bit is not None and bit in via and len(path) < 10_000:
        cell, prev = via[bit]
        path.append(cell)
        arrival_of[cell] = arrival.get(bit, 0.0)
        if cell in cells:
            t = cells[cell]["type"]
            kinds["LUT" if _LUT.match(t) else t] += 1
        bit = prev
    return {
        "path_ns": round(worst, 3),
        "period_ns": round(worst + model.margin, 3),
        "levels": dict(sorted(kinds.items())),
        "start": path[-1] if path else None,
        "end": worst_end,
        "cells": [(c, cells[c]["type"] if c in cells else "port", round(arrival_of.get(c, 0.0), 2)) for c in reversed(path)],
        "endpoint_ns": {c: round(t, 3) for c, t in endpoint_ns.items()},
    }
