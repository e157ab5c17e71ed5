"""Options named as in aihwkit: read noise clipped at zero conductance, drift compensation probes."""

from __future__ import annotations

import math

import pytest
import torch

from codesign.cim import CIMConfig, ConverterConfig, Crossbar, PCMConfig
from codesign.cim.devices.pcm import pcm_read_q, pcm_read_time_factor

_DAY = 86400.0


def _clipped_moments(mu: torch.Tensor, sigma: torch.Tensor, clip: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance of max(mu + sigma·ε, 0) (or of mu + sigma·ε without the clip)."""
    if not clip:
        return mu, sigma**2
    a = mu / sigma.clamp_min(1e-30)
    cdf, pdf = 0.5 * (1 + torch.erf(a / math.sqrt(2))), torch.exp(-0.5 * a**2) / math.sqrt(2 * math.pi)
    mean = mu * cdf + sigma * pdf
    second = (mu**2 + sigma**2) * cdf + mu * sigma * pdf
    return mean, second - mean**2


def _read_increments(clip: bool):
    """Read-noise increments of 2·10^5 pairs at |w| = 0.01 after a day, and the predicted mean/variance."""
    g_max, t, n_in = 25.0, _DAY, 250
    w = torch.full((80, n_in), 0.01, dtype=torch.float64)
    w[:, 0] = 1.0  # the tile's largest |w|: the tile scale is 1
    w[1::2] *= -1
    config = CIMConfig(device=PCMConfig(clip_read_noise=clip), converter=ConverterConfig.ideal(), drift_compensation="none")
    xb = Crossbar(n_in, 80, config).program(w, seed=5, n_chips=10)
    g_prog = xb.conductances()  # (C, 2, out, in), at t = 0
    xb.drift_to(t)
    g_t = xb.conductances()
    observed = (xb.realized_weights(read_noise=True) - xb.realized_weights()) * g_max  # (C, out, in), µS
    sigma = g_t * pcm_read_q(g_prog, g_max) * pcm_read_time_factor(t, 20.0, 250e-9)
    means, variances = {}, {}
    for clipped in (True, False):
        m, v = _clipped_moments(g_t, sigma, clipped)
        means[clipped] = (m[:, 0] - g_t[:, 0]) - (m[:, 1] - g_t[:, 1])
        variances[clipped] = v[:, 0] + v[:, 1]
    keep = torch.ones(80, n_in, dtype=torch.bool)
    keep[:, 0] = False  # the full-scale column is not at 0.01
    return observed[:, keep], {c: means[c][:, keep] for c in means}, {c: variances[c][:, keep] for c in variances}


def _variance_z(observed: torch.Tensor, mean: torch.Tensor, variance: torch.Tensor) -> float:
    """(measured − predicted variance) in standard errors estimated from the sample itself."""
    excess = (observed - mean) ** 2 - variance
    return float(excess.mean() / (excess.std() / math.sqrt(excess.numel())))


def test_clipped_read_noise_matches_the_clipped_gaussian_and_not_the_unclipped_one():
    observed, mean, variance = _read_increments(clip=True)
    # n = 2·10^5 pairs: a tolerance of 4 standard errors (estimated from the sample) for mean and variance
    z_mean = float((observed - mean[True]).sum() / variance[True].sum().sqrt())
    assert abs(z_mean) < 4
    assert abs(_variance_z(observed, mean[True], variance[True])) < 4
    assert abs(_variance_z(observed, mean[False], variance[False])) > 8  # the clip is measurable here
    ratio = math.sqrt(float(variance[False].mean() / variance[True].mean()))
    assert ratio > 1.03  # unclipped noise is several % larger at g/g_max = 0.01


def test_unclipped_read_noise_is_still_available_and_gaussian():
    observed, mean, variance = _read_increments(clip=False)
    assert abs(_variance_z(observed, mean[False], variance[False])) < 4


def _drifted(mode):
    w = torch.randn(30, 70, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    config = CIMConfig(device="pcm", converter=ConverterConfig.ideal(), drift_compensation=mode)
    xb = Crossbar(70, 30, config).program(w, seed=1, n_chips=2)
    before = xb.realized_weights()
    return before, xb.drift_to(365.25 * _DAY).realized_weights()


def test_drift_compensation_modes_restore_what_their_probe_reads():
    before, after = _drifted("global")  # aihwkit's one-hot probes: mean |w| per chip
    assert torch.allclose(after.abs().sum((1, 2)), before.abs().sum((1, 2)), rtol=1e-9)
    before, after = _drifted("per_column")  # aihwkit's per-column: mean |w| of every output
    assert torch.allclose(after.abs().sum(2), before.abs().sum(2), rtol=1e-9)
    before, after = _drifted("global_ones")  # the all-ones probe: Σ_o |Σ_i w_oi|
    assert torch.allclose(after.sum(2).abs().sum(1), before.sum(2).abs().sum(1), rtol=1e-9)
    _, none = _drifted("none")
    assert float(none.abs().sum() / before.abs().sum()) < 0.8  # a year of drift uncompensated


def test_drift_compensation_names_and_booleans():
    assert CIMConfig().drift_compensation == "global"
    assert CIMConfig(drift_compensation=True).drift_compensation == "global"
    assert CIMConfig(drift_compensation=False).drift_compensation == "none"
    with pytest.raises(ValueError, match="per_column"):
        CIMConfig(drift_compensation="sometimes")


def test_percentile_calibration_sets_a_fixed_input_range_that_the_dac_clips_at():
    from torch import nn

    from codesign.cim import calibrate_input_ranges, convert_to_cim, program_model

    torch.manual_seed(0)
    model = convert_to_cim(nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4)), CIMConfig())
    program_model(model, seed=0)
    x = torch.randn(500, 20)
    ranges = calibrate_input_ranges(model, x, percentile=99.0)
    assert ranges[0] == pytest.approx(float(torch.quantile(x.abs().flatten(), 0.99)))
    assert model[0].crossbar.config.converter.input_range == ranges[0]
    # inputs beyond the range are clipped: scaling an input beyond it changes nothing
    probe = torch.zeros(1, 20)
    probe[0, 3] = 2 * ranges[0]
    with torch.no_grad():
        assert torch.equal(model[0](probe), model[0](probe * 3))
    with pytest.raises(ValueError, match="percentile"):
        calibrate_input_ranges(model, x, percentile=0)
