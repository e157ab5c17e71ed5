"""Spec -> RTL: the SystemVerilog parameters, memory init files and RTL manifest of one learner.

:func:`emit_rtl` writes a self-contained folder: copies of the ``rtl/`` library modules, a
generated top (``kan_online_top.sv`` / ``mlp_online_top.sv``, from ``rtl/templates/learner_top.sv``)
that sets every parameter of the core from the spec, the ``.mem`` files of the initial state and
ROMs (hex, one word per line), and ``rtl_manifest.json`` (ports, pipeline, expected latency and
II, where the state lives). The ports are the ones of the HLS top (``manifest.json``), so one
bench drives either. Next to it, ``<kind>_online_axi.sv`` (``rtl/templates/learner_axi_top.sv``)
puts that top behind the AXI4-Stream / AXI4-Lite shell (``rtl/learner_axi.sv``; its register map
in ``axi_registers.md`` and ``learner_axi.h``, the
manifest's ``axi`` entry): the top a Vivado block design instantiates.

The pipeline is a choice of the RTL, not of the arithmetic: ``pipeline="ii1"`` puts no register
inside a sample's loop (II = 1, one long clock); ``"staged"`` registers after every phase
(II = 2L for L layers); ``"deep"`` every register inside the phases too (``"auto"``, the
placement codesign.fpga.search.choose_pipeline picks for the spec's clock on a board, is
resolved before the RTL is emitted and arrives here as a placement); an int is the phase
mask, a :class:`~codesign.fpga.placement.Pipeline` the full placement
(codesign/fpga/placement.py, docs/rtl.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from codesign import __version__
from codesign.fpga.axi import StreamLayout, stream_layout, write_register_docs
from codesign.fpga.kind import FpgaKind
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.placement import CUT_HEADER, Pipeline, cut_header
from codesign.fpga.simulator import rtl_dir
from codesign.fpga.templates import render_rtl
from codesign.kan.run import make_learner
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["RTL_MANIFEST", "rtl_parameters", "emit_rtl", "initial_state_of", "load_rtl_manifest", "lr_shift_range"]

RTL_MANIFEST = "rtl_manifest.json"
INITIAL_STATE = "initial_state.npz"  # raw initial coefficients when they come from --init, not the seed

def _packed_widths(widths: tuple[int, ...]) -> str:
    if len(widths) > 8:
        raise ValueError(f"widths={widths}: the RTL takes at most 7 layers (8 widths)")
    if max(widths) >= 1 << 16:
        raise ValueError(f"widths={widths}: layer widths above 65535 are not supported by the RTL")
    return "{" + ", ".join(f"16'd{w}" for w in reversed(widths)) + "}"


def rtl_parameters(spec: KANSpec | MLPSpec, pipeline: str | int | Pipeline = "ii1") -> dict[str, int | str]:
    """Every SystemVerilog parameter of the learner core (kan_online / mlp_online) for a spec (pipeline not auto)."""
    kind = fpga_kind(spec)
    pipe = resolve_pipeline(spec, pipeline)
    widths = spec.widths
    params: dict[str, int | str] = {
        "N_LAYERS": len(widths) - 1,
        "WIDTHS": _packed_widths(widths),
        "N_IN": spec.n_inputs,
        "N_OUT": spec.n_outputs,
        "N_MAX": max(widths),
    }
    params.update(kind.core_parameters(spec))
    params["LR_SHIFT"] = spec.lr_shift
    params["PIPE"] = f"64'd{pipe.phases}"
    params.update(kind.placement_parameters(spec, pipe))
    return params


def _ports(spec: KANSpec | MLPSpec) -> list[dict[str, Any]]:
    """The top's ports in the format of the HLS manifest (manifest.json)."""
    act = spec.act_t

    def array(name: str, direction: str, count: int, what: str) -> dict[str, Any]:
        return {
            "name": name, "direction": direction, "protocol": "ap_vld", "valid": f"{name}_ap_vld",
            "width": count * act.width, "elements": count, "element_width": act.width, "element_type": str(act),
            "int_bits": act.int_bits, "frac_bits": act.frac, "signed": act.signed,
            "packing": "element i in bits [(i+1)*element_width-1 : i*element_width], raw two's complement",
            "what": what,
        }

    control = [
        ("ap_clk", "in", "clock"), ("ap_rst", "in", "reset, active high, synchronous"),
        ("ap_start", "in", "start one sample (with x_ap_vld and y_ap_vld)"),
        ("ap_done", "out", "the sample's update is written and visible to the next sample"),
        ("ap_idle", "out", "no sample in flight"), ("ap_ready", "out", "a sample is accepted at the next edge if started"),
    ]
    return [{"name": n, "direction": d, "protocol": "ap_ctrl_hs", "width": 1, "what": w} for n, d, w in control] + [
        array("x", "in", spec.n_inputs, "one input sample"),
        array("y", "in", spec.n_outputs, "its target (used only when train is 1)"),
        {"name": "train", "direction": "in", "protocol": "ap_none", "width": 1, "element_type": "bool",
         "what": "1: learn from (x, y) after predicting; 0: predict only"},
        array("y_hat", "out", spec.n_outputs, "the prediction for x, made before x's update"),
    ]


