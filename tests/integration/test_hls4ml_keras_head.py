"""The online KAN head behind a frozen Keras 3 (QKeras-API) network: hls4ml's C-simulation against Keras and the reference.

A small backbone written with HGQ2's QKeras-compatible API (3 -> 8 -> 2, 8-12 bit) and a 2-3-1 head are
converted by hls4ml's Keras 3 frontend, compiled (g++, about a quarter of a minute) and traced once (hls4ml
recompiles), in the tests marked slow; on 1,200 samples the backbone's C-simulated output is compared with
the Keras model's own fixed-point output, and the head's predictions and final coefficients with the Python
reference fed those features, integer for integer. A backbone in HGQ2's own API is checked the same way, in a
process of its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec

if importlib.util.find_spec("hgq") is None or importlib.util.find_spec("keras") is None:
    pytest.skip("the keras extra is not installed (pip install 'codesign[keras]')", allow_module_level=True)

import codesign.fpga.hls4ml_keras_head as kh  # noqa: E402

kh.check_keras()  # keras runs on torch (the import above made it the default): the imports below rely on it
import keras  # noqa: E402
from qkeras import quantized_bits, quantized_relu  # noqa: E402
from qkeras.qlayers import QActivation, QDense  # noqa: E402

from codesign.fpga import hls4ml_head  # noqa: E402

SPEC = KANSpec(widths=(2, 3, 1), grid_size=4, spline_order=2, lut_bits=4)
SAMPLES = 1200


def qkeras_backbone(width: int = 2) -> keras.Model:
    """A seeded QKeras-API MLP whose outputs spread past the grid [-1, 1) (so the stream also meets the clamp)."""
    keras.utils.set_random_seed(0)
    inp = keras.Input((3,), name="x")
    h = QActivation(quantized_bits(7, 1))(inp)
    h = QDense(8, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(h)
    h = QActivation(quantized_relu(8, 2))(h)
    h = QDense(width, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(h)
    return keras.Model(inp, QActivation(quantized_bits(11, 2))(h), name="backbone")


def stream(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Inputs in [-2, 2)^3 and targets sin(x0) as act_t values."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(n, 3))
    return x, SPEC.act_t.to_float(SPEC.act_t.quantize(np.sin(x[:, :1])))


@pytest.fixture(scope="module")
def headed():
    return kh.attach_online_head(qkeras_backbone(), SPEC, seed=1)


@pytest.fixture(scope="module")
def compiled(headed, tmp_path_factory):
    hls_model = kh.to_hls4ml(headed, tmp_path_factory.mktemp("hls4ml_keras_head") / "prj", backend="Vitis")
    hls_model.compile()
    return hls_model


@pytest.fixture(scope="module")
def checked(headed, compiled):
    x, y = stream(SAMPLES)
    return x, y, *kh.check_headed_stream(compiled, headed, x, y)


@pytest.mark.slow
def test_the_backbones_csim_equals_its_keras_fixed_point_output(checked):
    _, _, _, backbone = checked
    assert (backbone.samples, backbone.values) == (SAMPLES, 2 * SAMPLES)
    assert backbone.network_t == "ap_fixed<12,3,AP_RND_CONV,AP_SAT>"  # quantized_bits(11, 2): 11 bits and a sign
    assert backbone.mismatches == 0 and backbone.bit_exact


@pytest.mark.slow
def test_the_heads_predictions_and_final_coefficients_equal_the_reference(checked):
    _, _, check, _ = checked
    assert check.samples == SAMPLES and check.state_values == SPEC.num_parameters
    assert (check.prediction_mismatches, check.state_mismatches, check.trace_mismatches) == (0, 0, 0)
    assert check.features_outside_grid > 0  # the clamp was exercised


@pytest.mark.slow
def test_the_reference_fed_the_keras_features_predicts_what_hls4ml_predicts(headed, compiled, checked):
    # the chain end to end: Keras's own fixed-point features -> act_t -> the reference, against hls4ml's predict()
    x, y, check, _ = checked
    feats = kh.backbone_of(headed).predict(x.astype(np.float32), verbose=0)
    keras_raw = check.network_t.quantize(np.asarray(feats, dtype=np.float64))
    learner = KANLearner(SPEC, [SPEC.coef_t.to_float(c) for c in hls4ml_head.head_layer(compiled).get_attr("initial_raw")])
    predicted = learner.run_raw(SPEC.act_t.cast(keras_raw, check.network_t), SPEC.act_t.quantize(y))
    assert np.array_equal(predicted, check.predicted_raw)
    assert np.array_equal(np.concatenate([c.ravel() for c in learner.coefficients_raw()]), hls4ml_head.head_state(compiled))
    # online learning: the error over the last 300 samples is below the first 300
    err = np.abs(predicted - SPEC.act_t.quantize(y))
    assert err[-300:].mean() < err[:300].mean()


@pytest.mark.slow
def test_the_firmware_is_the_torch_paths(compiled):
    out = compiled.config.get_output_dir()
    with open(f"{out}/firmware/myproject.cpp") as f:
        assert "codesign::hls4ml_head::kan_online_head<" in f.read()
    with open(f"{out}/firmware/codesign_kan_head/initial_coefficients.h") as f:
        assert "coef_l1" in f.read()
    target = compiled.graph[kh.TARGET_INPUT].get_output_variable().type.precision
    assert (target.width, target.integer) == (SPEC.act_t.width, SPEC.act_t.int_bits)


def test_the_keras_layer_is_the_reference_on_what_keras_feeds_it():
    x, y = stream(300, seed=2)
    model = kh.attach_online_head(qkeras_backbone(), SPEC, seed=1)
    got = model.predict([x.astype(np.float32), y.astype(np.float32)], batch_size=64, verbose=0)
    feats = kh.backbone_of(model).predict(x.astype(np.float32), verbose=0)
    expected = KANLearner(SPEC, seed=1).run_raw(SPEC.act_t.quantize(np.asarray(feats, np.float64)), SPEC.act_t.quantize(y))
    assert np.array_equal(SPEC.act_t.quantize(np.asarray(got, np.float64)), expected)


def test_the_head_layer_round_trips_through_its_config():
    head = kh.KANOnlineHead(SPEC, seed=3, train=False)
    again = kh.KANOnlineHead.from_config(head.get_config())
    assert again.spec == SPEC and not again.train_enabled
    assert all(np.array_equal(a, b) for a, b in zip(again.initial_raw, head.initial_raw))


def test_a_layer_hls4ml_cannot_convert_is_one_line_naming_it(tmp_path):
    inp = keras.Input((3,), name="x")
    h = QActivation(quantized_bits(7, 1))(inp)
    h = keras.layers.UnitNormalization(name="unit_norm")(h)
    h = QDense(2, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(h)
    model = kh.attach_online_head(keras.Model(inp, h), SPEC)
    with pytest.raises(ValueError) as exc:
        kh.to_hls4ml(model, tmp_path / "prj")
    text = str(exc.value)
    assert "\n" not in text and "cannot convert the layer unit_norm (keras.src.layers.normalization" in text
    assert not (tmp_path / "prj").exists()


def test_a_backbone_without_an_input_quantizer_is_one_line_saying_so(tmp_path):
    inp = keras.Input((3,), name="x")
    h = QDense(2, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(inp)
    model = kh.attach_online_head(keras.Model(inp, QActivation(quantized_bits(11, 2))(h), name="bare"), SPEC)
    with pytest.raises(ValueError) as exc:
        kh.to_hls4ml(model, tmp_path / "prj")
    text = str(exc.value)
    assert "\n" not in text and "an input of 'bare_kan_head' reaches a layer without an input quantizer" in text
    assert "QActivation(quantized_bits(...)) or input_quantizer=" in text


@pytest.mark.parametrize("change, message", [
    ({"width": 3}, r"the online head expects features \(2,\), the Keras model 'backbone' gives \(3,\)"),
])
def test_a_backbone_of_the_wrong_width_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        kh.attach_online_head(qkeras_backbone(**change), SPEC)


def test_unsupported_backends_and_io_types_are_refused(headed, tmp_path):
    with pytest.raises(ValueError, match="supports io_type io_parallel, not 'io_stream'"):
        kh.to_hls4ml(headed, tmp_path / "prj", io_type="io_stream")
    with pytest.raises(ValueError, match="supports the hls4ml backends Vivado, Vitis, not 'Quartus'"):
        kh.to_hls4ml(headed, tmp_path / "prj", backend="Quartus")


@pytest.mark.parametrize("backend", ["numpy", "tensorflow"])
def test_keras_on_another_backend_is_one_line_naming_the_setting_with_exit_2(backend, tmp_path):
    # numpy: keras runs (its numpy backend needs nothing more); tensorflow: keras cannot even start without TensorFlow
    env = {**os.environ, "KERAS_BACKEND": backend}
    out = subprocess.run([sys.executable, "-m", "codesign.examples.hls4ml_keras_head", "--out", str(tmp_path / "prj")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hls4ml_keras_head: error: ")
    assert f"KERAS_BACKEND={backend}" in lines[0] and "needs" in lines[0] and "KERAS_BACKEND=torch" in lines[0]
    assert not (tmp_path / "prj").exists()


def test_the_example_refuses_bad_input_in_one_line_with_exit_2(tmp_path, capsys):
    from codesign.examples.hls4ml_keras_head import main

    assert main(["--backend", "Quartus", "--out", str(tmp_path / "prj")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "hls4ml_keras_head: error: the online head supports the hls4ml backends Vivado, Vitis, not 'Quartus'"
    assert main(["--samples", "100", "--out", str(tmp_path / "prj")]) == 2
    assert "--samples must be at least 6000" in capsys.readouterr().err
    assert main(["--out", str(tmp_path)]) == 2  # an existing folder is never overwritten
    assert "exists: give a new folder with --out" in capsys.readouterr().err


def test_doctor_flags_a_keras_backend_other_than_torch(monkeypatch):
    from codesign.doctor import known_bad

    versions = {"keras": "3.15.1", "torch": "2.13.0+cpu", "verilator": None, "cocotb": None}
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    (bad,) = [c for c in known_bad(versions) if c.name == "keras"]
    assert "KERAS_BACKEND=tensorflow" in bad.detail and bad.fix == "export KERAS_BACKEND=torch (or unset it)"
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert not [c for c in known_bad(versions) if c.name == "keras"]
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    assert not [c for c in known_bad({**versions, "keras": None}) if c.name == "keras"]  # keras not installed: nothing to flag


# HGQ2's own API, in a process of its own: importing qkeras.qlayers (above) changes the defaults of HGQ2's layers
_NATIVE_HGQ2 = """
import json, sys
import numpy as np
from codesign.fpga import hls4ml_keras_head as kh
import keras
from hgq.config import LayerConfigScope, QuantizerConfigScope
from hgq.layers import QDense
from codesign.kan.spec import KANSpec

