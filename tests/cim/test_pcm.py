"""PCM model: measured statistics against the published formulas (constants typed in here from
Joshi et al., Nat. Commun. 11, 2473 (2020) / Nandakumar et al., ICECS 2019, not read from the code)."""

from __future__ import annotations

import math

import pytest
import torch

from codesign.cim import CIMConfig, ConverterConfig, Crossbar, PCMConfig, TileConfig, chip_inputs
from codesign.cim.devices import DeviceState, PCMDevice

G_MAX = 25.0
T0 = 20.0
T_READ = 250e-9
YEAR = 365.25 * 86400


def sigma_prog(f: float) -> float:
    """Published programming-noise std (µS) at g_T = f·g_max."""
    return 0.26348 + 1.9650 * f - 1.1731 * f * f


def drift_mean_std(f: float) -> tuple[float, float]:
    lg = math.log(f)
    return min(max(-0.0155 * lg + 0.0244, 0.049), 0.1), min(max(-0.0125 * lg - 0.0059, 0.008), 0.045)


def programmed(f: float, n: int, seed: int) -> DeviceState:
    device = PCMDevice()
    gen = torch.Generator().manual_seed(seed)
    a = torch.full((n,), f, dtype=torch.float64)
    g = device.program(a, gen)
    params = {"nu": torch.empty_like(g)}
    device.draw_params(a, gen, params)
    return DeviceState(g, params)


@pytest.mark.parametrize("f", [0.1, 0.3, 0.6, 1.0])
def test_programming_noise_matches_the_polynomial(f):
    state = programmed(f, 200_000, seed=1)
    g = state.g[0]
    # sampling error of a std over 2e5 draws is ~0.16 %; 1.5 % leaves room and still catches a wrong coefficient
    assert float(g.std()) == pytest.approx(sigma_prog(f), rel=0.015)
    assert float(g.mean()) == pytest.approx(f * G_MAX, abs=4 * sigma_prog(f) / math.sqrt(200_000))


def test_partner_device_at_zero_target_is_a_clipped_gaussian():
    g0 = programmed(0.5, 200_000, seed=2).g[1]
    s0 = sigma_prog(0.0)
    assert float((g0 == 0).double().mean()) == pytest.approx(0.5, abs=0.005)
    assert float(g0.mean()) == pytest.approx(s0 / math.sqrt(2 * math.pi), rel=0.02)


@pytest.mark.parametrize("f", [0.1, 0.3, 1.0])
def test_fitted_drift_exponents_match_mu_and_sigma(f):
    device = PCMDevice()
    state = programmed(f, 100_000, seed=3)
    times = [60.0, 3600.0, 86400.0, 30 * 86400.0]
    logs = torch.stack([torch.log(device.conductance(state, t)[0] / state.g[0]) for t in times])
    x = torch.tensor([math.log((t + T0) / T0) for t in times], dtype=torch.float64)
    nu_hat = -(logs * x[:, None]).sum(0) / (x * x).sum()  # least squares through the origin, per device
    mu, sd = drift_mean_std(f)
    assert float(nu_hat.mean()) == pytest.approx(mu, rel=0.01)
    assert float(nu_hat.std()) == pytest.approx(sd, rel=0.02)


def test_low_conductance_drift_exponents_are_folded_at_zero():
    # at g_T = 0.01 g_max: μ_ν = 0.0958, σ_ν = 0.045 (clipped); ν = |μ + σε| keeps conductances from growing
    device = PCMDevice()
    state = programmed(0.01, 200_000, seed=8)
    programmed_on = state.g[0] > 0  # programming noise leaves some of these small devices at 0
    ratio = device.conductance(state, 86400.0)[0][programmed_on] / state.g[0][programmed_on]
    nu_hat = -torch.log(ratio) / math.log((86400.0 + T0) / T0)
    assert float(nu_hat.min()) >= 0.0
    mu, sd = drift_mean_std(0.01)
    folded_mean = sd * math.sqrt(2 / math.pi) * math.exp(-mu * mu / (2 * sd * sd)) + mu * math.erf(mu / (sd * math.sqrt(2)))
    assert float(nu_hat.mean()) == pytest.approx(folded_mean, rel=0.005)


