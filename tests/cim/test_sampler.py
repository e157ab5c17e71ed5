"""Chips drawn weight by weight (codesign.cim.sampler) against chips whose every device is programmed."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from codesign.cim import CIMConfig, CIMLinear, ConverterConfig, FaultConfig, RRAMConfig, TileConfig, sample_model
from codesign.cim.crossbar import Crossbar, tile_weights
from codesign.cim.layers import chip_twin
from codesign.cim.sampler import chip_sampler
from codesign.cim.tile_storage import tile_storage

YEAR = 365.25 * 86400.0
# magnitudes on and between the table's levels (k/63), each a block of columns; 1.0 sets every tile's scale to 1
MAGNITUDES = (0.0, 0.0015, 0.004, 0.06, 0.3, 0.5123, 0.77, 1.0)


def _realizations(config: CIMConfig, t: float, sampled: bool, chips: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """Realized weights times the sign of their targets, (magnitudes, samples), of a 64 × 256 layer whose columns
    hold the MAGNITUDES in blocks, with random signs."""
    per = 32
    gen = torch.Generator().manual_seed(11)
    target = torch.tensor(MAGNITUDES).repeat_interleave(per).expand(64, -1).contiguous()
    sign = torch.where(torch.rand(target.shape, generator=gen) < 0.5, -1.0, 1.0)
    weight = target * sign
    chip = Crossbar(weight.shape[1], 64, config)
    if sampled:
        chip.sample(weight, 5, chip_sampler(config, t), n_chips=chips)
    else:
        chip.program(weight, 5, n_chips=chips).drift_to(t)
    realized = chip.realized_weights(read_noise=True) * sign  # (chips, 64, 256)
    by_magnitude = realized.reshape(chips, 64, len(MAGNITUDES), per).permute(2, 0, 1, 3).reshape(len(MAGNITUDES), -1)
    return by_magnitude.double(), target


def _ks(a: torch.Tensor, b: torch.Tensor) -> float:
    """The two-sample Kolmogorov–Smirnov statistic."""
    values = torch.cat((a, b)).sort().values
    cdf_a = torch.searchsorted(a.sort().values, values, right=True) / a.numel()
    cdf_b = torch.searchsorted(b.sort().values, values, right=True) / b.numel()
    return float((cdf_a - cdf_b).abs().max())


CHIPS = {
    "pcm, 1 s": (CIMConfig(drift_compensation="none"), 1.0),
    "pcm, 1 year": (CIMConfig(drift_compensation="none"), YEAR),
    "pcm unclipped, per_call, 1 day": (
        CIMConfig(device="pcm", drift_compensation="none", read_noise="per_call").replace(
            device=CIMConfig().device.__class__(clip_read_noise=False)), 86400.0),
    "rram": (CIMConfig(device=RRAMConfig(), drift_compensation="none"), 0.0),
    "pcm with stuck devices": (CIMConfig(drift_compensation="none", faults=FaultConfig(stuck_on_rate=0.01,
                                                                                       stuck_off_rate=0.02)), 86400.0),
}


@pytest.mark.parametrize("name", list(CHIPS))
def test_drawn_weights_have_the_programmed_chips_distribution(name):
    """Per magnitude (on and between table levels): mean, std and the KS distance against 8,192 programmed
    devices' realizations; the bounds are the sampling error of these sample sizes (5 standard errors, and
    the KS critical value at α = 0.001) plus the table's stated approximation (1 % of the variance)."""
    config, t = CHIPS[name]
    exact, _ = _realizations(config, t, sampled=False)
    drawn, _ = _realizations(config, t, sampled=True)
    n = exact.shape[1]
    for i, magnitude in enumerate(MAGNITUDES):
        e, d = exact[i], drawn[i]
        se = math.sqrt(e.var() / n + d.var() / n)
        assert abs(float(e.mean() - d.mean())) <= 5 * se + 1e-4, f"{name}, |w| = {magnitude}: means differ"
        # the variance's standard error from the fourth moment (stuck devices make the tails heavy)
        se_var = math.sqrt(sum(float(((x - x.mean()) ** 4).mean() - x.var() ** 2) for x in (e, d)) / n)
        assert abs(float(d.var() - e.var())) <= 5 * se_var + 0.01 * float(e.var()), \
            f"{name}, |w| = {magnitude}: std ratio {float(d.std() / e.std()):.4f}"
        assert _ks(e, d) <= 1.95 * math.sqrt(2 / n), f"{name}, |w| = {magnitude}: distributions differ"


