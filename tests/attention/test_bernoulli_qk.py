"""Bernoulli qKᵀ sampling: the keep probabilities, unbiasedness, the ternary form, GQA sharing, bad input."""

import math

import pytest
import torch

from codesign.attention import bernoulli_queries, keep_probabilities


def _water_filling_by_iteration(a: torch.Tensor, density: float) -> torch.Tensor:
    """The same probabilities by the obvious fixed point: saturate, re-level the rest, until nothing changes."""
    target = density * a.numel()
    saturated = torch.zeros_like(a, dtype=torch.bool)
    while True:
        rest = a[~saturated].sum()
        level = rest / (target - int(saturated.sum()))
        now = saturated | (a >= level)
        if torch.equal(now, saturated):
            return torch.where(saturated, 1.0, a / level)
        saturated = now


@pytest.mark.parametrize("density", [0.05, 0.25, 0.5, 0.9])
def test_keep_probabilities_spend_the_density_and_match_water_filling(density):
    gen = torch.Generator().manual_seed(3)
    a = torch.rand(6, 64, generator=gen, dtype=torch.float64) ** 4  # skewed: some features saturate
    p = keep_probabilities(a, density)
    assert torch.allclose(p.sum(-1), torch.full((6,), density * 64, dtype=torch.float64), rtol=1e-12)
    assert bool((p <= 1).all()) and bool((p > 0).all())
    for row in range(6):
        assert torch.allclose(p[row], _water_filling_by_iteration(a[row], density), rtol=1e-10, atol=1e-14)


def test_rows_with_few_non_zero_features_keep_them_exactly():
    a = torch.zeros(2, 16, dtype=torch.float64)
    a[0, :3] = torch.tensor([3.0, 1.0, 0.5])
    p = keep_probabilities(a, 0.5)  # 8 features' worth of probability, only 3 non-zero ones
    assert torch.equal(p[0], (a[0] > 0).double()) and torch.equal(p[1], torch.zeros(16, dtype=torch.float64))


def test_the_sampled_query_is_unbiased():
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(1, 4, 2, 32, generator=gen, dtype=torch.float64)
    draws = 4000
    total = torch.zeros_like(q)
    for _ in range(draws):
        total += bernoulli_queries(q, 0.25, kv_heads=2, generator=gen)[0]
    grouped = q.unflatten(1, (2, 2))
    p = keep_probabilities(grouped.square().mean(2).sqrt(), 0.25).unsqueeze(2).expand_as(grouped).flatten(1, 2)
    std_of_mean = (q.square() * (1 / p - 1)).sqrt() / math.sqrt(draws)  # per feature, from the Bernoulli variance
    assert bool(((total / draws - q).abs() <= 5 * std_of_mean + 1e-12).all())


def test_one_query_head_per_kv_head_gives_the_ternary_query():
    gen = torch.Generator().manual_seed(1)
    q = torch.randn(3, 2, 5, 64, generator=gen)
    sampled, kept = bernoulli_queries(q, 0.25, kv_heads=2, generator=gen)
    p = keep_probabilities(q.double().abs(), 0.25)
    level = torch.where(p < 1, q.double().abs() / p, torch.nan)  # every unsaturated feature: the row's τ
    tau = level.nanmean(-1, keepdim=True).expand_as(level)
    assert torch.allclose(level[p < 1], tau[p < 1], rtol=1e-9)
    below = kept & (p < 1)
    assert bool(below.any()) and torch.allclose(sampled.double().abs()[below], tau[below], rtol=1e-6)
    assert torch.equal(torch.sign(sampled[kept.nonzero(as_tuple=True)]), torch.sign(q[kept.nonzero(as_tuple=True)]))
    assert torch.equal(sampled[~kept], torch.zeros_like(sampled[~kept]))
    assert abs(kept.double().mean().item() - 0.25) < 0.03


def test_query_heads_of_a_kv_head_read_the_same_features():
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(2, 8, 3, 16, generator=gen)
    sampled, kept = bernoulli_queries(q, 0.5, kv_heads=2, generator=gen)
    assert kept.shape == (2, 2, 3, 16)
    zero = (sampled == 0).unflatten(1, (2, 4))
    assert torch.equal(zero, (~kept).unsqueeze(2).expand_as(zero))


def test_density_one_is_the_query_itself():
    q = torch.randn(1, 4, 7, 32)
    sampled, kept = bernoulli_queries(q, 1.0, kv_heads=1)
    assert torch.equal(sampled, q) and bool(kept.all())


@pytest.mark.parametrize("density", [0, -0.5, 1.5, True, "half"])
def test_a_density_outside_0_1_is_one_line(density):
    with pytest.raises(ValueError, match="density"):
        bernoulli_queries(torch.randn(1, 2, 8), density, kv_heads=1)


def test_query_heads_that_do_not_divide_into_the_kv_heads_are_refused():
    with pytest.raises(ValueError, match="multiple of kv_heads=2"):
        bernoulli_queries(torch.randn(1, 3, 8), 0.5, kv_heads=2)
