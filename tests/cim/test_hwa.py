"""Gradients through CIM layers: exact mode equals F.linear/F.conv2d, noisy reads are straight-through."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from codesign.cim import CIMConfig, CIMConv2d, CIMLinear, PCMConfig, chip_inputs, program_model
from codesign.cim.layers import chip_twin


def _grads(out: torch.Tensor, g: torch.Tensor, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad(out, tensors, g)


def test_exact_linear_and_its_gradients_are_f_linear_bit_for_bit():
    torch.manual_seed(0)
    layer = CIMLinear(300, 20, config=CIMConfig.ideal(exact=True)).program(1)
    x = torch.randn(7, 300, requires_grad=True)
    y = layer(x)
    ref = F.linear(x, layer.weight, layer.bias)
    assert torch.equal(y, ref)
    g = torch.randn_like(y)
    for a, b in zip(_grads(y, g, x, layer.weight, layer.bias), _grads(ref, g, x, layer.weight, layer.bias)):
        assert torch.equal(a, b)


def test_exact_conv_and_its_gradients_are_f_conv2d_bit_for_bit():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 5, 3, stride=2, padding=1)
    layer = CIMConv2d.from_conv(conv, CIMConfig.ideal(exact=True)).program(0)
    x = torch.randn(4, 3, 9, 9, requires_grad=True)
    y, ref = layer(x), conv(x)
    assert torch.equal(y, ref)
    g = torch.randn_like(y)
    for a, b in zip(_grads(y, g, x, layer.weight, layer.bias), _grads(ref, g, x, conv.weight, conv.bias)):
        assert torch.equal(a, b)


def test_exact_needs_an_ideal_chip():
    with pytest.raises(ValueError, match="exact=True"):
        CIMConfig(exact=True)


# a chip of the layer at t: every device programmed and aged, or every weight drawn (codesign.cim.sampler)
CHIPS = {
    "programmed": lambda layer, seed, t: layer.program(seed).drift_to(t),
    "drawn": lambda layer, seed, t: layer.sample(seed, t),
}


@pytest.mark.parametrize("chip", list(CHIPS))
def test_noisy_linear_gradient_is_the_gradient_at_the_sampled_weights(chip):
    torch.manual_seed(1)
    layer = CHIPS[chip](CIMLinear(300, 20, config=CIMConfig(read_noise="per_time")), 3, 86400.0)
    x = torch.randn(6, 300, requires_grad=True)
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref = F.linear(x, sampled, layer.bias)
    assert (y - ref).abs().max() < 0.05 * ref.abs().max()  # the converters' error only
    g = torch.randn_like(y)
    gx, gw, gb = _grads(y, g, x, layer.weight, layer.bias)
    rx, rw, rb = _grads(ref, g, x, sampled, layer.bias)
    assert torch.equal(gx, rx) and torch.equal(gw, rw) and torch.equal(gb, rb)
    assert not torch.allclose(gx, torch.autograd.grad(F.linear(x, layer.weight), x, g)[0], atol=1e-4)  # noise shows


@pytest.mark.parametrize("chip", list(CHIPS))
def test_noisy_conv_gradient_is_the_gradient_at_the_sampled_kernels(chip):
    torch.manual_seed(2)
    layer = CHIPS[chip](CIMConv2d(3, 6, 3, padding="same", config=CIMConfig()), 5, 3600.0)
    x = torch.randn(3, 3, 8, 8, requires_grad=True)
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref = F.conv2d(x, sampled, layer.bias, padding=1)
    assert (y - ref).abs().max() < 0.05 * ref.abs().max()  # the converters' error only
    g = torch.randn_like(y)
    gx, gw, gb = _grads(y, g, x, layer.weight, layer.bias)
    rx, rw, rb = _grads(ref, g, x, sampled, layer.bias)
    assert torch.equal(gx, rx) and torch.equal(gw, rw) and torch.allclose(gb, rb)


def test_every_chip_gets_the_gradient_of_its_own_weights_and_the_weight_their_sum():
    torch.manual_seed(3)
    layer = CIMLinear(40, 8, config=CIMConfig(device=PCMConfig())).program(7, n_chips=3)
    x = torch.randn(5, 40)
    rows = chip_inputs(x, 3).requires_grad_()
    y = layer(rows)
    sampled = layer.realized_weights(read_noise=True).detach().clone().requires_grad_()  # (3, 8, 40)
    ref = torch.cat([F.linear(rows[5 * k: 5 * k + 5], sampled[k], layer.bias) for k in range(3)])
    g = torch.randn_like(y)
    gx, gw = _grads(y, g, rows, layer.weight)
    rx, rw = _grads(ref, g, rows, sampled)
    assert torch.allclose(gx, rx, atol=1e-5) and torch.allclose(gw, rw.sum(0), atol=1e-5)


def test_reprogramming_resamples_and_the_twin_trains_the_float_network():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(12, 6), nn.ReLU(), nn.Linear(6, 3))
    twin = chip_twin(model, CIMConfig())
    assert twin[0].weight is model[0].weight and twin[2].bias is model[2].bias
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    grads = []
    for seed in (0, 1):
        program_model(twin, seed)
        model.zero_grad()
        F.cross_entropy(twin(x), y).backward()
        grads.append(model[0].weight.grad.clone())
    assert not torch.allclose(grads[0], grads[1])  # a new chip per mini-batch
    program_model(twin, 0)
    model.zero_grad()
    F.cross_entropy(twin(x), y).backward()
    assert torch.equal(model[0].weight.grad, grads[0])  # same seed, same chip, same gradient


def test_per_call_reads_take_the_gradient_at_the_noise_free_realization():
    torch.manual_seed(5)
    layer = CIMLinear(30, 6, config=CIMConfig(read_noise="per_call")).program(2).drift_to(60.0)
    x = torch.randn(4, 30, requires_grad=True)
    g = torch.randn(4, 6)
    gx, = _grads(layer(x), g, x)
    quiet = layer.realized_weights(read_noise=False).detach()[0]
    assert torch.equal(gx, g.mm(quiet))
