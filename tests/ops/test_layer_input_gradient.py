"""layer_input_gradient (§5): the Python function, the HLS function and kan_layer.sv on the same windows, derivatives, gradients.

RTL: phase B of kan_layer.sv (block `layer_input_gradient`), with the derivative sums of phase F.
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.kan.kan_online import T_ERR, T_GRAD, layer_input_gradient
from tests.ops.conftest import SPECS
from tests.ops.vectors import NO_STATS, assert_equal, layer_vectors, reference_tables


@pytest.mark.parametrize("layer", [0, 1])
def test_layer_input_gradient_python_equals_hls(spec_name, hls_ops, layer):
    spec = SPECS[spec_name]
    types, grid, _, _ = reference_tables(spec)
    n_in, n_out = spec.layer_shapes[layer]
    f_g = types[T_ERR, 1] if layer == len(spec.layer_shapes) - 1 else types[T_GRAD, 1]
    v = layer_vectors(spec, layer, np.random.default_rng(30 + layer))
    py = np.zeros_like(v["clamped"])
    grads = np.zeros((2, max(n_in, n_out)), dtype=np.int64)  # row 0 at the layer's inputs, row 1 at its outputs
    for t in range(py.shape[0]):
        grads[1, :n_out] = v["g_out"][t]
        layer_input_gradient(v["window"][t : t + 1], v["dbasis"][t : t + 1], v["clamped"][t : t + 1], grads, 0, n_in, n_out,
                             f_g, types, grid, NO_STATS, 0, 0, t)
        py[t] = grads[0, :n_in]
    hls = hls_ops.layer_input_gradient(layer, v["window"], v["dbasis"], v["clamped"], v["g_out"])
    assert_equal("g_in", py, hls, "hls")
    assert np.any(py[v["clamped"] == 0] != 0), "every gradient is zero: the vectors test nothing"


def test_layer_input_gradient_python_equals_kan_layer_sv(kan_layer_sv):
    py = kan_layer_sv.python["g_in"]
    assert_equal("g_in", py, kan_layer_sv.sv["g_in"], "sv")
    assert np.any(py[kan_layer_sv.vectors["clamped"] == 0] != 0), "every gradient is zero: the vectors test nothing"
