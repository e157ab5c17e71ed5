"""layer_forward (§3): the Python function, the HLS function and kan_layer.sv on the same windows and basis values.

RTL: phase F of kan_layer.sv (block `layer_forward`: adder_tree and fixed_cast inside it).
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.kan.kan_online import layer_forward
from tests.ops.conftest import SPECS
from tests.ops.vectors import NO_STATS, assert_equal, layer_vectors, reference_tables


@pytest.mark.parametrize("layer", [0, 1])
def test_layer_forward_python_equals_hls(spec_name, hls_ops, layer):
    spec = SPECS[spec_name]
    types, _, _, _ = reference_tables(spec)
    n_in, n_out = spec.layer_shapes[layer]
    v = layer_vectors(spec, layer, np.random.default_rng(20 + layer))
    py = np.zeros_like(v["g_out"])
    acts = np.zeros((2, max(n_in, n_out)), dtype=np.int64)  # row 0 the layer's input, row 1 its output
    for t in range(py.shape[0]):
        layer_forward(v["window"][t : t + 1], v["basis"][t : t + 1], acts, 0, n_in, n_out, types, NO_STATS, 0, t)
        py[t] = acts[1, :n_out]
    assert_equal("y", py, hls_ops.layer_forward(layer, v["window"], v["basis"]), "hls")


def test_layer_forward_python_equals_kan_layer_sv(kan_layer_sv):
    assert_equal("y", kan_layer_sv.python["y"], kan_layer_sv.sv["y"], "sv")
    assert np.any(kan_layer_sv.python["y"] != 0), "every output is zero: the vectors test nothing"