def _core_instance(core: str, params: dict[str, int | str], connections: dict[str, str], host_port: bool = False) -> str:
    """The core instantiated as u_core with every parameter and these port connections (rtl/templates/core_instance.sv)."""
    entries = [f"      .{k}({v})" for k, v in params.items()] + ["      .MEM_DIR(MEM_DIR)"]
    if host_port:
        entries.append("      .HOST_PORT(1)")
    ports = [f".{port}({signal})" for port, signal in connections.items()]
    rows = [", ".join(ports[k:k + 5]) for k in range(0, len(ports), 5)]
    return render_rtl("core_instance.sv", core=core, parameters=",\n".join(entries),
                      connections=",\n".join(f"      {r}" for r in rows)).rstrip("\n")


def lr_shift_range(spec: KANSpec | MLPSpec) -> tuple[int, int]:
    """The learning-rate shifts the AXI shell's LR_SHIFT takes: the spec's run-time range (only lr_shift without one)."""
    return spec.lr_shift, spec.lr_shift_max


def _top_text(kind: FpgaKind, params: dict[str, int | str]) -> str:
    """The bare top: the core with the HLS top's ports (rtl/templates/learner_top.sv)."""
    core_instance = _core_instance(kind.core, params, {
        "ap_clk": "ap_clk", "ap_rst": "ap_rst", "ap_start": "ap_start", "ap_done": "ap_done", "ap_idle": "ap_idle",
        "ap_ready": "ap_ready", "x": "x", "x_ap_vld": "x_ap_vld", "y": "y", "y_ap_vld": "y_ap_vld", "train": "train",
        "y_hat": "y_hat", "y_hat_ap_vld": "y_hat_ap_vld", "overflows": "",
        **({"lr_up": f"3'd{params['LR_SPAN']}"} if kind.runtime_lr else {}),  # the build's lr_shift
        **({"coef_hold": "1'b0", "coef_addr": "28'd0", "coef_we": "1'b0", "coef_wdata": "'0", "coef_rdata": ""}
           if kind.coefficient_port else {}),
    })
    return render_rtl("learner_top.sv", core=kind.core, version=__version__, n_in=int(params["N_IN"]),
                      n_out=int(params["N_OUT"]), w_act=int(params["W_ACT"]), core_instance=core_instance)


_AXI_LIBRARY = ["learner_axi_regs.svh", "learner_axi.sv"]  # kan_host.sv is in the KAN core's library


