"""Error feedback's grid options: the group scale search, the least-squares scale refit (in rounds), the weighted k-means codebook."""

import pytest
import torch

from codesign.compress import AsymIntConfig, ErrorFeedbackConfig, IntConfig, KMeansConfig, VQConfig, quantize
from codesign.compress.gptq import SCALE_SEARCH_FACTORS, refit_scales, search_scales, weighted_codebook, weighted_error
from codesign.compress.kmeans import lloyd_max
from codesign.compress.model import MethodSpec
from codesign.compress.registry import config_from_dict, config_to_dict

BASES = [AsymIntConfig(3, 32), IntConfig(3, 32), KMeansConfig(bits=3, group_size=32),
         KMeansConfig(bits=2, group_size=32, codebook="group")]


def _layer(n=32, k=128, seed=0):
    """A weight and a correlated input covariance with unequal channel energies."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen) * (1 + torch.rand(n, 1, generator=gen))
    mix = torch.eye(k) + 0.3 * torch.randn(k, k, generator=gen)
    x = (torch.randn(1024, k, generator=gen) * torch.linspace(0.2, 3.0, k)) @ mix
    return w, (x.T @ x / x.shape[0]).double()


def _output_error(w, q, cov):
    """[N] (w - ŵ) H (w - ŵ)^T of each row."""
    d = w.double() - q.dequantize().double()
    return ((d @ cov) * d).sum(dim=1)


@pytest.mark.parametrize("base", BASES)
def test_weighted_error_is_the_nearest_level_error_weighted_by_channel(base):
    w, cov = _layer()
    grid = quantize(w, base)
    importance = cov.diagonal()
    per_group = weighted_error(w, grid, importance)
    # brute force: every level of every group, the nearest by absolute difference
    n, k = w.shape
    size = grid.group_size
    book = grid.codebook.double()
    expect = torch.zeros(n, k // size, dtype=torch.float64)
    for g in range(k // size):
        values = book[:, g, :] if book.dim() == 3 else book[None, :].expand(n, -1)
        if grid.zeros is not None:
            values = values - grid.zeros[:, g, None].double()
        values = values * grid.scales[:, g, None].double()
        cols = w[:, g * size:(g + 1) * size].double()
        nearest = (cols[:, :, None] - values[:, None, :]).abs().min(dim=2).values
        expect[:, g] = (nearest ** 2 * importance[g * size:(g + 1) * size]).sum(dim=1)
    torch.testing.assert_close(per_group, expect, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("base", BASES)
def test_scale_search_is_never_worse_than_the_base_scales_on_any_group(base):
    w, cov = _layer(seed=1)
    grid = quantize(w, base)
    importance = cov.diagonal()
    searched = search_scales(w, grid, importance, SCALE_SEARCH_FACTORS)
    before, after = weighted_error(w, grid, importance), weighted_error(w, searched, importance)
    assert (after <= before).all()
    assert torch.equal(searched.codebook, grid.codebook)
    assert (grid.zeros is None) == (searched.zeros is None)
    if grid.zeros is not None:
        assert torch.equal(searched.zeros, grid.zeros)  # the zero point of a range shrunk about zero stays
    # each kept scale is the base scale times one of the factors (or the base scale itself)
    candidates = torch.stack([grid.scales] + [(grid.scales.float() * f).half() for f in SCALE_SEARCH_FACTORS])
    assert (candidates == searched.scales[None]).any(dim=0).all()


def test_scale_search_clips_min_max_integer_groups():
    """Min-max RTN wastes levels on the tails of Gaussian groups: shrinking the range lowers the error."""
    w, cov = _layer(seed=2)
    grid = quantize(w, AsymIntConfig(3, 32))
    importance = cov.diagonal()
    searched = search_scales(w, grid, importance, SCALE_SEARCH_FACTORS)
    assert weighted_error(w, searched, importance).sum() < 0.95 * weighted_error(w, grid, importance).sum()
    assert (searched.scales < grid.scales).float().mean() > 0.5


@pytest.mark.parametrize("base", BASES)
def test_refit_keeps_the_codes_and_lowers_every_rows_output_error(base):
    w, cov = _layer(seed=3)
    plain = quantize(w, ErrorFeedbackConfig(base=base, act_order=True), cov)
    refit = quantize(w, ErrorFeedbackConfig(base=base, act_order=True, refit_scales=True), cov)
    assert torch.equal(plain.packed, refit.packed)
    assert torch.equal(plain.codebook, refit.codebook)
    damped = cov.clone()
    damped.diagonal().add_(0.01 * cov.diagonal().mean())
    before, after = _output_error(w, plain, damped), _output_error(w, refit, damped)
    assert (after <= before).all()
    assert after.sum() < 0.99 * before.sum()


@pytest.mark.parametrize("base", [AsymIntConfig(3, 32), KMeansConfig(bits=3, group_size=32)])
def test_more_refit_rounds_never_raise_a_rows_error_and_lower_the_total(base):
    w, cov = _layer(seed=5)
    damped = cov.clone()
    damped.diagonal().add_(0.01 * cov.diagonal().mean())
    errors = [_output_error(w, quantize(w, ErrorFeedbackConfig(base=base, act_order=True, refit_scales=True,
                                                               refit_rounds=r), cov), damped) for r in (1, 2, 3)]
    for fewer, more in zip(errors, errors[1:]):
        assert (more <= fewer).all()
    assert errors[2].sum() < 0.99 * errors[0].sum()


def test_refit_solves_each_rows_least_squares_problem():
    """A row's refitted scales are the minimizer of (w - s·u) H (w - s·u)^T, up to fp16 rounding."""
    w, cov = _layer(n=4, seed=4)
    grid = quantize(w, AsymIntConfig(3, 32))
    codes = grid.codes()
    scales = refit_scales(w, codes, grid, cov)
    root = torch.linalg.cholesky(cov)  # H = L L^T, so the error is || (w - ŵ) L ||^2
    size = grid.group_size
    for row in range(w.shape[0]):
        units = (codes[row].double() - grid.zeros[row].double().repeat_interleave(size))
        design = torch.zeros(w.shape[1] // size, w.shape[1], dtype=torch.float64)
        for g in range(design.shape[0]):
            design[g, g * size:(g + 1) * size] = units[g * size:(g + 1) * size]
        best = torch.linalg.lstsq((design @ root).T, (w[row].double() @ root)[:, None]).solution[:, 0]
        torch.testing.assert_close(scales[row].double(), best.half().double(), rtol=2e-3, atol=1e-4)


def test_weighted_lloyd_is_plain_lloyd_with_repeated_values():
    """Integer weights act as repeated samples; uniform weights change nothing."""
    gen = torch.Generator().manual_seed(6)
    values = torch.randn(3, 40, generator=gen)
    counts = torch.randint(1, 4, (3, 40), generator=gen)
    init = torch.linspace(-1.5, 1.5, 4)[None]
    repeated = torch.stack([torch.repeat_interleave(values[r], counts[r]) for r in range(1)])
    torch.testing.assert_close(lloyd_max(values[:1], 4, 50, init=init, weights=counts[:1].float()),
                               lloyd_max(repeated, 4, 50, init=init))
    torch.testing.assert_close(lloyd_max(values, 4, 50, init=init, weights=torch.full((3, 40), 2.5)),
                               lloyd_max(values, 4, 50, init=init))


@pytest.mark.parametrize("codebook", ["layer", "group"])
def test_weighted_codebook_lowers_the_importance_weighted_error(codebook):
    """Uniform weights on the high-energy (odd) inputs, Gaussian ones on the rest: the levels should follow the former."""
    w, _ = _layer(seed=7)
    w[:, 1::2] = torch.rand(w.shape[0], w.shape[1] // 2, generator=torch.Generator().manual_seed(8)) * 2 - 1
    cov = torch.diag(torch.tensor([0.01, 10.0]).repeat(w.shape[1] // 2)).double()
    grid = quantize(w, KMeansConfig(bits=3, group_size=32, codebook=codebook))
    importance = cov.diagonal()
    refit = weighted_codebook(w, grid, importance)
    assert refit.codebook.shape == grid.codebook.shape and torch.equal(refit.scales, grid.scales)
    assert (refit.codebook.float().diff(dim=-1) >= 0).all()
    before, after = weighted_error(w, grid, importance).sum(), weighted_error(w, refit, importance).sum()
    assert after < 0.99 * before
    quantized = quantize(w, ErrorFeedbackConfig(base=KMeansConfig(bits=3, group_size=32, codebook=codebook),
                                                weighted_codebook=True), cov)
    assert torch.equal(quantized.codebook, refit.codebook)


def test_options_are_validated_built_and_round_trip():
    config = ErrorFeedbackConfig(base=AsymIntConfig(3), scale_search=[0.9, 0.8], refit_scales=True)
    assert config.scale_search == (0.9, 0.8)
    assert config_from_dict(config_to_dict(config)) == config
    with pytest.raises(ValueError, match="scale_search factors must be positive"):
        ErrorFeedbackConfig(scale_search=(1.0, -0.5))
    with pytest.raises(ValueError, match="refit_rounds must be a positive integer"):
        ErrorFeedbackConfig(refit_scales=True, refit_rounds=0)
    w, cov = _layer(k=64)
    with pytest.raises(ValueError, match="apply to scalar grids, not VQ"):
        quantize(w, ErrorFeedbackConfig(base=VQConfig(), refit_scales=True), cov)
    with pytest.raises(ValueError, match="weighted_codebook applies to k-means grids, not AsymIntConfig"):
        quantize(w, ErrorFeedbackConfig(base=AsymIntConfig(3), weighted_codebook=True), cov)
    with pytest.raises(ValueError, match="--weighted-codebook is an option of --error-feedback on the k-means grid"):
        MethodSpec("int", 3, error_feedback=True, weighted_codebook=True)
    assert MethodSpec("srr", 3, error_feedback=True, weighted_codebook=True).layer_config().base.weighted_codebook
    spec = MethodSpec("kmeans", 3, error_feedback=True, act_order=True, scale_search=True, refit_scales=True)
    assert spec.layer_config() == ErrorFeedbackConfig(base=KMeansConfig(bits=3), act_order=True,
                                                      scale_search=SCALE_SEARCH_FACTORS, refit_scales=True)
    assert 1.0 in SCALE_SEARCH_FACTORS and min(SCALE_SEARCH_FACTORS) < 1 < max(SCALE_SEARCH_FACTORS)
    with pytest.raises(ValueError, match="are options of --error-feedback"):
        MethodSpec("kmeans", 3, refit_scales=True)
    assert MethodSpec("int-asym", 3, error_feedback=True, refit_scales=True, refit_rounds=3).layer_config() == \
        ErrorFeedbackConfig(base=AsymIntConfig(3), refit_scales=True, refit_rounds=3)
    with pytest.raises(ValueError, match="above 1 only with --refit-scales"):
        MethodSpec("kmeans", 3, error_feedback=True, refit_rounds=2)
    with pytest.raises(ValueError, match="apply to scalar grids, not vq"):
        MethodSpec("vq", 2, error_feedback=True, scale_search=True)