def test_one_year_mean_conductance_ratio_at_g_max():
    device = PCMDevice()
    state = programmed(1.0, 1_000_000, seed=4)
    ratio = float((device.conductance(state, YEAR)[0] / state.g[0]).mean())
    mu, sd = drift_mean_std(1.0)
    log_t = math.log((YEAR + T0) / T0)
    model = math.exp(-mu * log_t + 0.5 * (sd * log_t) ** 2)  # E[exp(-nu L)] of a Gaussian nu
    assert model == pytest.approx(0.50, abs=0.01)
    assert ratio == pytest.approx(model, rel=0.02)


def _read_noise_layer(t: float, mode: str, seed: int = 5) -> tuple[Crossbar, torch.Tensor]:
    config = CIMConfig(device=PCMConfig(), converter=ConverterConfig.ideal(), tile=TileConfig(rows=8, cols=64),
                       drift_compensation=False, read_noise=mode)
    xb = Crossbar(8, 64, config)
    w = torch.ones(64, 8, dtype=torch.float64)
    w[32:] = 0.3  # outputs 0-31 read devices at g_max, 32-63 at 0.3 g_max (Q_s grows as g^-0.65)
    xb.program(w, seed)
    g_prog = xb.conductances()[0]  # (2, out, in) right after programming
    xb.drift_to(t)
    return xb, g_prog


def _reads(xb: Crossbar, row: int, mode: str) -> torch.Tensor:
    """Outputs of repeated reads with one word line on: each output reads one device pair."""
    x = torch.zeros(1, 8, dtype=torch.float64)
    x[:, row] = 1.0
    if mode == "per_input":
        return xb(x.expand(20_000, 8))  # independent noise for every input vector of one call
    return torch.cat([xb(x) for _ in range(1_500)])  # one draw per call


def expected_read_std(g_prog: torch.Tensor, g_t: torch.Tensor, t: float) -> torch.Tensor:
    """Published 1/f read noise of one read, per device pair, normalized by g_max."""
    q = (0.0088 / ((g_prog / G_MAX) ** 0.65).clamp(min=1e-3)).clamp(max=0.2)
    factor = math.sqrt(math.log((t + T0 + T_READ) / (2 * T_READ)))
    sigma = q * g_t * factor
    return torch.sqrt(sigma[0] ** 2 + sigma[1] ** 2) / G_MAX


@pytest.mark.parametrize("mode", ["per_input", "per_call"])
def test_read_noise_of_repeated_reads_grows_with_time_as_published(mode):
    measured_levels = []
    for t in (0.0, 3600.0, YEAR):
        xb, g_prog = _read_noise_layer(t, mode)
        g_t = xb.conductances()[0]
        row = 3
        y = _reads(xb, row, mode)  # (reads, out)
        measured = y.std(dim=0)
        predicted = expected_read_std(g_prog[:, :, row], g_t[:, :, row], t)
        ratio = measured / predicted
        tolerance = 4 / (2 * y.shape[0] * 32) ** 0.5  # 4 standard errors of a std over reads x outputs
        assert float(ratio[:32].mean()) == pytest.approx(1.0, abs=tolerance)
        assert float(ratio[32:].mean()) == pytest.approx(1.0, abs=tolerance)
        assert float((y.mean(dim=0) - (g_t[0, :, row] - g_t[1, :, row]) / G_MAX).abs().max()) < 5e-3
        measured_levels.append(float((measured[:32] / (g_t[0, :32, row] / G_MAX)).mean()))
    assert measured_levels[0] < measured_levels[1] < measured_levels[2]
    # relative read noise at g_max: Q_s = 0.0088 times the sqrt-log factor
    for t, level in zip((0.0, 3600.0, YEAR), measured_levels):
        assert level == pytest.approx(0.0088 * math.sqrt(math.log((t + T0 + T_READ) / (2 * T_READ))), rel=0.03)


def test_per_call_read_noise_is_shared_by_the_inputs_of_a_call():
    xb, _ = _read_noise_layer(0.0, "per_call")
    x = torch.zeros(5, 8, dtype=torch.float64)
    x[:, 2] = 1.0
    y = xb(x)
    assert torch.equal(y, y[:1].expand(5, -1))
    assert not torch.equal(xb(x[:1]), y[:1])  # the next call reads anew


def test_drift_exponents_do_not_depend_on_when_they_are_materialized():
    config = CIMConfig(device="pcm", converter=ConverterConfig.ideal())
    w = torch.randn(40, 30, generator=torch.Generator().manual_seed(0))
    a = Crossbar(30, 40, config).program(w, 7).drift_to(100.0).drift_to(YEAR)
    b = Crossbar(30, 40, config).program(w, 7).drift_to(YEAR)
    assert torch.equal(a.conductances(), b.conductances())


