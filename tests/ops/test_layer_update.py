"""layer_update (§6): the Python function, the HLS function (banked memory) and kan_layer.sv on the same inputs.

RTL: phase U of kan_layer.sv (block `layer_update`, written back through kan_bank); the SV test reads every bank back.
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.kan.kan_online import T_ERR, T_GRAD, layer_update, read_window
from tests.ops.conftest import SPECS
from tests.ops.vectors import NO_STATS, assert_equal, layer_vectors, reference_tables


@pytest.mark.parametrize("layer", [0, 1])
def test_layer_update_python_equals_hls(spec_name, hls_ops, layer):
    spec = SPECS[spec_name]
    types, _, _, _ = reference_tables(spec)
    n_in, n_out = spec.layer_shapes[layer]
    f_g = types[T_ERR, 1] if layer == len(spec.layer_shapes) - 1 else types[T_GRAD, 1]
    v = layer_vectors(spec, layer, np.random.default_rng(40 + layer))
    # the window is the one read from these coefficients, as in the learner
    window = np.zeros_like(v["window"])
    py = v["coef"].copy()
    grads = np.zeros((2, max(n_in, n_out)), dtype=np.int64)  # row 1: the gradient at the layer's outputs
    for t in range(py.shape[0]):
        flat, cell = py[t].reshape(-1), v["cell"][t : t + 1]
        grads[1, :n_out] = v["g_out"][t]
        read_window(flat, cell, window[t : t + 1], 0, 0, n_in, n_out, spec.n_coef)
        layer_update(flat, cell, window[t : t + 1], v["basis"][t : t + 1], grads, 0, 0, n_in, n_out, spec.n_coef, f_g,
                     spec.lr_shift, types, NO_STATS, 0, t)
    hls = hls_ops.layer_update(layer, v["coef"], v["cell"], window, v["basis"], v["g_out"])
    assert_equal("coef", py, hls, "hls")
    assert np.any(py != v["coef"]), "no coefficient changed: the vectors test nothing"


def test_layer_update_python_equals_kan_layer_sv(kan_layer_sv):
    # every coefficient read back after the commit: the window's written, the rest untouched
    py = kan_layer_sv.python["coef"]
    assert_equal("coef", py, kan_layer_sv.sv["coef"], "sv")
    assert np.any(py != kan_layer_sv.vectors["coef"]), "no coefficient changed: the vectors test nothing"
