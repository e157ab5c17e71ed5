"""RRAM, mismatch and stuck-at faults: measured statistics against their stated models."""

from __future__ import annotations

import math

import pytest
import torch

from codesign.cim import CIMConfig, ConverterConfig, Crossbar, FaultConfig, MismatchConfig, TileConfig
from codesign.cim.devices import RRAMDevice


@pytest.mark.parametrize("g_target", [0.0, 5.0, 15.0, 30.0, 40.0])
def test_rram_programming_error_matches_the_wan_2022_fit(g_target):
    device = RRAMDevice()
    a = torch.full((200_000,), g_target / 40.0, dtype=torch.float64)
    g = device.program(a, torch.Generator().manual_seed(0))[0]
    sigma = 1.536e-4 * g_target**3 - 1.167e-2 * g_target**2 + 0.2374 * g_target + 1.053  # µS
    if g_target == 0.0:  # clipped at 0: a half-normal
        assert float(g.mean()) == pytest.approx(sigma / math.sqrt(2 * math.pi), rel=0.02)
    else:
        assert float(g.std()) == pytest.approx(sigma, rel=0.015)
        assert float(g.mean()) == pytest.approx(g_target, abs=0.02)


def _realized(config: CIMConfig, w: torch.Tensor, chips: int = 8) -> torch.Tensor:
    xb = Crossbar(w.shape[1], w.shape[0], config)
    return xb.program(w, 3, n_chips=chips).realized_weights()


def _weights(seed: int = 0) -> torch.Tensor:
    w = torch.randn(200, 150, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return w.masked_fill(w.abs() < 0.05, 0.5)  # keep |w| away from 0 so ratios are defined


@pytest.mark.parametrize("sigma", [0.1, 0.4, 0.7])
def test_multiplicative_mismatch_level_is_the_measured_relative_spread(sigma):
    w = _weights()
    config = CIMConfig(device=MismatchConfig(sigma=sigma), converter=ConverterConfig.ideal(), drift_compensation=False)
    rel = _realized(config, w) / w - 1.0
    assert float(rel.mean()) == pytest.approx(0.0, abs=0.01)
    assert float(rel.std()) == pytest.approx(sigma, rel=0.02)


def test_additive_mismatch_is_in_units_of_the_tile_maximum():
    w = _weights(1)
    config = CIMConfig(device=MismatchConfig(sigma=0.05, kind="additive"), converter=ConverterConfig.ideal(),
                       tile=TileConfig(rows=50, cols=40), drift_compensation=False)
    xb = Crossbar(150, 200, config).program(w, 4, n_chips=8)
    scale = xb.tile_scale  # (row tiles, out): each tile's max |w|
    diff = (xb.realized_weights() - w).view(8, 200, 3, 50) / scale.t()[None, :, :, None]
    assert float(diff.std()) == pytest.approx(0.05, rel=0.02)
    assert float(diff.mean()) == pytest.approx(0.0, abs=0.002)


def test_lognormal_mismatch_keeps_the_mean_and_the_sign():
    w = _weights(2)
    config = CIMConfig(device=MismatchConfig(sigma=0.5, kind="lognormal"), converter=ConverterConfig.ideal(),
                       drift_compensation=False)
    ratio = _realized(config, w) / w
    assert bool((ratio > 0).all())
    assert float(ratio.mean()) == pytest.approx(1.0, abs=0.01)
    assert float(ratio.log().std()) == pytest.approx(0.5, rel=0.02)


def test_zero_mismatch_is_exact():
    w = _weights(3)
    config = CIMConfig(device=MismatchConfig(sigma=0.0), converter=ConverterConfig.ideal())
    assert torch.allclose(_realized(config, w, chips=2), w.expand(2, -1, -1), rtol=0, atol=1e-12)


@pytest.mark.parametrize("device", ["ideal", "pcm"])
def test_stuck_devices_occur_at_the_given_rates(device):
    rate_on, rate_off = 0.03, 0.08
    w = torch.rand(300, 200, generator=torch.Generator().manual_seed(5), dtype=torch.float64) * 0.9 + 0.05
    config = CIMConfig(device=device, faults=FaultConfig(rate_on, rate_off), converter=ConverterConfig.ideal(),
                       tile=TileConfig(rows=200, cols=300), drift_compensation=False)
    xb = Crossbar(200, 300, config).program(w, 6, n_chips=4)
    g = xb.conductances()  # weights > 0: G+ holds them, G- is at target 0
    g_max = xb.device_model.g_max_us
    on = (g == g_max).double().mean()
    n = g.numel()
    assert float(on) == pytest.approx(rate_on, abs=5 * math.sqrt(rate_on / n))
    off_holding = (g[:, 0] == 0).double().mean()  # a holding device (target > 0) reads 0 only when stuck OFF
    assert float(off_holding) == pytest.approx(rate_off, abs=5 * math.sqrt(rate_off / (n / 2)))


def test_faults_stay_put_while_the_chip_drifts():
    w = torch.rand(64, 64, generator=torch.Generator().manual_seed(7), dtype=torch.float64) + 0.1
    config = CIMConfig(device="pcm", faults=FaultConfig(0.05, 0.05), converter=ConverterConfig.ideal())
    xb = Crossbar(64, 64, config).program(w, 8)
    stuck_on = xb.conductances() == 25.0
    xb.drift_to(86400.0)
    assert bool((xb.conductances()[stuck_on] == 25.0).all())