spec = KANSpec(widths=(2, 3, 1), grid_size=4, spline_order=2, lut_bits=4)
keras.utils.set_random_seed(0)
with QuantizerConfigScope(place="all", default_q_type="kbi", overflow_mode="SAT", b0=8, i0=2), LayerConfigScope(enable_ebops=False):
    inp = keras.Input((3,))
    backbone = keras.Model(inp, QDense(2, enable_oq=True)(QDense(8, activation="relu")(inp)))
model = kh.attach_online_head(backbone, spec, seed=1)
hls_model = kh.to_hls4ml(model, sys.argv[1])
hls_model.compile()
x = np.random.default_rng(0).uniform(-2.0, 2.0, (1200, 3))
y = spec.act_t.to_float(spec.act_t.quantize(np.sin(x[:, :1])))
check, bb = kh.check_headed_stream(hls_model, model, x, y)
print(json.dumps({"samples": check.samples, "head": [check.prediction_mismatches, check.state_mismatches, check.trace_mismatches],
                  "backbone": [bb.values, bb.mismatches, bb.network_t], "clamped": check.features_outside_grid}))
"""


@pytest.mark.slow
def test_a_backbone_in_hgq2s_own_api_is_bit_exact_too(tmp_path):
    out = subprocess.run([sys.executable, "-c", _NATIVE_HGQ2, str(tmp_path / "prj")], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600, env={**os.environ, "KERAS_BACKEND": "torch"})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["samples"] == 1200 and got["head"] == [0, 0, 0] and got["clamped"] > 0
    assert got["backbone"] == [2400, 0, "ap_fixed<9,3,AP_RND,AP_SAT>"]


@pytest.mark.slow
def test_the_example_of_the_docs_runs_as_written_and_is_bit_exact(tmp_path, monkeypatch, capsys):
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "integration.md"
    block = re.search(r"<!-- keras-head-example:begin -->\n```python\n(.*?)```\n<!-- keras-head-example:end -->", doc.read_text(), re.S)
    assert block, "docs/integration.md lost its keras-head-example block"
    monkeypatch.chdir(tmp_path)  # its project folder "prj" goes there
    scope: dict = {}
    exec(compile(block.group(1), str(doc), "exec"), scope)  # exactly the documented code
    assert scope["check"].samples == 2000 and scope["check"].bit_exact and scope["backbone_check"].bit_exact
    assert capsys.readouterr().out.strip().splitlines()[-1] == "0 0 0"