def _axi_top_text(kind: FpgaKind, params: dict[str, int | str], layout: StreamLayout, f_act: int, has_coef: bool) -> str:
    """The AXI top: the bare top behind the learner_axi shell (rtl/templates/learner_axi_top.sv)."""
    n_in, n_out, w = int(params["N_IN"]), int(params["N_OUT"]), int(params["W_ACT"])
    w_coef = int(params["W_COEF"])
    core_instance = _core_instance(kind.core, params, {
        "ap_clk": "aclk", "ap_rst": "core_rst", "ap_start": "core_start", "ap_done": "core_done",
        "ap_idle": "core_idle", "ap_ready": "core_ready", "x": "core_x", "x_ap_vld": "1'b1", "y": "core_y",
        "y_ap_vld": "1'b1", "train": "core_train", "y_hat": "core_y_hat", "y_hat_ap_vld": "core_y_hat_vld",
        "overflows": "core_overflows", **({"lr_up": "core_lr_up"} if kind.runtime_lr else {}),
        **({"coef_hold": "core_coef_hold", "coef_addr": "core_coef_addr", "coef_we": "core_coef_we", "coef_wdata": "core_coef_wdata",
            "coef_rdata": "core_coef_rdata"} if kind.coefficient_port else {}),
    }, host_port=has_coef)
    tie = "" if kind.coefficient_port else f"  assign core_coef_rdata = '0;  // the {kind.kind.title} core has no coefficient port\n"
    return render_rtl(
        "learner_axi_top.sv", core=kind.core, version=__version__, s_msb=layout.s_width - 1, m_msb=layout.m_width - 1,
        x_msb=n_in * w - 1, y_msb=n_out * w - 1, coef_msb=w_coef - 1, n_in=n_in, n_out=n_out, w_act=w, f_act=f_act,
        w_coef=w_coef, f_coef=int(params["F_COEF"]), has_coef=int(has_coef), coefficient_tie=tie, core_instance=core_instance,
        lr_shift=int(params["LR_SHIFT"]), lr_span=int(params.get("LR_SPAN", 0)),
    )


