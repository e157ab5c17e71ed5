"""The MLP's operations (§8): dense_forward, activation_mask, dense_input_gradient, dense_update.

Each is the Python function of codesign.kan.mlp_online and the HLS function of the same name in
hls/codesign/mlp_online.h on the same integer vectors, for both layers of a ReLU and a hardtanh MLP;
and rtl/mlp_layer.sv, which does all four in one module (blocks labelled by these names), on a stream
of samples through a hidden layer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codesign.kan.mlp_learner import MLPLearner
from codesign.kan.mlp_online import T_ACT, T_ERR, T_GRAD, activation_mask, dense_forward, dense_input_gradient, dense_update
from tests.ops.conftest import MLP_SPECS
from tests.ops.rtl_vectors import pack, run_module, unpack
from tests.ops.vectors import NO_STATS, assert_equal, dense_vectors

LAYERS = [0, 1]  # hidden (the activation applies), last (linear)


def _setup(name: str, layer: int, seed: int):
    spec = MLP_SPECS[name]
    learner = MLPLearner(spec)
    n_in, n_out = spec.layer_shapes[layer]
    hidden = layer < len(spec.layer_shapes) - 1
    f_g = learner.types[T_GRAD if hidden else T_ERR, 1]
    return spec, learner, n_in, n_out, hidden, f_g, dense_vectors(spec, layer, np.random.default_rng(seed))


@pytest.mark.parametrize("layer", LAYERS)
def test_dense_forward_python_equals_hls(mlp_spec_name, mlp_hls_ops, layer):
    spec, learner, n_in, n_out, hidden, _, v = _setup(mlp_spec_name, layer, 70 + layer)
    n = v["w"].shape[0]
    z, y = np.zeros((n, n_out), np.int64), np.zeros((n, n_out), np.int64)
    pre, acts = np.zeros((2, max(n_in, n_out)), np.int64), np.zeros((2, max(n_in, n_out)), np.int64)
    for t in range(n):
        acts[0, :n_in] = v["x"][t]
        dense_forward(v["w"][t].ravel(), acts, pre, 0, 0, n_in, n_out, hidden, learner.activation, learner.types, NO_STATS, 0, t)
        z[t], y[t] = pre[1, :n_out], acts[1, :n_out]
    hz, hy = mlp_hls_ops.dense_forward(layer, v["w"], v["x"])
    assert_equal("z", z, hz, "hls")
    assert_equal("y", y, hy, "hls")
    assert hidden == np.any(y != z), "the activation changed nothing on a hidden layer, or something on the last"


@pytest.mark.parametrize("layer", LAYERS)
def test_activation_mask_python_equals_hls(mlp_spec_name, mlp_hls_ops, layer):
    _, learner, n_in, n_out, hidden, _, v = _setup(mlp_spec_name, layer, 80 + layer)
    py = v["g_out"].copy()
    pre, grads = np.zeros((2, n_out), np.int64), np.zeros((2, n_out), np.int64)
    for t in range(py.shape[0]):
        pre[1], grads[1] = v["z"][t], v["g_out"][t]
        activation_mask(pre, grads, 0, n_out, hidden, learner.activation, learner.types[T_ACT, 1])
        py[t] = grads[1]
    assert_equal("g", py, mlp_hls_ops.activation_mask(layer, v["z"], v["g_out"]), "hls")
    assert hidden == np.any(py != v["g_out"]), "the mask zeroed nothing on a hidden layer, or something on the last"


@pytest.mark.parametrize("layer", LAYERS)
def test_dense_input_gradient_python_equals_hls(mlp_spec_name, mlp_hls_ops, layer):
    _, learner, n_in, n_out, _, f_g, v = _setup(mlp_spec_name, layer, 90 + layer)
    py = np.zeros_like(v["x"])
    grads = np.zeros((2, max(n_in, n_out)), np.int64)
    for t in range(py.shape[0]):
        grads[1, :n_out] = v["g_out"][t]
        dense_input_gradient(v["w"][t].ravel(), grads, 0, 0, n_in, n_out, f_g, learner.types, NO_STATS, 0, t)
        py[t] = grads[0, :n_in]
    assert_equal("g_in", py, mlp_hls_ops.dense_input_gradient(layer, v["w"], v["g_out"]), "hls")
    assert np.any(py != 0), "every gradient is zero: the vectors test nothing"


@pytest.mark.parametrize("layer", LAYERS)
def test_dense_update_python_equals_hls(mlp_spec_name, mlp_hls_ops, layer):
    spec, learner, n_in, n_out, _, f_g, v = _setup(mlp_spec_name, layer, 100 + layer)
    py = v["w"].copy()
    acts, grads = np.zeros((2, max(n_in, n_out)), np.int64), np.zeros((2, max(n_in, n_out)), np.int64)
    for t in range(py.shape[0]):
        acts[0, :n_in], grads[1, :n_out] = v["x"][t], v["g_out"][t]
        flat = py[t].reshape(-1)
        dense_update(flat, acts, grads, 0, 0, n_in, n_out, f_g, spec.lr_shift, learner.types, NO_STATS, 0, t)
    assert_equal("w", py, mlp_hls_ops.dense_update(layer, v["w"], v["x"], v["g_out"]), "hls")
    assert np.any(py != v["w"]), "no weight changed: the vectors test nothing"


def _mlp_layer_params(spec, layer: int, init: Path) -> dict[str, object]:
    """mlp_layer's parameters for a layer of `spec` (g_out of grad_t when hidden, else err_t), registers off."""
    n_in, n_out = spec.layer_shapes[layer]
    hidden = layer < len(spec.layer_shapes) - 1
    g_t = spec.grad_t if hidden else spec.err_t
    params: dict[str, object] = dict(N_IN=n_in, N_OUT=n_out, LR_SHIFT=spec.lr_shift, HAS_ACT=int(hidden),
                                     RELU=int(spec.activation == "relu"),
                                     HAS_BACKWARD=1, W_G=g_t.width, F_G=g_t.frac, INIT_FILE=f'"{init}"')
    for prefix, t in (("ACT", spec.act_t), ("COEF", spec.coef_t), ("GR", spec.grad_t)):
        params.update({f"W_{prefix}": t.width, f"F_{prefix}": t.frac, f"Q_{prefix}": int(t.qmode), f"O_{prefix}": int(t.omode)})
    return params


