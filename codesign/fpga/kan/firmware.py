"""Firmware of the KAN online learner: spec + initial coefficients -> the generated C++ files.

The arithmetic is in the header-only library (``hls/codesign/kan_online.h``); this module only
fills the templates under ``hls/templates/kan_online/`` with the spec's types and constants,
one configuration struct and one block of calls per layer, the ROM contents and the initial
coefficients.
"""

from __future__ import annotations

import json

import numpy as np

from codesign import __version__
from codesign.fpga.intermediates import kan_layer_types
from codesign.fpga.templates import (
    PIPELINE_ONE_PER_CLOCK,
    array_initializer,
    bits_initializer,
    bits_word_type,
    join_blocks,
    render,
    render_tops,
)
from codesign.fpga.timing import Timing
from codesign.kan.fixed_learner import KANLearner, basis_roms
from codesign.kan.spec import KANSpec

__all__ = [
    "LEARNER", "TITLE", "STATE_WHAT", "FIRMWARE_ROWS",
    "render_firmware", "learner_state", "flat_state", "state_names", "bank_layout",
]

LEARNER = "kan_online"
TITLE = "KAN online learner"
STATE_WHAT = "spline coefficients"
FIRMWARE_ROWS = {
    "firmware/initial_coefficients.h": "the coefficient memories with their initial values (the learner's state)",
    "firmware/basis_roms.h": "basis and derivative ROMs",
}


def _t(name: str) -> str:
    return f"{LEARNER}/{name}"