def test_read_noise_level_follows_later_drifts_of_a_chip_that_was_already_read():
    # the read-noise coefficients are computed once per chip (on the first noisy read) and reused at every drift_to
    xb, g_prog = _read_noise_layer(0.0, "per_call")
    _reads(xb, 3, "per_call")  # reads at t = 0
    xb.drift_to(YEAR)
    g_t = xb.conductances()[0]
    y = _reads(xb, 3, "per_call")
    ratio = y.std(dim=0) / expected_read_std(g_prog[:, :, 3], g_t[:, :, 3], YEAR)
    tolerance = 4 / (2 * y.shape[0] * 32) ** 0.5
    assert float(ratio[:32].mean()) == pytest.approx(1.0, abs=tolerance)
    assert float(ratio[32:].mean()) == pytest.approx(1.0, abs=tolerance)


def test_per_time_read_noise_is_one_draw_per_chip_and_time_at_the_published_level():
    # the default: every read at time t sees one realization; its spread over chips is the published 1/f level
    config = CIMConfig(device=PCMConfig(), converter=ConverterConfig.ideal(), tile=TileConfig(rows=8, cols=64),
                       drift_compensation=False)
    assert config.read_noise == "per_time"
    w = torch.ones(64, 8, dtype=torch.float64)
    w[32:] = 0.3
    x = torch.zeros(1, 8, dtype=torch.float64)
    x[:, 3] = 1.0
    chips = 600
    for t in (0.0, YEAR):
        xb = Crossbar(8, 64, config).program(w, 9, n_chips=chips).drift_to(t)
        y = xb(chip_inputs(x, chips))  # (chips, out): one read of device pair (o, 3) per chip
        assert torch.equal(xb(chip_inputs(x, chips)), y)  # a second read at the same time: the same noise
        g_t = xb.conductances()  # (chips, 2, out, in), stuck-free and noiseless at t
        clean = (g_t[:, 0, :, 3] - g_t[:, 1, :, 3]) / G_MAX
        g_prog = xb.drift_to(0.0).conductances() if t else g_t
        predicted = expected_read_std(g_prog[:, :, :, 3].transpose(0, 1), g_t[:, :, :, 3].transpose(0, 1), t)
        z = (y - clean) / predicted  # standard normal if the level is right
        tolerance = 4 / (2 * z.numel()) ** 0.5
        assert float(z.std()) == pytest.approx(1.0, abs=tolerance)
        assert abs(float(z.mean())) < 4 / z.numel() ** 0.5


def test_per_time_read_noise_is_a_function_of_chip_and_time_only():
    config = CIMConfig(device="pcm", converter=ConverterConfig.ideal())
    w = torch.randn(40, 300, generator=torch.Generator().manual_seed(1))
    x = torch.randn(4, 300, generator=torch.Generator().manual_seed(2))
    five = Crossbar(300, 40, config).program(w, 3, n_chips=5).drift_to(3600.0)
    at_hour = five(chip_inputs(x, 5)).view(5, 4, 40)
    alone = Crossbar(300, 40, config).program(w, 3, n_chips=1, first_chip=2).drift_to(3600.0)
    assert torch.equal(alone(x), at_hour[2])  # chip 2 reads the same whatever chips share its pass
    assert not torch.equal(at_hour[0], at_hour[1])
    five.drift_to(86400.0)
    at_day = five(chip_inputs(x, 5)).view(5, 4, 40)
    quiet = Crossbar(300, 40, config.replace(device=PCMConfig(read_noise_scale=0.0))).program(w, 3, n_chips=5)
    quiet.drift_to(86400.0)
    noise_day = at_day - quiet(chip_inputs(x, 5)).view(5, 4, 40)
    quiet.drift_to(3600.0)
    noise_hour = at_hour - quiet(chip_inputs(x, 5)).view(5, 4, 40)
    assert abs(float(torch.corrcoef(torch.stack([noise_day.flatten(), noise_hour.flatten()]))[0, 1])) < 0.1  # fresh
    assert torch.equal(five.drift_to(3600.0)(chip_inputs(x, 5)).view(5, 4, 40), at_hour)  # same t, same draw
    assert torch.equal(five.realized_weights(read_noise=True), five.realized_weights(read_noise=True))
