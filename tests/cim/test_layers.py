"""CIM layers, model conversion, batched Monte-Carlo and perturbed weight samples."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from codesign.cim import (
    CIMConfig,
    CIMConv2d,
    CIMLinear,
    ConverterConfig,
    Crossbar,
    MismatchConfig,
    PCMConfig,
    chip_inputs,
    convert_to_cim,
    drift_model,
    evaluate_chips,
    program_model,
    sample_weights,
)


def _cnn() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))


def test_convert_replaces_every_linear_and_conv_and_keeps_the_rest():
    model = convert_to_cim(_cnn(), CIMConfig())
    kinds = [type(m).__name__ for m in model]
    assert kinds == ["CIMConv2d", "ReLU", "MaxPool2d", "Flatten", "CIMLinear"]
    assert [m.layer_id for m in model if hasattr(m, "layer_id")] == [0, 1]


def test_convert_leaves_the_original_model_alone():
    original = _cnn()
    convert_to_cim(original, CIMConfig())
    assert isinstance(original[0], nn.Conv2d)


def test_evaluate_chips_is_the_same_in_one_pass_or_in_chunks():
    model = convert_to_cim(_cnn(), CIMConfig(device="pcm"))
    x = torch.rand(6, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    all_at_once = evaluate_chips(model, x, seed=3, n_chips=5, t_seconds=86400.0)
    in_chunks = evaluate_chips(model, x, seed=3, n_chips=5, t_seconds=86400.0, chips_per_pass=2)
    assert all_at_once.shape == (5, 6, 10)
    # conductances are identical; only the per-pass read-noise streams differ, so compare without read noise
    quiet = CIMConfig(device=PCMConfig(read_noise_scale=0.0))
    q_model = convert_to_cim(_cnn(), quiet)
    a = evaluate_chips(q_model, x, seed=3, n_chips=5, t_seconds=86400.0)
    b = evaluate_chips(q_model, x, seed=3, n_chips=5, t_seconds=86400.0, chips_per_pass=2)
    assert torch.allclose(a, b, atol=1e-5)
    assert not torch.allclose(all_at_once[0], all_at_once[1])  # different chips differ
    assert torch.isfinite(in_chunks).all()


@torch.no_grad()
def test_chips_are_evaluated_in_one_batched_forward():
    model = convert_to_cim(nn.Sequential(nn.Linear(8, 3)), CIMConfig(device="mismatch"))
    program_model(model, seed=0, n_chips=4)
    x = torch.randn(5, 8)
    y = model(chip_inputs(x, 4)).view(4, 5, 3)
    for k in range(4):
        w = model[0].realized_weights()[k]
        exact = x @ w.t() + model[0].bias
        assert torch.allclose(y[k], exact, atol=0.05 * float(exact.abs().max()))  # 8-bit converters


def test_linear_accepts_extra_leading_dimensions():
    layer = CIMLinear(6, 4, config=CIMConfig.ideal()).double()
    layer.program(0)
    x = torch.randn(2, 3, 6, dtype=torch.float64)
    assert torch.allclose(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias), atol=1e-12)


def test_sample_weights_gives_k_chips_with_a_straight_through_gradient():
    w = torch.randn(30, 20, requires_grad=True)
    config = CIMConfig(device=MismatchConfig(sigma=0.3), converter=ConverterConfig.ideal())
    samples = sample_weights(w, config, k=16, seed=0)
    assert samples.shape == (16, 30, 20)
    rel = (samples.detach() / w.detach() - 1)
    assert float(rel.std()) == pytest.approx(0.3, rel=0.05)
    samples.sum().backward()
    assert torch.equal(w.grad, torch.full_like(w, 16.0))
    again = sample_weights(w, config, k=16, seed=0)
    assert torch.equal(again, samples)


def test_sample_weights_of_a_conv_kernel_under_pcm_drift():
    w = torch.randn(8, 3, 3, 3, generator=torch.Generator().manual_seed(0))
    config = CIMConfig(device="pcm")
    fresh = sample_weights(w, config, k=4, seed=1)
    aged = sample_weights(w, config, k=4, seed=1, t_seconds=365.25 * 86400)
    assert fresh.shape == aged.shape == (4, 8, 3, 3, 3)
    gain = float((aged * w).sum() / (w * w).sum() / 4)
    assert gain == pytest.approx(1.0, abs=0.05)  # global drift compensation keeps the scale


@pytest.mark.parametrize("call, message", [
    (lambda: convert_to_cim(nn.Sequential(nn.ReLU()), CIMConfig()), "no nn.Linear or nn.Conv2d"),
    (lambda: convert_to_cim(nn.Conv2d(4, 4, 3, groups=2), CIMConfig()), "groups=2"),
    (lambda: convert_to_cim(nn.Linear(3, 3), "pcm"), "expected a CIMConfig"),
    (lambda: CIMLinear(3, 2, config=CIMConfig())(torch.zeros(1, 3)), "not programmed"),
    (lambda: CIMLinear(3, 2, config=CIMConfig()).program(0, n_chips=2)(torch.zeros(3, 3)), "not a multiple of n_chips=2"),
    (lambda: CIMLinear(3, 2, config=CIMConfig()).program(0).drift_to(-1.0), "t_seconds=-1.0"),
    (lambda: CIMLinear(3, 2, config=CIMConfig()).program(0).drift_to(float("nan")), "finite"),
    (lambda: CIMLinear(3, 2, config=CIMConfig()).program(-5), "seed=-5"),
    (lambda: CIMLinear(3, 2, config=CIMConfig()).program(0, n_chips=0), "n_chips=0"),
    (lambda: drift_model(nn.Linear(2, 2), 1.0), "no CIM layer"),
    (lambda: CIMConv2d(2, 3, 3, config=CIMConfig()).program(0, n_chips=2)(torch.zeros(3, 2, 5, 5)),
     "not a multiple of n_chips=2"),
    (lambda: CIMConv2d(2, 3, 5, config=CIMConfig()).program(0)(torch.zeros(1, 2, 4, 4)), "smaller than the kernel"),
    (lambda: Crossbar(6, 2, CIMConfig()).program(torch.ones(2, 6), 0).forward_columns(torch.zeros(1, 5, 3)),
     "1 row axes holding 6 inputs"),
    (lambda: Crossbar(6, 2, CIMConfig()).program(torch.ones(2, 6), 0).forward_columns(torch.zeros(2, 6, 3)),
     "n_chips=1"),
    (lambda: Crossbar(6, 2, CIMConfig()).program(torch.ones(2, 6), 0)(torch.zeros(1, 6), torch.zeros(3)),
     r"bias of shape \(3,\)"),
])
def test_bad_use_gets_a_one_line_error(call, message):
    with pytest.raises(ValueError, match=message) as info:
        call()
    assert "\n" not in str(info.value)


def test_a_converted_model_runs_with_autograd_on():
    # inference only: the crossbar reads without a graph, so a plain call (no torch.no_grad) works
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    cim = program_model(convert_to_cim(model, CIMConfig(device="pcm")), seed=1)
    x = torch.randn(8, 20)
    y = cim(x)
    with torch.no_grad():
        assert torch.equal(y.detach(), cim(x))


def test_an_empty_batch_gives_an_empty_output_for_linear_and_conv():
    model = convert_to_cim(_cnn(), CIMConfig())
    program_model(model, seed=0)
    assert model(torch.zeros(0, 1, 8, 8)).shape == (0, 10)
    program_model(model, seed=0, n_chips=3)
    assert model(torch.zeros(0, 1, 8, 8)).shape == (0, 10)


def test_a_wrong_input_width_is_one_line_value_error():
    layer = CIMLinear(10, 5, config=CIMConfig()).program(0)
    for bad in (torch.zeros(4, 20), torch.zeros(4, 5), torch.zeros(2, 10, 3)):
        with pytest.raises(ValueError, match=r"expected \(\.\.\., 10\)"):
            layer(bad)


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_a_non_finite_weight_is_refused_at_programming(bad):
    layer = CIMLinear(8, 4, config=CIMConfig())
    with torch.no_grad():
        layer.weight[1, 2] = bad
    with pytest.raises(ValueError, match="non-finite") as err:
        layer.program(0)
    assert "\n" not in str(err.value)
