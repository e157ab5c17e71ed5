"""Gradients through CIM layers: exact mode equals F.linear/F.conv2d, noisy reads are straight-through with clipping."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from codesign.cim import (
    CIMConfig,
    CIMConv2d,
    CIMLinear,
    ConverterConfig,
    MismatchConfig,
    PCMConfig,
    chip_inputs,
    program_model,
)
from codesign.cim.layers import chip_twin


def _grads(out: torch.Tensor, g: torch.Tensor, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.autograd.grad(out, tensors, g, retain_graph=True)


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


@pytest.mark.parametrize("kernel,padding,stride", [(2, "same", 1), (3, 1, 2), (3, 0, 1)])
def test_conv_gradient_with_any_padding_is_the_convolutions_at_the_sampled_kernels(kernel, padding, stride):
    torch.manual_seed(4)
    layer = CIMConv2d(3, 4, kernel, stride=stride, padding=padding, config=CIMConfig())
    CHIPS["drawn"](layer, 5, 3600.0)
    x = torch.randn(2, 3, 7, 7, requires_grad=True)
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref = F.conv2d(F.pad(x, layer.pads), sampled, layer.bias, stride=stride)  # 'same' of kernel 2 pads one side
    g = torch.randn_like(y)
    gx, gw = _grads(y, g, x, layer.weight)
    rx, rw = _grads(ref, g, x, sampled)
    assert torch.allclose(gx, rx, atol=1e-6) and torch.allclose(gw, rw, atol=1e-5)


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


# saturation: a small additive mismatch (the reference takes each chip's realized weights, whatever they are)
SATURATING = CIMConfig(device=MismatchConfig(sigma=0.02, kind="additive"), drift_compensation="none")


def _clamped_reference(rows: torch.Tensor, sampled: torch.Tensor, layer) -> tuple[torch.Tensor, float]:  # noqa: ANN001
    """Σ over row tiles of torch.clamp(tile partial sum, ±bound), bound = ADC range × the vector's max |x| on the tile ×
    the tile's scale (its ADC full scale in weight units); and the smallest relative distance of a partial sum from
    its bound (the quantizers' rounding cannot move a sum across it when this is not tiny)."""
    crossbar = layer.crossbar
    tile_rows, adc_range, out = crossbar.grid.rows, crossbar.config.converter.adc_range, sampled.shape[0]
    y, margin = 0.0, float("inf")
    for t in range(crossbar.grid.n_row_tiles):
        cols = slice(t * tile_rows, min((t + 1) * tile_rows, rows.shape[1]))
        p = rows[:, cols] @ sampled[:, cols].t()
        bound = adc_range * rows[:, cols].detach().abs().amax(1, keepdim=True) * crossbar.out_scale[0, t, :out]
        y = y + torch.clamp(p, -bound, bound)
        margin = min(margin, float(((p.detach().abs() - bound) / bound).abs().min()))
    return y, margin


@pytest.mark.parametrize("chip", list(CHIPS))
def test_a_saturated_tile_partial_sum_passes_no_gradient_back(chip):
    torch.manual_seed(6)
    gen = torch.Generator().manual_seed(6)
    layer = CIMLinear(300, 12, config=SATURATING)  # row tiles of 256 and 44 inputs
    with torch.no_grad():
        layer.weight.copy_(0.05 * torch.randn(12, 300, generator=gen))
        layer.weight[:6, :256] = 0.5 + 0.5 * torch.rand(6, 256, generator=gen)  # outputs 0-5 saturate on tile 0 only
    CHIPS[chip](layer, 4, 60.0)
    x = (0.5 + 0.5 * torch.rand(5, 300, generator=gen)).requires_grad_()
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref, margin = _clamped_reference(x, sampled, layer)
    ref = ref + layer.bias
    assert margin > 0.05  # every partial sum clearly inside or beyond the ADC's range
    assert (y - ref).abs().max() < 0.02 * ref.abs().max()  # the converters' rounding only
    one_hot = torch.zeros_like(y)
    one_hot[:, 0] = 1.0  # output 0: tile 0 saturated, tile 1 not
    gx, = _grads(y, one_hot, x)
    assert torch.equal(gx[:, :256], torch.zeros(5, 256))
    assert torch.equal(gx[:, 256:], sampled[0, 256:].detach().expand(5, -1))  # the full gradient through tile 1
    one_hot = torch.zeros_like(y)
    one_hot[:, 6] = 1.0  # output 6 saturates nowhere
    gx, = _grads(y, one_hot, x)
    assert torch.equal(gx, sampled[6].detach().expand(5, -1))
    g = torch.randn(y.shape, generator=gen)
    gx, gw, gb = _grads(y, g, x, layer.weight, layer.bias)
    rx, rw, rb = _grads(ref, g, x, sampled, layer.bias)
    assert torch.allclose(gx, rx, rtol=1e-5, atol=1e-6) and torch.allclose(gw, rw, rtol=1e-5, atol=1e-6)
    assert torch.equal(gb, rb)


@pytest.mark.parametrize("chip", list(CHIPS))
def test_one_tile_saturation_gradient_is_autograd_of_the_clamp_bit_for_bit(chip):
    gen = torch.Generator().manual_seed(7)
    layer = CIMLinear(64, 10, config=SATURATING)
    with torch.no_grad():
        layer.weight.copy_(0.05 * torch.randn(10, 64, generator=gen))
        layer.weight[:3] = 0.6 + 0.4 * torch.rand(3, 64, generator=gen)
    CHIPS[chip](layer, 2, 1.0)
    x = torch.rand(8, 64, generator=gen)
    x[:4] = 0.5 + 0.5 * x[:4]  # rows 0-3 saturate outputs 0-2; rows 4-7, mostly small, do not
    x[4:] *= 0.1
    x[4:, 0] = 1.0
    x.requires_grad_()
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref, margin = _clamped_reference(x, sampled, layer)
    assert margin > 0.05
    g = torch.randn(y.shape, generator=gen)
    gx, gw = _grads(y, g, x, layer.weight)
    rx, rw = _grads(ref, g, x, sampled)
    assert torch.equal(gx, rx) and torch.equal(gw, rw)
    assert torch.equal(gx[:4], (g[:4, 3:] @ sampled[3:].detach()))  # outputs 0-2 saturated in rows 0-3


def _conv_reference(x: torch.Tensor, sampled: torch.Tensor, layer) -> tuple[torch.Tensor, float]:  # noqa: ANN001
    """The clamped reference of a CIM convolution (padding 1, stride 1): every window a row (F.unfold)."""
    n, _, h, w = x.shape
    rows = F.unfold(F.pad(x, (1, 1, 1, 1)), layer.kernel_size).transpose(1, 2).reshape(n * h * w, -1)
    y, margin = _clamped_reference(rows, sampled.view(sampled.shape[0], -1), layer)
    return y.view(n, h, w, -1).permute(0, 3, 1, 2) + layer.bias.view(-1, 1, 1), margin


@pytest.mark.parametrize(("c_in", "chip"), [(2, "programmed"), (2, "drawn"), (32, "drawn")])
def test_conv_saturation_gradient_is_autograd_of_the_clamp(c_in, chip):
    gen = torch.Generator().manual_seed(8)
    layer = CIMConv2d(c_in, 4, 3, padding=1, config=SATURATING)  # 32 channels: 288 rows, tiles of 256 and 32
    with torch.no_grad():
        layer.weight.copy_(0.05 * torch.randn(layer.weight.shape, generator=gen))
        flat = layer.weight.view(4, -1)
        flat[0, : min(256, flat.shape[1])] = 0.9 + 0.1 * torch.rand(min(256, flat.shape[1]), generator=gen)
    CHIPS[chip](layer, 3, 1.0)
    x = (0.9 + 0.1 * torch.rand(2, c_in, 6, 6, generator=gen)).requires_grad_()
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref, margin = _conv_reference(x, sampled, layer)
    assert margin > 0.05
    assert (y - ref).abs().max() < 0.02 * ref.abs().max()
    g = torch.randn(y.shape, generator=gen)
    gx, gw, gb = _grads(y, g, x, layer.weight, layer.bias)
    rx, rw, rb = _grads(ref, g, x, sampled, layer.bias)
    assert torch.allclose(gx, rx, rtol=1e-5, atol=1e-5) and torch.allclose(gw, rw, rtol=1e-5, atol=1e-5)
    assert torch.allclose(gb, rb)
    assert not torch.allclose(gx, torch.autograd.grad(F.conv2d(x, sampled.detach(), padding=1), x, g)[0], atol=1e-3)


def test_a_fixed_range_dac_clips_the_gradient_as_torch_clamp():
    gen = torch.Generator().manual_seed(9)
    config = CIMConfig(device=MismatchConfig(sigma=0.02, kind="additive"), drift_compensation="none",
                       converter=ConverterConfig(input_range=1.0, adc_range=64.0))
    layer = CIMLinear(16, 4, config=config).sample(1, 1.0)
    x = (1.5 * torch.randn(6, 16, generator=gen)).requires_grad_()  # about half beyond the range
    y = layer(x)
    sampled = layer.realized_weights(read_noise=True).detach()[0].clone().requires_grad_()
    ref = F.linear(torch.clamp(x, -1.0, 1.0), sampled, layer.bias)
    g = torch.randn(y.shape, generator=gen)
    gx, gw = _grads(y, g, x, layer.weight)
    rx, rw = _grads(ref, g, x, sampled)
    assert bool((x.abs() > 1).any()) and torch.equal(gx, rx) and torch.equal(gw, rw)
