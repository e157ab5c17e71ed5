"""output_error (§4): codesign.kan.online_error.output_error, the HLS function of online_error.h and kan_layer.sv's fused error.

The HLS function is compiled with each KAN spec's and each MLP spec's types (the two tops share it);
the SV is the error that the last kan_layer forms in its forward cast (FUSE_ERROR, block
`output_error`), on the forward outputs of tests/ops/kan_layer_run.py.
"""

from __future__ import annotations

import numpy as np

from codesign.kan.learner_base import pack_type, type_row
from codesign.kan.online_error import output_error
from tests.ops.conftest import MLP_SPECS, SPECS
from tests.ops.vectors import NO_STATS, assert_equal, corners, random_raw


def _python(act_t, err_t, y_hat: np.ndarray, y: np.ndarray) -> np.ndarray:
    n, n_out = y_hat.shape
    e = np.zeros_like(y_hat)
    acts, grads = np.zeros((1, n_out), np.int64), np.zeros((1, n_out), np.int64)
    trow = type_row(pack_type(err_t)[None], 0)
    for t in range(n):
        acts[0] = y_hat[t]
        output_error(acts, y, grads, 0, n_out, act_t.frac, trow, NO_STATS, 0, t)
        e[t] = grads[0]
    return e


def _vectors(act_t, n_out: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of act_t corners (differences that saturate err_t), then random pairs."""
    c = corners(act_t)
    pairs = np.array([(a, b) for a in c for b in c], dtype=np.int64)
    y_hat = np.concatenate([np.repeat(pairs[:, :1], n_out, axis=1), random_raw(act_t, (300, n_out), rng)])
    y = np.concatenate([np.repeat(pairs[:, 1:], n_out, axis=1), random_raw(act_t, (300, n_out), rng)])
    return y_hat, y


def test_output_error_python_equals_hls_kan(spec_name, hls_ops):
    spec = SPECS[spec_name]
    y_hat, y = _vectors(spec.act_t, spec.n_outputs, np.random.default_rng(60))
    py = _python(spec.act_t, spec.err_t, y_hat, y)
    assert_equal("e", py, hls_ops.output_error(y_hat, y), "hls")
    assert np.any(py == (1 << (spec.err_t.width - 1)) - 1), "no error saturates: the vectors test nothing"


def test_output_error_python_equals_hls_mlp(mlp_spec_name, mlp_hls_ops):
    spec = MLP_SPECS[mlp_spec_name]
    y_hat, y = _vectors(spec.act_t, spec.n_outputs, np.random.default_rng(61))
    assert_equal("e", _python(spec.act_t, spec.err_t, y_hat, y), mlp_hls_ops.output_error(y_hat, y), "hls")


def test_output_error_python_equals_kan_layer_sv(kan_layer_sv):
    spec = SPECS["g6_k2"]
    py = kan_layer_sv.python["err"]
    assert_equal("err", py, kan_layer_sv.sv["err"], "sv")
    # the reference of the run is this function on the layer's outputs
    assert_equal("err", py, _python(spec.act_t, spec.err_t, kan_layer_sv.python["y"], kan_layer_sv.vectors["target"]), "python")
    assert np.any(np.abs(py) == (1 << (spec.err_t.width - 1)) - 1) or np.any(py == -(1 << (spec.err_t.width - 1))), \
        "no error saturates: the vectors test nothing"
