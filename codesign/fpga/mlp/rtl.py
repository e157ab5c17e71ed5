"""The MLP core's RTL side: its SV parameters, its weight memory files and where its state lives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codesign.fpga.rtl_words import hex_words, pack_word, type_parameters
from codesign.kan.mlp_learner import MLPLearner
from codesign.kan.spec import MLPSpec

__all__ = ["mlp_core_parameters", "write_mlp_memories", "mlp_state_description"]


def mlp_core_parameters(spec: MLPSpec) -> dict[str, int | str]:
    """The MLP core's own parameters: its fixed-point types and activation."""
    params: dict[str, int | str] = {}
    params.update(type_parameters("ACT", spec.act_t))
    params.update(type_parameters("COEF", spec.coef_t))
    params.update(type_parameters("ERR", spec.err_t))
    params.update(type_parameters("GRAD", spec.grad_t))
    params["RELU"] = 1 if spec.activation == "relu" else 0
    return params


def write_mlp_memories(spec: MLPSpec, learner: MLPLearner, folder: Path) -> list[str]:
    """The MLP's weight rows as .mem files in ``folder``; returns their names."""
    files = []
    w = spec.coef_t.width
    for layer, (weights, biases) in enumerate(learner.params_raw()):
        rows = np.concatenate([weights, biases[:, None]], axis=1)  # (out, in + 1): a neuron per word
        name = f"weights_l{layer:03d}.mem"
        (folder / name).write_text(hex_words([pack_word(r, w) for r in rows], rows.shape[1] * w))
        files.append(name)
    return files


def mlp_state_description(spec: MLPSpec) -> dict[str, Any]:
    """Where the bench reads the MLP's weights back (hierarchical names below the top)."""
    return {
        "layout": "mlp_rows",
        "memory": "u_core.g_layer[{layer}].u_layer.rows",
        "element_width": spec.coef_t.width,
        "order": "word o is neuron o's row: weight i at bits [i*W +: W], then the bias",
    }
