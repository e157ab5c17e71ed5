"""Carry chains that nextpnr-nexus accepts: a CCU2 whose carry-in is a constant gets a feed-in cell.

nextpnr-nexus 0.11.1 starts a carry chain only at a CCU2 whose CIN is unconnected; a CIN driven by
anything but another CCU2 stops its packer. Yosys 0.70's synth_nexus maps every adder with a
feed-in CCU2 that makes the carry-in from fabric, but where that carry-in is a constant it folds
the feed-in cell away and ties the next cell's CIN to VLO (30 chains of the 1-to-1 learner).
:func:`feed_constant_carries` puts the feed-in back, the cell Yosys's own Nexus adder map uses
(INIT0 0xFFFF passes nothing, INIT1 0x00AA carries A1 out), with A1 the constant: the logic is
unchanged and every chain starts at an unconnected CIN.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["feed_constant_carries"]

_CONSTANT_CELLS = {"VLO": 0, "VHI": 1}
_FEED_PARAMETERS = {"INIT0": "0xFFFF", "INIT1": "0x00AA", "INJECT": "NO"}
_CCU2_INPUTS = ("A0", "B0", "C0", "D0", "A1", "B1", "C1", "D1")


def feed_constant_carries(netlist: dict[str, Any], top: str) -> int:
    """Give every CCU2 of ``top`` whose CIN is a constant a feed-in CCU2 (in place); the number of cells added."""
    module = netlist["modules"][top]
    cells = module["cells"]
    constant: dict[Any, int] = {"0": 0, "1": 1}
    drivers: dict[int, Any] = {}
    for cell in cells.values():
        if cell["type"] in _CONSTANT_CELLS:
            for bit in cell["connections"]["Z"]:
                constant[bit] = _CONSTANT_CELLS[cell["type"]]
                drivers.setdefault(_CONSTANT_CELLS[cell["type"]], bit)
    tied = [cell for cell in cells.values() if cell["type"] == "CCU2" and cell["connections"].get("CIN", [None])[0] in constant]
    if not tied:
        return 0
    fresh = _fresh_bits(module)
    for kind, value in _CONSTANT_CELLS.items():
        if value not in drivers:  # a constant driver the feed-in cells need and the netlist lacks
            bit = next(fresh)
            cells[f"$carry_feed_{kind}"] = {"hide_name": 1, "type": kind, "parameters": {}, "attributes": {},
                                           "port_directions": {"Z": "output"}, "connections": {"Z": [bit]}}
            drivers[value] = bit
    for index, cell in enumerate(tied):
        carry_in = constant[cell["connections"]["CIN"][0]]
        chain = next(fresh)
        connections = {port: [drivers[1]] for port in _CCU2_INPUTS}
        connections["A1"] = [drivers[carry_in]]
        connections["COUT"] = [chain]
        cells[f"$carry_feed_{index}"] = {
            "hide_name": 1, "type": "CCU2", "parameters": dict(_FEED_PARAMETERS), "attributes": {},
            "port_directions": {**{port: "input" for port in _CCU2_INPUTS}, "COUT": "output"},
            "connections": connections,
        }
        cell["connections"]["CIN"] = [chain]
    return len(tied)


def _fresh_bits(module: dict[str, Any]) -> Iterator[int]:
    """Net numbers no port, cell or net name of the module uses yet, each recorded as a hidden net name."""
    used = [b for net in module.get("netnames", {}).values() for b in net["bits"] if isinstance(b, int)]
    used += [b for cell in module["cells"].values() for conn in cell["connections"].values() for b in conn if isinstance(b, int)]
    bit = max(used, default=1)
    while True:
        bit += 1
        module.setdefault("netnames", {})[f"$carry_feed_net_{bit}"] = {"hide_name": 1, "bits": [bit], "attributes": {}}
        yield bit
