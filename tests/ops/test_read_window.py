"""read_window: the Python function, the HLS function (banked memory) and kan_layer.sv on the same coefficients and cells.

RTL: the bank reads of kan_layer.sv (block `read_window`, kan_bank per input and bank) at the decoded addresses.
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.kan.kan_online import read_window
from tests.ops.conftest import SPECS
from tests.ops.vectors import assert_equal, layer_vectors


@pytest.mark.parametrize("layer", [0, 1])
def test_read_window_python_equals_hls(spec_name, hls_ops, layer):
    spec = SPECS[spec_name]
    n_in, n_out = spec.layer_shapes[layer]
    v = layer_vectors(spec, layer, np.random.default_rng(10 + layer))
    py = np.zeros_like(v["window"])
    for t in range(py.shape[0]):
        read_window(v["coef"][t].ravel(), v["cell"][t : t + 1], py[t : t + 1], 0, 0, n_in, n_out, spec.n_coef)
    assert_equal("window", py, hls_ops.read_window(layer, v["coef"], v["cell"]), "hls")


def test_read_window_python_equals_kan_layer_sv(kan_layer_sv):
    # the bank reads at the addresses of each sample's cells, undone from bank order (tests/ops/kan_layer_run.py)
    assert_equal("window", kan_layer_sv.python["window"], kan_layer_sv.sv["window"], "sv")