@pytest.mark.parametrize("mode", ["global", "per_column"])
def test_the_drift_compensation_factor_is_the_programmed_chips_mean(mode):
    """The sampler's compensation factor is the expectation of the programmed chips' probe ratio: within 0.2 % of
    16 chips' mean, beyond its sampling error (one chip's factor scatters by 0.03 % (global) to 1 % (per column))."""
    torch.manual_seed(0)
    layer = CIMLinear(784, 256, config=CIMConfig(drift_compensation=mode))
    factors = []
    for seed in range(16):
        layer.program(seed).drift_to(YEAR)
        factors.append(layer.crossbar.out_scale / layer.crossbar.tile_scale)
    chips = torch.stack(factors)
    exact, se = chips.mean(0), chips.std(0) / 4  # the 16 chips' mean and its standard error
    layer.sample(0, YEAR)
    drawn = layer.crossbar.out_scale / layer.crossbar.tile_scale
    assert bool(((drawn - exact).abs() <= 5 * se + 0.002 * exact).all())
    assert float(exact.mean()) > 1.5  # a year of drift: the factor is far from 1


def test_draws_are_a_function_of_the_seed_and_every_chip_differs():
    torch.manual_seed(3)
    layer = CIMLinear(600, 40, config=CIMConfig(tile=TileConfig(rows=256, cols=32, ir_drop=0.05)))
    first = layer.sample(7, YEAR, n_chips=3).realized_weights().clone()
    again = layer.sample(7, YEAR, n_chips=3).realized_weights()
    assert torch.equal(first, again)
    assert not torch.equal(first[0], first[1]) and not torch.equal(first[1], first[2])
    assert not torch.equal(layer.sample(8, YEAR, n_chips=3).realized_weights(), first)
    alone = layer.sample(7, YEAR, n_chips=1, first_chip=2).realized_weights()
    assert torch.equal(alone[0], first[2])  # chip k is the same whatever the number drawn with it


@pytest.mark.parametrize("shape, rows, cols", [((40, 600), 256, 32), ((10, 128), 256, 256), ((70, 512), 128, 64)])
def test_one_pass_tiling_equals_tile_weights_in_storage_order(shape, rows, cols):
    torch.manual_seed(5)
    weight = torch.randn(shape)
    weight[:, :rows] *= 1e-3  # tiles of very different scales
    if shape[0] > cols:
        weight[cols:, rows:] = 0.0  # an all-zero tile keeps scale 1
    chip = Crossbar(shape[1], shape[0], CIMConfig(tile=TileConfig(rows=rows, cols=cols)))
    gr = chip.grid
    normalized, scale = tile_weights(weight, gr)
    flat, fused_scale = tile_storage(weight, gr)
    assert torch.equal(fused_scale, scale)
    assert torch.equal(flat, chip._device_flat(normalized))  # bit for bit: both divide in IEEE float32
    weight[3, 5] = float("nan")  # its tile's scale is NaN, as tile_weights', which the crossbar then refuses
    fused_scale = tile_storage(weight, gr)[1]
    assert torch.equal(fused_scale.isnan(), tile_weights(weight, gr)[1].isnan()) and bool(fused_scale[0, 0].isnan())