def emit_rtl(
    spec: KANSpec | MLPSpec,
    out_dir: str | Path,
    pipeline: str | int | Pipeline = "ii1",
    seed: int = 0,
    learner_name: str | None = None,
    force: bool = False,
    initial: list[np.ndarray] | None = None,
    clock: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the RTL of ``spec`` into ``out_dir`` and return its manifest (also in rtl_manifest.json).

    The initial state is the reference learner's for ``seed`` (make_learner(spec, seed)), so the
    RTL starts where the Python reference and the HLS build start. ``pipeline`` is a placement
    (``auto`` is resolved for a board by codesign.fpga.search.choose_pipeline first). ``initial`` (raw
    coef_t per layer, from --init) replaces the seed's initial coefficients; it is kept in
    ``initial_state.npz`` and named by the manifest's ``initial_state``, where the benches read it.
    ``clock`` (a build's clock fields: target, estimate, clock_met, ns) joins the manifest's ``pipeline``,
    so the manifest is written once, as the build reports it.
    """
    kind = fpga_kind(spec)
    pipe = resolve_pipeline(spec, pipeline)
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        raise FileExistsError(f"{out_dir} exists and is not empty (use --force to overwrite it)")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed={seed!r}: must be a non-negative integer")
    params = rtl_parameters(spec, pipe)
    out_dir.mkdir(parents=True, exist_ok=True)
    library = rtl_dir()
    for name in kind.rtl_library:
        shutil.copyfile(library / name, out_dir / name)
    if kind.phase_cuts:  # the CUT_* definitions, rendered from CUT_BITS
        (out_dir / CUT_HEADER).write_text(cut_header())
    learner = make_learner(spec, seed=seed, initial=initial)
    if initial is not None:
        np.savez(out_dir / INITIAL_STATE, *[np.asarray(c, dtype=np.int64) for c in initial])
    memories = kind.write_memories(spec, learner, out_dir)
    top = kind.top
    (out_dir / f"{top}.sv").write_text(_top_text(kind, params))
    sources = [n for n in kind.rtl_library if n.endswith(".sv")] + [f"{top}.sv"]
    # the AXI top: an extra top over the same sources; the bare top stays the manifest's "top"
    for name in _AXI_LIBRARY:
        shutil.copyfile(library / name, out_dir / name)
    layout = stream_layout(spec.n_inputs, spec.n_outputs, spec.act_t.width)
    axi_top = kind.axi_top
    # COEF_ADDR's fields reach m, i, o < 256 and COEF_DATA is 32 bits wide
    has_coef = (kind.coefficient_port and isinstance(spec, KANSpec) and spec.n_coef <= 256 and max(spec.widths) <= 256
                and spec.coef_t.width <= 32)
    (out_dir / f"{axi_top}.sv").write_text(_axi_top_text(kind, params, layout, spec.act_t.frac, has_coef))
    lr_range = lr_shift_range(spec)
    register_docs = write_register_docs(out_dir, layout, spec.act_t.frac, spec.coef_t.width, spec.coef_t.frac, has_coef,
                                        lr_range)
    manifest = {
        "format": "codesign-rtl-manifest/1",
        "generator": f"codesign {__version__}",
        "learner": learner_name or kind.kind.learner,
        "kind": kind.name,
        "top": top,
        "sources": sources,
        "includes": ["."],
        "memories": memories,
        "block_protocol": "ap_ctrl_hs",
        "ports": _ports(spec),
        "parameters": params,
        "pipeline": {**pipe.to_dict(), **pipeline_timing(spec, pipe),
                     "choice": pipeline if isinstance(pipeline, str) else pipe.text, **(clock or {})},
        "state": kind.state_description(spec),
        "axi": {
            "top": axi_top,
            "sources": [n for n in sources if n != f"{top}.sv"] + ["learner_axi.sv", f"{axi_top}.sv"],
            "s_axis_width": layout.s_width, "m_axis_width": layout.m_width, "train_bit": layout.train_bit,
            "element_width": layout.w_act, "n_in": layout.n_in, "n_out": layout.n_out,
            "register_docs": register_docs, "coefficient_access": has_coef, "lr_shift_range": list(lr_range),
            "reset": "aresetn, synchronous, active low: the learner's ap_rst; also drops a prediction not yet taken",
        },
        "reset": "synchronous, active high: drops the sample in flight unless its update is already "
        "committed (ap_done); keeps the learned state; ap_ready is low while it is held",
        "seed": seed,
        **({"initial_state": INITIAL_STATE} if initial is not None else {}),
        "spec": spec.to_dict(),
        "semantics": "predict-then-update: y_hat of sample t uses the state after sample t-1 (docs/arithmetic.md §7)",
    }
    from codesign.fpga.vivado import write_vivado_flow  # noqa: PLC0415 - the Vivado flow of both tops, for the spec's clock

    manifest["vivado"] = write_vivado_flow(out_dir, manifest, spec.clock_mhz)
    (out_dir / RTL_MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def initial_state_of(manifest: dict[str, Any], folder: str | Path) -> list[np.ndarray] | None:
    """The raw initial coefficients an emitted folder holds (from --init), or None when the seed made them."""
    name = manifest.get("initial_state")
    if not name:
        return None
    with np.load(Path(folder) / name) as data:
        return [data[f"arr_{k}"] for k in range(len(data.files))]


def load_rtl_manifest(folder: str | Path) -> dict[str, Any]:
    """The RTL manifest of an emitted folder (or of a build folder holding it in rtl/)."""
    folder = Path(folder)
    for candidate in (folder / RTL_MANIFEST, folder / "rtl" / RTL_MANIFEST):
        if candidate.is_file():
            return json.loads(candidate.read_text())
    raise FileNotFoundError(f"{folder} holds no {RTL_MANIFEST} (nor rtl/{RTL_MANIFEST}): emit the RTL first")