def test_dense_ops_python_equal_mlp_layer_sv(mlp_spec_name, tmp_path_factory):
    # mlp_layer (hidden: the activation and its mask on) on a stream: each sample's outputs y and input
    # gradients g_in are read before the clock edge that writes its update, so every later sample reads
    # the weights that Python's dense_update wrote (the weights live in registers without a host port)
    spec = MLP_SPECS[mlp_spec_name]
    _, learner, n_in, n_out, hidden, f_g, v = _setup(mlp_spec_name, 0, 110)
    n = v["x"].shape[0]
    w0 = v["w"][n // 2 + 1]  # narrow weights: outputs spread over the activation's range
    build = tmp_path_factory.getbasetemp() / f"mlp_layer_{mlp_spec_name}"
    build.mkdir(parents=True, exist_ok=True)
    digits = ((n_in + 1) * spec.coef_t.width + 3) // 4
    (build / "rows.mem").write_text("".join(f"{word:0{digits}x}\n" for word in pack(w0, spec.coef_t.width)))
    out = run_module(["pipe_reg.sv", "fixed_cast.sv", "mlp_layer.sv"], "mlp_layer", _mlp_layer_params(spec, 0, build / "rows.mem"),
                     {"x": pack(v["x"], spec.act_t.width), "g_out": pack(v["g_out"], spec.grad_t.width), "commit": [1] * n,
                      "f_load": [1] * n, "b_load": [1] * n}, ["y", "g_in"], build, clock=True)
    wts = w0.reshape(-1).copy()
    y, g_in = np.zeros((n, n_out), np.int64), np.zeros((n, n_in), np.int64)
    pre, acts, grads = (np.zeros((2, max(n_in, n_out)), np.int64) for _ in range(3))
    for t in range(n):
        acts[0, :n_in], grads[1, :n_out] = v["x"][t], v["g_out"][t]
        dense_forward(wts, acts, pre, 0, 0, n_in, n_out, hidden, learner.activation, learner.types, NO_STATS, 0, t)
        activation_mask(pre, grads, 0, n_out, hidden, learner.activation, learner.types[T_ACT, 1])
        dense_input_gradient(wts, grads, 0, 0, n_in, n_out, f_g, learner.types, NO_STATS, 0, t)
        dense_update(wts, acts, grads, 0, 0, n_in, n_out, f_g, spec.lr_shift, learner.types, NO_STATS, 0, t)
        y[t], g_in[t] = acts[1, :n_out], grads[0, :n_in]
    assert_equal("y", y, unpack(out["y"], spec.act_t.width, n_out, True), "sv")
    assert_equal("g_in", g_in, unpack(out["g_in"], spec.grad_t.width, n_in, True), "sv")
    assert np.any(wts != w0.reshape(-1)) and np.any(g_in != 0), "nothing learned or passed back: the vectors test nothing"