def test_unused_columns_are_not_drawn_and_used_ones_do_not_depend_on_them():
    # 300 outputs on 256-column tiles: the second column tile uses 44 of its 256 columns; the other 212 of every
    # row tile are left at 0 and draw nothing
    torch.manual_seed(6)
    layer = CIMLinear(300, 300, config=CIMConfig(tile=TileConfig(rows=256, cols=256)))
    layer.sample(1, YEAR)
    chip = layer.crossbar
    gr = chip.grid
    assert gr.out_padded == 512
    for seg in chip.segments:
        block = chip.w_read[seg.offset: seg.offset + seg.size].view(seg.tiles, gr.out_padded, seg.rows)
        assert bool((block[:, 300:] == 0).all()) and bool((block[:, :300] != 0).any())
        assert bool((block[:, 256:300] != 0).any())  # the used columns of the second column tile are drawn
    # the draw of a used weight is the same as in a full draw of every column (uniforms by position)
    sampler = chip_sampler(chip.config, YEAR)
    values = torch.rand(2 * 16 * 8) * 2 - 1  # (tiles 2, out_padded 16, rows 8), 5 outputs used
    scale = torch.rand(2 * 16) + 0.5
    full, part = torch.zeros_like(values), torch.zeros_like(values)
    full_matrix, part_matrix = torch.empty(16, 2, 8), torch.empty(5, 2, 8)
    sampler.draw(values, (1, 2, 3), 7.0, full, scale, full_matrix)
    sampler.draw(values, (1, 2, 3), 7.0, part, scale, part_matrix, out_padded=16)
    used = full.view(2, 16, 8)[:, :5]
    assert torch.equal(part.view(2, 16, 8)[:, :5], used) and bool((part.view(2, 16, 8)[:, 5:] == 0).all())
    assert torch.equal(part_matrix, full_matrix[:5])


@pytest.mark.parametrize("converter", ["ideal", "8-bit"])
def test_a_drawn_chip_reads_its_used_columns_only_and_as_every_column_would(converter):
    torch.manual_seed(7)
    config = CIMConfig(converter=ConverterConfig.ideal()) if converter == "ideal" else CIMConfig()
    # 300 outputs on 256-column tiles (512 stored columns): a drawn chip reads the 300 used ones
    layer = CIMLinear(300, 300, config=config).sample(2, YEAR, n_chips=2)
    chip, x = layer.crossbar, torch.randn(6, 300)
    state = chip._read_state(x.device)
    assert chip.grid.out_padded == 512 and state.columns == 300
    narrow = chip.readout.read_rows(x, layer.bias.detach(), state)
    full = chip.readout.read_rows(x, layer.bias.detach(), state._replace(columns=None))
    # the same sums but for the GEMM's width: equal to float32 rounding, or one ADC code where that rounding moves it
    step = (chip.digital_scale.max() * 1.0001).item()
    assert narrow.shape == full.shape == (6, 300)
    assert float((narrow - full).abs().max()) <= (1e-5 if converter == "ideal" else step)
    assert float((narrow - full).abs().gt(1e-5).float().mean()) < 0.05


def test_a_model_of_drawn_chips_trains_its_float_network():
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(12, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    twin = chip_twin(model, CIMConfig())
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
    sample_model(twin, 0, 86400.0)
    F.cross_entropy(twin(x), y).backward()
    assert model[0].weight.grad is not None and bool(model[0].weight.grad.abs().sum() > 0)


def test_exact_chips_are_f_linear_when_drawn():
    layer = CIMLinear(30, 4, config=CIMConfig.ideal(exact=True)).sample(0, YEAR)
    x = torch.randn(2, 30)
    assert torch.equal(layer(x), F.linear(x, layer.weight, layer.bias))


def test_what_drawn_chips_cannot_do_is_a_one_line_error():
    layer = CIMLinear(30, 4, config=CIMConfig()).sample(0, 86400.0)
    for call in (lambda: layer.drift_to(YEAR), lambda: layer.crossbar.conductances()):
        with pytest.raises(ValueError, match="drawn weight by weight") as err:
            call()
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="per_input"):
        CIMLinear(30, 4, config=CIMConfig(read_noise="per_input")).sample(0, 1.0)
    with pytest.raises(ValueError, match="float32"):
        CIMLinear(30, 4, config=CIMConfig()).double().sample(0, 1.0)
    with pytest.raises(ValueError, match="t_seconds"):
        layer.sample(0, -1.0)
    layer.program(1).drift_to(YEAR)  # programming again gives a chip with devices
