"""One run of rtl/kan_layer.sv on the vectors of the layer operations, and the Python reference of the same samples.

kan_layer does read_window, layer_forward, output_error (FUSE_ERROR, the last layer's fused error),
layer_input_gradient and layer_update in one module (phases F, B, U, labelled by those names). With
every register off, the phases are combinational but for the banks, so each sample is a few vectors
of tests/ops/vector_bench.py, a clock edge after each: the banks are written through the host port
(one word per edge), the decoded inputs applied with `commit` (the outputs and the bank reads are
read, the edge writes the update), then the banks read back through the host port.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.fpga.simulator import rtl_dir
from codesign.kan.kan_online import T_ERR, layer_forward, layer_input_gradient, layer_update, read_window
from codesign.kan.learner_base import type_row
from codesign.kan.online_error import output_error
from codesign.kan.spec import KANSpec
from tests.ops.rtl_vectors import pack, run_module, unpack
from tests.ops.vectors import NO_STATS, layer_vectors, random_raw, reference_tables

SOURCES = ["pipe_reg.sv", "const_mult.sv", "adder_tree.sv", "fixed_cast.sv", "kan_bank.sv", "kan_layer.sv"]


@dataclass(frozen=True)
class LayerRun:
    """Per sample (n first): the inputs, and each output of Python and of kan_layer.sv."""

    vectors: dict[str, np.ndarray]
    python: dict[str, np.ndarray]
    sv: dict[str, np.ndarray]


def _params(spec: KANSpec, n_in: int, n_out: int, banks: int, depth: int) -> dict[str, object]:
    """kan_layer's parameters for the last layer of `spec` (g_out of err_t, the error fused) with every register off."""
    g = spec.grid_constants()
    params: dict[str, object] = dict(N_IN=n_in, N_OUT=n_out, P=banks, DEPTH=depth, INV_H=g.inv_h_raw, INV_H_FRAC=g.inv_h_frac,
                                     LR_SHIFT=spec.lr_shift, HAS_BACKWARD=1, HOST_PORT=1, FUSE_ERROR=1,
                                     # the width of the fused error's chain, as kan_online sets it
                                     W_YG=spec.basis_t.width + spec.coef_t.width + 24
                                     + max(0, spec.act_t.frac - spec.basis_t.frac - spec.coef_t.frac))
    for prefix, t, modes in (("ACT", spec.act_t, True), ("COEF", spec.coef_t, True), ("B", spec.basis_t, False),
                             ("D", spec.dbasis_t, False), ("DPHI", spec.dphi_t, True), ("G", spec.err_t, False),
                             ("GR", spec.grad_t, True), ("ERR", spec.err_t, True)):
        params[f"W_{prefix}"], params[f"F_{prefix}"] = t.width, t.frac
        if modes:
            params[f"Q_{prefix}"], params[f"O_{prefix}"] = int(t.qmode), int(t.omode)
    return params


def _python(spec: KANSpec, v: dict[str, np.ndarray], target: np.ndarray) -> dict[str, np.ndarray]:
    """read_window, layer_forward, output_error, layer_input_gradient and layer_update of each sample."""
    types, grid, _, _ = reference_tables(spec)
    n, n_out, n_in, _ = v["coef"].shape
    f_g = types[T_ERR, 1]
    out = {"window": np.zeros_like(v["window"]), "y": np.zeros((n, n_out), np.int64), "err": np.zeros((n, n_out), np.int64),
           "g_in": np.zeros((n, n_in), np.int64), "coef": v["coef"].copy()}
    acts, grads, errs = (np.zeros((2, max(n_in, n_out)), dtype=np.int64) for _ in range(3))
    for t in range(n):
        flat, cell, window = out["coef"][t].reshape(-1), v["cell"][t : t + 1], out["window"][t : t + 1]
        read_window(flat, cell, window, 0, 0, n_in, n_out, spec.n_coef)
        layer_forward(window, v["basis"][t : t + 1], acts, 0, n_in, n_out, types, NO_STATS, 0, t)
        out["y"][t] = acts[1, :n_out]
        output_error(acts, target, errs, 1, n_out, spec.act_t.frac, type_row(types, T_ERR), NO_STATS, 0, t)
        out["err"][t] = errs[1, :n_out]
        grads[1, :n_out] = v["g_out"][t]
        layer_input_gradient(window, v["dbasis"][t : t + 1], v["clamped"][t : t + 1], grads, 0, n_in, n_out, f_g, types, grid,
                             NO_STATS, 0, 0, t)
        out["g_in"][t] = grads[0, :n_in]
        layer_update(flat, cell, window, v["basis"][t : t + 1], grads, 0, 0, n_in, n_out, spec.n_coef, f_g, spec.lr_shift,
                     types, NO_STATS, 0, t)
    return out


