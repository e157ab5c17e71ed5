"""Mapping, tiling, converters, IR drop and drift compensation of the crossbar."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from codesign.cim import CIMConfig, CIMConv2d, ConverterConfig, Crossbar, PCMConfig, TileConfig, convert_to_cim, program_model
from codesign.cim.converters import converter_levels, max_code

YEAR = 365.25 * 86400


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("tile", [(256, 256), (16, 8), (7, 5), (1, 1)])
def test_ideal_linear_is_the_exact_matmul_whatever_the_tiling(tile):
    lin = nn.Linear(50, 30).double()
    x = torch.randn(9, 50, dtype=torch.float64, generator=_gen(1))
    model = convert_to_cim(lin, CIMConfig.ideal(TileConfig(rows=tile[0], cols=tile[1])))
    program_model(model, seed=0)
    assert torch.allclose(model(x), lin(x), rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, padding=1, stride=1),
    dict(kernel_size=3, padding=2, stride=2, dilation=2),
    dict(kernel_size=(2, 3), padding=0, stride=(1, 2), bias=False),
    dict(kernel_size=4, padding="same"),
])
@pytest.mark.parametrize("tile", [(10, 4), (256, 256)])  # several row tiles (row layout) / one (column layout)
def test_ideal_conv2d_is_the_exact_convolution(kwargs, tile):
    conv = nn.Conv2d(3, 6, **kwargs).double()
    x = torch.randn(4, 3, 11, 9, dtype=torch.float64, generator=_gen(2))
    model = convert_to_cim(nn.Sequential(conv), CIMConfig.ideal(TileConfig(rows=tile[0], cols=tile[1])))
    program_model(model, seed=0)
    assert isinstance(model[0], CIMConv2d)
    assert torch.allclose(model(x), conv(x), rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=3, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), dilation=2),
    dict(kernel_size=4, padding="same"),
])
def test_conv_reads_windows_in_place_exactly_as_unfolded_rows(kwargs):
    # per-vector DAC scales come from a windowed max of the input, the codes from the windows read in place
    config = CIMConfig(device="mismatch", converter=ConverterConfig(dac_bits=5, adc_bits=6, adc_range=4.0),
                       tile=TileConfig(rows=64, cols=5))
    layer = CIMConv2d(3, 7, config=config, **kwargs).double().program(4, n_chips=2)
    x = torch.randn(6, 3, 9, 8, dtype=torch.float64, generator=_gen(9))
    x[1] = 0.0  # an all-zero image: every window reads exactly zero
    conv = nn.Conv2d(3, 7, **kwargs)
    h_out, w_out = conv(x.float()).shape[-2:]
    patches = torch.nn.functional.unfold(torch.nn.functional.pad(x, layer.pads), layer.kernel_size,
                                         dilation=layer.dilation, stride=layer.stride)
    rows = patches.transpose(1, 2).reshape(-1, patches.shape[1])
    by_rows = layer.crossbar(rows).view(6, h_out * w_out, 7).transpose(1, 2).reshape(6, 7, h_out, w_out)
    by_rows = by_rows + layer.bias.view(1, -1, 1, 1)
    y = layer(x)
    assert torch.allclose(y, by_rows, rtol=0, atol=1e-12)
    assert torch.equal(y[1], layer.bias.detach().view(-1, 1, 1).expand(7, h_out, w_out))


def test_dac_inputs_and_adc_outputs_take_only_their_levels():
    bits = 4
    config = CIMConfig(device="ideal", converter=ConverterConfig(dac_bits=bits, adc_bits=bits, adc_range=2.0),
                       tile=TileConfig(rows=64, cols=64))
    w = torch.randn(16, 32, dtype=torch.float64, generator=_gen(3))
    x = torch.randn(500, 32, dtype=torch.float64, generator=_gen(4))
    xb = Crossbar(32, 16, config).program(w, 0)
    y = xb(x)
    in_scale = x.abs().amax(dim=1, keepdim=True)
    tile_scale = w.abs().max()
    codes = y / (in_scale * tile_scale) / (2.0 / max_code(bits))
    assert torch.allclose(codes, codes.round(), atol=1e-9)  # outputs sit on ADC levels
    levels = set(codes.round().long().unique().tolist())
    assert levels <= set(range(-max_code(bits), max_code(bits) + 1))
    assert {-max_code(bits), max_code(bits)} <= levels  # partial sums beyond ±2.0 saturate at the end levels
    assert len(converter_levels(bits, 2.0)) == 2**bits - 1
    # the DAC: the same result as feeding inputs already rounded to the 4-bit levels
    xq = torch.round(x / in_scale * max_code(bits)) / max_code(bits) * in_scale
    assert torch.allclose(xb(xq), y, atol=1e-12)


def test_adc_noise_is_added_before_conversion():
    config = CIMConfig(device="ideal", converter=ConverterConfig(dac_bits=None, adc_bits=None, adc_noise=0.05),
                       tile=TileConfig(rows=8, cols=8))
    xb = Crossbar(8, 8, config).program(torch.eye(8, dtype=torch.float64), 0)
    x = torch.zeros(20_000, 8, dtype=torch.float64)
    x[:, 0] = 2.0  # full-scale input after per-vector scaling: output = 2·(1 + noise)
    y = xb(x)
    assert float((y[:, 0] / 2.0 - 1.0).std()) == pytest.approx(0.05, rel=0.03)


def test_ir_drop_attenuates_far_rows_of_loaded_columns_more():
    config = CIMConfig.ideal(TileConfig(rows=64, cols=8, ir_drop=0.2))
    w = torch.ones(8, 64, dtype=torch.float64)
    w[4:] = 0.25  # lighter columns
    realized = Crossbar(64, 8, config).program(w, 0).realized_weights()[0] / w
    first, last = realized[:, 0], realized[:, -1]
    assert bool((first < last).all())  # row 0 is farthest from the sense circuit
    assert float(1 - first[0]) == pytest.approx(0.2, rel=1e-9)  # fully loaded column, farthest row
    assert float(1 - first[4]) == pytest.approx(0.05, rel=1e-9)  # a quarter of the load
    m = 32  # row 32 of 64 sits 32 segments from the sense circuit
    d = (2 * m * 65 - m * (m + 1)) / (64 * 65)  # uniformly loaded wire: quadratic voltage profile
    assert float(1 - realized[0, 64 - m]) == pytest.approx(0.2 * d, rel=1e-9)
    assert bool((realized <= 1).all())
    no_drop = Crossbar(64, 8, CIMConfig.ideal(TileConfig(rows=64, cols=8))).program(w, 0).realized_weights()[0]
    assert torch.allclose(no_drop, w, atol=1e-12)


@pytest.mark.parametrize("device", ["pcm", "ideal"])
def test_global_drift_compensation_restores_the_mean_output(device):
    torch.manual_seed(0)
    w = torch.randn(128, 256, dtype=torch.float64) * 0.1
    x = torch.rand(2000, 256, dtype=torch.float64)
    reference = x @ w.t()
    base = CIMConfig(device=device, converter=ConverterConfig.ideal())
    drifted = Crossbar(256, 128, base.replace(drift_compensation=False)).program(w, 1, n_chips=4).drift_to(YEAR)
    compensated = Crossbar(256, 128, base).program(w, 1, n_chips=4).drift_to(YEAR)
    xs = x.repeat(4, 1)

    def gain(y: torch.Tensor) -> float:  # least-squares gain of the outputs against the exact ones
        r = reference.repeat(4, 1)
        return float((y * r).sum() / (r * r).sum())

    if device == "pcm":
        assert gain(drifted(xs)) < 0.8  # one year of drift: ν ≈ 0.05–0.1 over ln(1.6e6)
    assert gain(compensated(xs)) == pytest.approx(1.0, abs=0.03)


def test_same_seed_same_chip_and_chips_do_not_depend_on_batching():
    w = torch.randn(40, 70, generator=_gen(5))
    config = CIMConfig(device="pcm", tile=TileConfig(rows=32, cols=16))
    a = Crossbar(70, 40, config).program(w, 11, n_chips=3).drift_to(3600.0)
    b = Crossbar(70, 40, config).program(w, 11, n_chips=3).drift_to(3600.0)
    c = Crossbar(70, 40, config).program(w, 12, n_chips=3).drift_to(3600.0)
    assert torch.equal(a.conductances(), b.conductances())
    assert not torch.equal(a.conductances(), c.conductances())
    x = torch.randn(5, 70, generator=_gen(6)).repeat(3, 1)
    assert torch.equal(a(x), b(x))  # read noise too: the same stream
    single = Crossbar(70, 40, config).program(w, 11, n_chips=1, first_chip=2).drift_to(3600.0)
    assert torch.equal(single.conductances()[0], a.conductances()[2])


def test_a_read_after_other_batch_sizes_a_drift_or_a_reprogramming_is_a_fresh_read():
    # reads reuse a plan prepared per batch size and weight state: it must follow every change of either
    w = torch.randn(40, 300, generator=_gen(13))
    config = CIMConfig(device="pcm", tile=TileConfig(rows=128, cols=16))
    x, other = torch.randn(16, 300, generator=_gen(14)), torch.randn(7, 300, generator=_gen(15))
    bias = torch.randn(40, generator=_gen(16))
    used = Crossbar(300, 40, config).program(w, 3, n_chips=2)
    first = used(x, bias)
    used(other[:6])  # another batch size, without a bias
    assert torch.equal(used(x, bias), first)
    used.drift_to(YEAR)
    fresh = Crossbar(300, 40, config).program(w, 3, n_chips=2).drift_to(YEAR)
    assert torch.equal(used(x, bias), fresh(x, bias))
    assert not torch.equal(used(x, bias), first)
    used.program(w, 4, n_chips=2).drift_to(YEAR)
    assert torch.equal(used(x), Crossbar(300, 40, config).program(w, 4, n_chips=2).drift_to(YEAR)(x))
    assert torch.allclose(fresh(x, bias) - fresh(x), bias.expand(16, 40), atol=1e-6)  # the digital bias


def test_batched_chips_equal_chip_by_chip_forwards():
    w = torch.randn(24, 300, generator=_gen(7), dtype=torch.float64)
    config = CIMConfig(device="rram", converter=ConverterConfig(dac_bits=6, adc_bits=7, adc_range=20.0),
                       tile=TileConfig(rows=128, cols=16))
    x = torch.randn(10, 300, generator=_gen(8), dtype=torch.float64)
    many = Crossbar(300, 24, config).program(w, 2, n_chips=5)
    y = many(x.repeat(5, 1)).view(5, 10, 24)
    for k in range(5):
        one = Crossbar(300, 24, config).program(w, 2, n_chips=1, first_chip=k)
        assert torch.allclose(one(x), y[k], atol=1e-9)


@torch.no_grad()
def test_per_input_read_noise_is_the_same_in_column_and_row_layouts():
    config = CIMConfig(device="pcm", converter=ConverterConfig.ideal(), read_noise="per_input", drift_compensation=False)
    layer = CIMConv2d(2, 3, 1, config=config).double().program(0)
    x = torch.full((1, 2, 100, 100), 0.5, dtype=torch.float64)  # every position reads the same devices
    by_columns = layer(x).flatten(2)[0]  # (3 outputs, 10 000 reads)
    rows = torch.full((10_000, 2), 0.5, dtype=torch.float64)
    by_rows = (layer.crossbar(rows) + layer.bias).t()
    assert torch.allclose(by_columns.mean(1), by_rows.mean(1), atol=1e-3)
    ratio = by_columns.std(1) / by_rows.std(1)
    assert bool((ratio - 1).abs().max() < 0.05)  # std of a std over 1e4 draws: 0.7 %
    assert float(by_rows.std(1).min()) > 0


def test_read_noise_does_not_depend_on_the_number_of_threads():
    # 512x512 devices: the per-call draw is large enough to come from two streams, drawn concurrently with 2 threads
    w = torch.randn(512, 512, generator=_gen(10), dtype=torch.float64)
    config = CIMConfig(device="pcm", converter=ConverterConfig.ideal(), tile=TileConfig(rows=512, cols=512),
                       read_noise="per_call")
    x = torch.randn(3, 512, generator=_gen(11), dtype=torch.float64)
    before = torch.get_num_threads()
    outputs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            xb = Crossbar(512, 512, config).program(w, 5).drift_to(3600.0)
            outputs.append(torch.cat([xb(x), xb(x)]))
    finally:
        torch.set_num_threads(before)
    assert torch.allclose(outputs[0], outputs[1], rtol=0, atol=1e-12)
    quiet = Crossbar(512, 512, config.replace(device=PCMConfig(read_noise_scale=0.0))).program(w, 5).drift_to(3600.0)
    assert float((outputs[0][:3] - quiet(x)).std()) > 1e-3  # the reads were noisy


@pytest.mark.parametrize("config", [CIMConfig(), CIMConfig(read_noise="per_call"),
                                    CIMConfig(device=PCMConfig(clip_read_noise=False), read_noise="per_input")])
def test_reprogramming_reuses_arrays_without_leaking_the_previous_chips(config):
    w, x = torch.randn(10, 300, generator=_gen(0)), torch.randn(4, 300, generator=_gen(1))
    used = Crossbar(300, 10, config)
    used.program(w * 2, 5).drift_to(3600.0)
    kept = used.realized_weights(read_noise=True)
    kept_copy = kept.clone()
    with torch.no_grad():
        used(x)
    used.program(w, 7).drift_to(86400.0)  # same size: the previous chips' arrays are overwritten
    fresh = Crossbar(300, 10, config).program(w, 7).drift_to(86400.0)
    assert torch.equal(used.realized_weights(read_noise=True), fresh.realized_weights(read_noise=True))
    if config.read_noise == "per_time":
        with torch.no_grad():
            assert torch.equal(used(x), fresh(x))
    assert torch.equal(kept, kept_copy)  # what a caller holds of the old chips is its own
    used.program(w, 7, n_chips=3).drift_to(86400.0)  # another size: new arrays
    assert torch.equal(used.realized_weights()[0], fresh.realized_weights()[0])