def bank_layout(coef: np.ndarray, k1: int) -> np.ndarray:
    """Raw coefficients (out, in, G+k) -> the banked layout (out, in, k+1, rows): m at [m % k1][m // k1]."""
    n_out, n_in, n_coef = coef.shape
    depth = -(-n_coef // k1)
    banked = np.zeros((n_out, n_in, k1, depth), dtype=np.int64)
    for m in range(n_coef):
        banked[:, :, m % k1, m // k1] = coef[:, :, m]
    return banked


def learner_state(learner: KANLearner) -> list[np.ndarray]:
    """The learner's raw coefficients per layer, shape (out, in, G+k)."""
    return learner.coefficients_raw()


def flat_state(state: list[np.ndarray]) -> np.ndarray:
    """Per-layer coefficients flattened in the testbench's read-back order (layer, o, i, m)."""
    return np.concatenate([c.ravel() for c in state])


def state_names(spec: KANSpec) -> list[str]:
    """Names of the state values in the order the testbench reads them back."""
    return [
        f"coef_l{layer}[{o}][{i}][{m}]"
        for layer, (n_in, n_out) in enumerate(spec.layer_shapes)
        for o in range(n_out)
        for i in range(n_in)
        for m in range(spec.n_coef)
    ]


def _layer_config(spec: KANSpec, layer: int) -> str:
    n_in, n_out = spec.layer_shapes[layer]
    types = kan_layer_types(spec, layer)
    last = layer == len(spec.layer_shapes) - 1
    return render(
        _t("layer_config.h"), layer=layer, n_in=n_in, n_out=n_out, edges=n_in * n_out,
        n_params=n_in * n_out * spec.n_coef, g_t=types.g_t, g_name="err_t" if last else "grad_t",
        fwd_acc_t=types.fwd_acc_t, dacc_t=types.dacc_t, bwd_sum_t=types.bwd_sum_t, upd_t=types.upd_t,
    )


def _parameters(spec: KANSpec) -> str:
    g = spec.grid_constants()
    inv_bits = g.inv_h_raw.bit_length()
    return render(
        _t("parameters.h"), version=__version__, spec_line=json.dumps(spec.to_dict()),
        act_t=spec.act_t, coef_t=spec.coef_t, basis_t=spec.basis_t, dbasis_t=spec.dbasis_t,
        dphi_t=spec.dphi_t, err_t=spec.err_t, grad_t=spec.grad_t,
        cell_bits=max(1, (spec.grid_size - 1).bit_length()), lut_bits=spec.lut_bits,
        # ap_ufixed<B, B - F_inv> holds inv_h_raw * 2^-F_inv exactly, for either sign of F_inv.
        inv_h_t=f"ap_ufixed<{inv_bits},{inv_bits - g.inv_h_frac}>",
        inv_h_raw=g.inv_h_raw, inv_h_frac=g.inv_h_frac, inv_h_bits=inv_bits,
        n_in=spec.n_inputs, n_out=spec.n_outputs, n_layers=len(spec.layer_shapes),
        grid_size=spec.grid_size, spline_order=spec.spline_order,
        bank_depth=-(-spec.n_coef // (spec.spline_order + 1)), lr_shift=spec.lr_shift, lr_shift_max=spec.lr_shift_max,
        n_state=spec.num_parameters, lo_raw=g.lo_raw, u_shift=g.u_shift, u_max=g.u_max,
        layer_configs=join_blocks((_layer_config(spec, l) for l in range(len(spec.layer_shapes))), "\n\n"),
    )


def _basis_roms(spec: KANSpec) -> str:
    brom, drom = basis_roms(spec)
    return render(
        _t("basis_roms.h"), version=__version__,
        basis_word_t=bits_word_type(spec.basis_t.width), basis_rom=bits_initializer(brom, spec.basis_t.width),
        dbasis_word_t=bits_word_type(spec.dbasis_t.width), dbasis_rom=bits_initializer(drom, spec.dbasis_t.width),
    )


# Coefficient slots of a layer up to which the C simulation compiles the fixed-point literals as they are
_LITERAL_SLOTS = 4096


def _initial_coefficients(spec: KANSpec, coefficients: list[np.ndarray], seed: int) -> str:
    k1 = spec.spline_order + 1
    arrays = []
    for layer, ((n_in, n_out), coef) in enumerate(zip(spec.layer_shapes, coefficients)):
        banked = bank_layout(coef, k1)
        values = array_initializer(banked, spec.coef_t.frac)
        if banked.size > _LITERAL_SLOTS:  # a large G: the C simulation fills the array from bit patterns
            arrays.append(render(_t("coefficient_array_bits.h"), layer=layer, n_in=n_in, n_out=n_out, values=values,
                                 word_t=bits_word_type(spec.coef_t.width), bits=bits_initializer(banked, spec.coef_t.width)))
        else:
            arrays.append(render(_t("coefficient_array.h"), layer=layer, n_in=n_in, n_out=n_out, values=values))
    return render(_t("initial_coefficients.h"), version=__version__, seed=seed, arrays=join_blocks(arrays, "\n\n"))


def _top(spec: KANSpec, timing: Timing | None) -> str:
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    forward = [
        render(_t("top_forward_layer.cpp"), layer=l, next=l + 1, n_in=n_in, n_out=n_out)
        for l, (n_in, n_out) in enumerate(shapes)
    ]
    # Backward from the last layer down to layer 1, then layer 0's update alone (§7).
    backward = [
        render(_t("top_backward_layer.cpp"), layer=l, next=l + 1, n_in=shapes[l][0], n_out=shapes[l][1])
        for l in range(n_layers - 1, 0, -1)
    ]
    backward.append(render(_t("top_update_layer.cpp")))
    return render(
        _t("top.cpp"), version=__version__, n_layers=n_layers,
        tops=render_tops(LEARNER, _pipeline_pragmas(timing)),
        coefficient_pragmas=join_blocks(render(_t("coefficient_pragmas.cpp"), layer=l) for l in range(n_layers)),
        forward_layers=join_blocks(forward, "\n\n"), backward_layers=join_blocks(backward, "\n\n"),
        read_state=join_blocks(render(_t("read_state_layer.cpp"), layer=l) for l in range(n_layers)),
    )


def _pipeline_pragmas(timing: Timing | None) -> str:
    """The top's PIPELINE (and LATENCY, when it follows the RTL's schedule) pragmas."""
    if timing is None or not timing.schedule:
        return PIPELINE_ONE_PER_CLOCK
    return (f"  // The RTL's schedule (pipeline {timing.schedule}): a sample every {timing.ii_target} cycles, its update\n"
            f"  // written {timing.latency} cycles after it is accepted (README.md, Schedule).\n"
            f"#pragma HLS PIPELINE II={timing.ii_target}\n#pragma HLS LATENCY max={timing.latency}")


def render_firmware(spec: KANSpec, coefficients: list[np.ndarray], seed: int, timing: Timing | None = None) -> dict[str, str]:
    """The learner-specific firmware files (path in the project -> text) for initial raw coefficients and a schedule."""
    return {
        "firmware/parameters.h": _parameters(spec),
        "firmware/basis_roms.h": _basis_roms(spec),
        "firmware/initial_coefficients.h": _initial_coefficients(spec, coefficients, seed),
        f"firmware/{LEARNER}.cpp": _top(spec, timing),
    }