def run_kan_layer(spec: KANSpec, build: Path, n_in: int = 2, n_out: int = 2, n_random: int = 40, n_extreme: int = 12,
                  seed: int = 50) -> LayerRun:
    """The layer operations of `spec` on (n_random + n_extreme) samples of an n_in -> n_out last layer, in Python and in kan_layer.sv."""
    rng = np.random.default_rng(seed)
    k1, m = spec.spline_order + 1, spec.n_coef
    banks = 1 << (k1 - 1).bit_length()
    depth = -(-m // banks)
    w_addr = max(1, (depth - 1).bit_length())
    # the vectors of the last layer of a spec whose last layer is n_in -> n_out (types, grid and ROMs as spec's)
    v = layer_vectors(dataclasses.replace(spec, widths=(n_in, n_in, n_out)), 1, rng, n_random, n_extreme)
    n = v["coef"].shape[0]
    target = random_raw(spec.act_t, (n, n_out), rng)
    python = _python(spec, v, target)

    w_coef, mask = spec.coef_t.width, (1 << spec.coef_t.width) - 1
    inputs: dict[str, list[int]] = {k: [] for k in ("host_mode", "host_addr", "host_we", "host_wdata", "commit", "clamped", "bb",
                                                     "db", "baddr", "used", "g_out", "neg_target", "lr_up", "hold")}

    def vector(**values: int) -> None:
        for name, column in inputs.items():
            column.append(values.get(name, 0))

    eval_rows = []
    for t in range(n):
        coef = v["coef"][t]  # (o, i, m)
        for i in range(n_in):
            for b in range(banks):
                for a in range(depth):
                    mm = a * banks + b
                    word = sum((int(coef[o, i, mm]) & mask) << (o * w_coef) for o in range(n_out)) if mm < m else 0
                    vector(host_mode=1, host_addr=a, host_we=1 << (i * banks + b), host_wdata=word)
        bb, db = np.zeros((n_in, banks), np.int64), np.zeros((n_in, banks), np.int64)
        baddr, used = np.zeros((n_in, banks), np.int64), np.zeros((n_in, banks), np.int64)
        for i in range(n_in):
            cell = int(v["cell"][t, i])
            for b in range(banks):
                j = (b - cell) % banks
                baddr[i, b] = min((cell + j) // banks, depth - 1)
                if j < k1:
                    bb[i, b], db[i, b], used[i, b] = v["basis"][t, i, j], v["dbasis"][t, i, j], 1
        eval_rows.append(len(inputs["commit"]))
        vector(commit=1, clamped=pack(v["clamped"][t : t + 1], 1)[0], bb=pack(bb.reshape(1, -1), spec.basis_t.width)[0],
               db=pack(db.reshape(1, -1), spec.dbasis_t.width)[0], baddr=pack(baddr.reshape(1, -1), w_addr)[0],
               used=pack(used.reshape(1, -1), 1)[0], g_out=pack(v["g_out"][t : t + 1], spec.err_t.width)[0],
               neg_target=pack(-target[t : t + 1], spec.act_t.width + 1)[0])
        for a in range(depth):
            vector(host_mode=1, host_addr=a)
    out = run_module(SOURCES, "kan_layer", _params(spec, n_in, n_out, banks, depth), inputs,
                     ["y", "err", "g_in", "rdata", "host_rdata"], build, clock=True, includes=[rtl_dir()])

    rows = np.array(eval_rows)
    pick = {name: [out[name][r] for r in rows] for name in ("y", "err", "g_in", "rdata")}
    rdata = unpack(pick["rdata"], w_coef, n_in * banks * n_out, True).reshape(n, n_in, banks, n_out)
    back = np.stack([unpack([out["host_rdata"][r + 1 + a] for r in rows], w_coef, n_in * banks * n_out, True)
                     for a in range(depth)], axis=1).reshape(n, depth, n_in, banks, n_out)
    sv = {"y": unpack(pick["y"], spec.act_t.width, n_out, True), "err": unpack(pick["err"], spec.err_t.width, n_out, True),
          "g_in": unpack(pick["g_in"], spec.grad_t.width, n_in, True),
          "window": np.zeros_like(python["window"]), "coef": np.zeros_like(python["coef"])}
    for t in range(n):
        for i in range(n_in):
            cell = int(v["cell"][t, i])
            for j in range(k1):
                sv["window"][t, :, i, j] = rdata[t, i, (cell + j) % banks, :]
        for mm in range(m):
            sv["coef"][t, :, :, mm] = back[t, mm // banks, :, mm % banks, :].T
    return LayerRun({**v, "target": target}, python, sv)

