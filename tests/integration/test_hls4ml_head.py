"""The online KAN head behind a frozen hls4ml network: hls4ml's compile() + predict() equals the reference.

One small model (a 3-8-2 torch MLP, the head a 2-3-1 KAN) is compiled by hls4ml (g++, about half a
minute) and traced once (hls4ml recompiles it), in the tests marked slow; the stream's predictions and the head's final
coefficients are compared integer for integer with the Python reference fed hls4ml's own network output.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from codesign.examples.hls4ml_head import main as example_main
from codesign.examples.hls4ml_head import stream
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec

hls4ml_head = pytest.importorskip("codesign.fpga.hls4ml_head")

SPEC = KANSpec(widths=(2, 3, 1), grid_size=4, spline_order=2, lut_bits=4)
SAMPLES = 1200


def frozen_network() -> torch.nn.Module:
    """A small MLP whose outputs spread past the grid [-1, 1) (so the stream also meets the clamp)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        net[2].weight.mul_(2.0)
    return net


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    # ap_fixed<20,6> in the network: its output has 14 fractional bits, so the feature conversion rounds
    model = hls4ml_head.attach_online_head(frozen_network(), SPEC, seed=1)
    hls_model = hls4ml_head.to_hls4ml(model, (3,), tmp_path_factory.mktemp("hls4ml_head") / "prj",
                                      backend="Vitis", default_precision="ap_fixed<20,6>")
    hls_model.compile()
    return hls_model


@pytest.fixture(scope="module")
def checked(compiled):
    x, y = stream(SAMPLES, SPEC.act_t)
    return x, y, hls4ml_head.check_stream(compiled, x, y)


@pytest.mark.slow
def test_hls4ml_csim_of_the_headed_model_equals_the_reference(checked):
    _, _, check = checked
    assert check.samples == SAMPLES
    assert check.state_values == SPEC.num_parameters
    assert (check.prediction_mismatches, check.state_mismatches, check.trace_mismatches) == (0, 0, 0)
    assert check.bit_exact
    assert check.features_outside_grid > 0  # the clamp was exercised


@pytest.mark.slow
def test_each_predict_continues_the_stream_and_the_head_learns(compiled, checked):
    # after check_stream the head holds the stream's final coefficients; two more predict() calls over
    # the same stream continue from there, as the reference does after one pass
    x, y, check = checked
    head = hls4ml_head.head_layer(compiled)
    learner = KANLearner(SPEC, [SPEC.coef_t.to_float(c) for c in head.get_attr("initial_raw")])
    first_pass = learner.run_raw(check.features_raw, check.targets_raw)
    half = SAMPLES // 2
    got = np.concatenate([hls4ml_head.predictions_raw(compiled, compiled.predict([x[:half], y[:half]])),
                          hls4ml_head.predictions_raw(compiled, compiled.predict([x[half:], y[half:]]))])
    second_pass = learner.run_raw(check.features_raw, check.targets_raw)
    assert np.array_equal(got, second_pass)
    assert np.array_equal(hls4ml_head.head_state(compiled), np.concatenate([c.ravel() for c in learner.coefficients_raw()]))
    # online learning: the second pass over the stream errs less than the first
    error = [np.abs(p - check.targets_raw).mean() for p in (first_pass, second_pass)]
    assert error[1] < error[0]


@pytest.mark.slow
def test_the_firmware_holds_the_learner_and_the_head_call(compiled):
    out = compiled.config.get_output_dir()
    with open(f"{out}/firmware/myproject.cpp") as f:
        top = f.read()
    assert "codesign::hls4ml_head::kan_online_head<" in top
    with open(f"{out}/firmware/parameters.h") as f:
        assert '#include "codesign_kan_head/kan_online_head.h"' in f.read()
    with open(f"{out}/firmware/codesign_kan_head/initial_coefficients.h") as f:
        assert "coef_l1" in f.read()


@pytest.mark.parametrize("kwargs, message", [
    ({"io_type": "io_stream"}, "supports io_type io_parallel, not 'io_stream'"),
    ({"backend": "Quartus"}, "supports the hls4ml backends Vivado, Vitis, not 'Quartus'"),
])
def test_unsupported_backends_and_io_types_are_refused(tmp_path, kwargs, message):
    model = hls4ml_head.attach_online_head(frozen_network(), SPEC)
    with pytest.raises(ValueError, match=message):
        hls4ml_head.to_hls4ml(model, (3,), tmp_path / "prj", **kwargs)


def test_a_head_narrower_than_the_network_output_is_refused(tmp_path):
    model = hls4ml_head.attach_online_head(frozen_network(), KANSpec(widths=(3, 2, 1), grid_size=4, spline_order=1))
    with pytest.raises(ValueError, match=r"expects features \(3,\) and target \(1,\), got \(2,\) and \(1,\)"):
        hls4ml_head.to_hls4ml(model, (3,), tmp_path / "prj")


def test_an_hls4ml_without_the_extension_api_is_one_line(monkeypatch):
    import hls4ml.model.layers

    monkeypatch.delattr(hls4ml.model.layers, "register_layer")
    with pytest.raises(ValueError) as exc:
        hls4ml_head.check_extension_api()
    text = str(exc.value)
    assert "\n" not in text and "hls4ml.model.layers.register_layer missing" in text and "hls4ml >= 1.0" in text


def test_the_example_refuses_bad_input_in_one_line_with_exit_2(tmp_path, capsys):
    assert example_main(["--backend", "Quartus", "--out", str(tmp_path / "prj")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "hls4ml_head: error: the online head supports the hls4ml backends Vivado, Vitis, not 'Quartus'"
    assert example_main(["--out", str(tmp_path)]) == 2  # an existing folder is never overwritten
    assert "exists: give a new folder with --out" in capsys.readouterr().err


def test_the_torch_module_is_the_reference_on_what_torch_feeds_it():
    x, y = stream(300, SPEC.act_t, seed=2)
    model = hls4ml_head.attach_online_head(frozen_network(), SPEC, seed=1)
    with torch.no_grad():
        got = model(torch.from_numpy(x).float(), torch.from_numpy(y)).numpy()
        feats = frozen_network()(torch.from_numpy(x).float()).double().numpy()
    expected = KANLearner(SPEC, seed=1).run_raw(SPEC.act_t.quantize(feats), SPEC.act_t.quantize(y))
    assert np.array_equal(SPEC.act_t.quantize(got), expected)


def test_the_example_exits_2_in_one_line_on_an_hls4ml_without_the_extension_api(monkeypatch, tmp_path, capsys):
    import sys

    import hls4ml.converters

    import codesign.fpga

    monkeypatch.delattr(hls4ml.converters, "register_pytorch_layer_handler")
    # imported again, so its check runs again
    monkeypatch.delitem(sys.modules, "codesign.fpga.hls4ml_head")
    monkeypatch.delattr(codesign.fpga, "hls4ml_head")
    assert example_main(["--out", str(tmp_path / "prj")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no extension API (hls4ml.converters.register_pytorch_layer_handler missing)" in err[0]
    assert not (tmp_path / "prj").exists()
