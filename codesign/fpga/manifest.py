"""The interface contract of the learner top (DESIGN.md), written as ``manifest.json``.

The HLS top and the RTL top expose the same ports: one input sample ``x`` with its target
``y`` and a ``train`` enable, one prediction ``y_hat``, valid signals, and the ap_ctrl_hs
block handshake. Arrays travel as one packed word (element i in bits [(i+1)W-1 : iW]), the
way ``ARRAY_RESHAPE complete`` presents them on the RTL. A test bench reads this file to
drive either top.
"""

from __future__ import annotations

from codesign import __version__
from codesign.fixed import FixedType
from codesign.fpga.boards import Board
from codesign.fpga.timing import Timing
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["manifest", "interface_table"]


def _array_port(name: str, direction: str, count: int, t: FixedType, what: str) -> dict:
    return {
        "name": name, "direction": direction, "protocol": "ap_vld", "valid": f"{name}_ap_vld",
        "width": count * t.width, "elements": count, "element_width": t.width, "element_type": str(t),
        "int_bits": t.int_bits, "frac_bits": t.frac, "signed": t.signed,
        "packing": "element i in bits [(i+1)*element_width-1 : i*element_width], raw two's complement",
        "what": what,
    }


def _control_ports() -> list[dict]:
    ctrl = [("ap_clk", "in", "clock"), ("ap_rst", "in", "reset, active high"),
            ("ap_start", "in", "start one sample"), ("ap_done", "out", "the sample's update is written"),
            ("ap_idle", "out", "no sample in flight"), ("ap_ready", "out", "ready for the next sample")]
    return [{"name": n, "direction": d, "protocol": "ap_ctrl_hs", "width": 1, "what": w} for n, d, w in ctrl]


def manifest(learner: str, spec: KANSpec | MLPSpec, board: Board, timing: Timing) -> dict:
    """The manifest of the generated top: ports, types, clock and expected timing."""
    act = spec.act_t
    ports = _control_ports() + [
        _array_port("x", "in", spec.n_inputs, act, "one input sample"),
        _array_port("y", "in", spec.n_outputs, act, "its target (read only when train is 1)"),
        {"name": "train", "direction": "in", "protocol": "ap_none", "width": 1, "element_type": "bool",
         "what": "1: learn from (x, y) after predicting; 0: predict only"},
        _array_port("y_hat", "out", spec.n_outputs, act, "the prediction for x, made before x's update"),
    ]
    return {
        "format": "codesign-learner-manifest/1",
        "generator": f"codesign {__version__}",
        "learner": learner,
        "top": f"{learner}_top",
        "block_protocol": "ap_ctrl_hs",
        "ports": ports,
        "types": {k: v for k, v in spec.to_dict().items() if k.endswith("_t")},
        "part": board.part,
        "clock_mhz": spec.clock_mhz,
        "timing": timing.to_dict(spec.clock_mhz),
        "semantics": "predict-then-update: y_hat of sample t uses the state after sample t-1 (docs/arithmetic.md §7)",
    }


def interface_table(data: dict) -> str:
    """The manifest's ports as a Markdown table (for the project README)."""
    rows = ["| port | direction | width | protocol | type |", "|---|---|---|---|---|"]
    for p in data["ports"]:
        kind = p.get("element_type", "")
        if p.get("elements"):
            kind = f"{p['elements']} x `{kind}`"
        proto = p["protocol"] + (f" (`{p['valid']}`)" if "valid" in p else "")
        rows.append(f"| `{p['name']}` | {p['direction']} | {p['width']} | {proto} | {kind} |")
    return "\n".join(rows)
