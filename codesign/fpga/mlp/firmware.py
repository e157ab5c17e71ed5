"""Firmware of the MLP online learner (the baseline): spec + initial weights -> the generated C++ files.

The arithmetic is in the header-only library (``hls/codesign/mlp_online.h``); this module only
fills the templates under ``hls/templates/mlp_online/``.
"""

from __future__ import annotations

import json

import numpy as np

from codesign import __version__
from codesign.fpga.intermediates import mlp_layer_types
from codesign.fpga.templates import PIPELINE_ONE_PER_CLOCK, array_initializer, join_blocks, render, render_tops
from codesign.kan.mlp_learner import MLPLearner
from codesign.kan.spec import MLPSpec

__all__ = ["LEARNER", "TITLE", "STATE_WHAT", "FIRMWARE_ROWS", "render_firmware", "learner_state", "flat_state", "state_names"]

LEARNER = "mlp_online"
TITLE = "MLP online learner (the baseline to the KAN)"
STATE_WHAT = "weights and biases"
FIRMWARE_ROWS = {
    "firmware/initial_weights.h": "the weight memories with their initial values (the learner's state)",
}


def _t(name: str) -> str:
    return f"{LEARNER}/{name}"


def learner_state(learner: MLPLearner) -> list[tuple[np.ndarray, np.ndarray]]:
    """The learner's raw (weights (out, in), biases (out,)) per layer."""
    return learner.params_raw()


def flat_state(state: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Per-layer weights and biases flattened in the testbench's read-back order (layer, neuron, w..., b)."""
    return np.concatenate([np.concatenate([w, b[:, None]], axis=1).ravel() for w, b in state])


def state_names(spec: MLPSpec) -> list[str]:
    """Names of the state values in the order the testbench reads them back."""
    names = []
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        for o in range(n_out):
            names += [f"w_l{layer}[{o}][{i}]" for i in range(n_in)] + [f"b_l{layer}[{o}]"]
    return names


def _kind(spec: MLPSpec, layer: int) -> str:
    return spec.activation if layer < len(spec.layer_shapes) - 1 else "linear"


def _layer_config(spec: MLPSpec, layer: int) -> str:
    n_in, n_out = spec.layer_shapes[layer]
    types = mlp_layer_types(spec, layer)
    last = layer == len(spec.layer_shapes) - 1
    return render(
        _t("layer_config.h"), layer=layer, n_in=n_in, n_out=n_out, n_params=(n_in + 1) * n_out,
        kind=_kind(spec, layer), hidden="false" if last else "true", g_t=types.g_t,
        g_name="err_t" if last else "grad_t", acc_t=types.acc_t, bwd_sum_t=types.bwd_sum_t, upd_t=types.upd_t,
    )


def _parameters(spec: MLPSpec) -> str:
    return render(
        _t("parameters.h"), version=__version__, spec_line=json.dumps(spec.to_dict()),
        act_t=spec.act_t, coef_t=spec.coef_t, err_t=spec.err_t, grad_t=spec.grad_t,
        one_t=f"ap_fixed<{max(spec.act_t.frac, 0) + 2},2>",
        n_in=spec.n_inputs, n_out=spec.n_outputs, n_layers=len(spec.layer_shapes), lr_shift=spec.lr_shift, lr_shift_max=spec.lr_shift_max,
        n_state=spec.num_parameters, activation=f"activation_{spec.activation}",
        layer_configs=join_blocks((_layer_config(spec, l) for l in range(len(spec.layer_shapes))), "\n\n"),
    )


def _initial_weights(spec: MLPSpec, params: list[tuple[np.ndarray, np.ndarray]], seed: int) -> str:
    arrays = [
        render(_t("weight_array.h"), layer=layer, n_in=n_in, n_out=n_out,
               values=array_initializer(np.concatenate([w, b[:, None]], axis=1), spec.coef_t.frac))
        for layer, ((n_in, n_out), (w, b)) in enumerate(zip(spec.layer_shapes, params))
    ]
    return render(_t("initial_weights.h"), version=__version__, seed=seed, arrays=join_blocks(arrays, "\n\n"))


def _top(spec: MLPSpec) -> str:
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    forward = [
        render(_t("top_forward_layer.cpp"), layer=l, next=l + 1, n_in=n_in, n_out=n_out, kind=_kind(spec, l))
        for l, (n_in, n_out) in enumerate(shapes)
    ]
    backward = [
        render(_t("top_backward_layer.cpp"), layer=l, next=l + 1, n_in=shapes[l][0], n_out=shapes[l][1])
        for l in range(n_layers - 1, 0, -1)
    ]
    backward.append(render(_t("top_update_layer.cpp"), n_out=shapes[0][1]))
    return render(
        _t("top.cpp"), version=__version__, n_layers=n_layers,
        weight_pragmas=join_blocks(render(_t("weight_pragmas.cpp"), layer=l) for l in range(n_layers)),
        tops=render_tops(LEARNER, PIPELINE_ONE_PER_CLOCK),
        forward_layers=join_blocks(forward, "\n\n"), backward_layers=join_blocks(backward, "\n\n"),
        read_state=join_blocks(render(_t("read_state_layer.cpp"), layer=l) for l in range(n_layers)),
    )


def render_firmware(spec: MLPSpec, params: list[tuple[np.ndarray, np.ndarray]], seed: int, timing: object = None) -> dict[str, str]:
    """The learner-specific firmware files (path in the project -> text) for initial raw weights (the MLP top states no schedule pragma)."""
    return {
        "firmware/parameters.h": _parameters(spec),
        "firmware/initial_weights.h": _initial_weights(spec, params, seed),
        f"firmware/{LEARNER}.cpp": _top(spec),
    }
