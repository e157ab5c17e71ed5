"""The budgeted rank choice of codesign.attention.kv_budget: exact against brute force, and its bad inputs."""

import itertools
import random

import pytest

from codesign.attention.kv_budget import (
    allocate_by_cost,
    byte_fraction,
    format_choices,
    kept_fraction,
    latent_bits,
    parse_choices,
)


def _brute_force(costs, budget, size=lambda rank: rank):
    best = None
    for choice in itertools.product(*[sorted(c.items()) for c in costs.values()]):
        if sum(size(r) for r, _ in choice) <= budget:
            total = sum(c for _, c in choice)
            if best is None or total < best[0] - 1e-12:
                best = (total, [r for r, _ in choice])
    return best


@pytest.mark.parametrize("seed", range(20))
def test_the_choice_is_the_least_total_cost_under_the_budget(seed):
    rng = random.Random(seed)
    costs = {}
    for g in range(rng.randint(1, 5)):
        ranks = sorted(rng.sample([8, 16, 24, 32, 48, 64], rng.randint(1, 4)))
        # cost falls with rank, as a compression loss does
        values = sorted((rng.random() for _ in ranks), reverse=True)
        costs[(g, "key" if g % 2 else "value")] = dict(zip(ranks, values))
    budget = sum(min(c) for c in costs.values()) + rng.randint(0, 100)
    chosen = allocate_by_cost(costs, budget)
    total, ranks = _brute_force(costs, budget)
    assert sum(chosen.values()) <= budget
    assert sum(costs[g][r] for g, r in chosen.items()) == pytest.approx(total, abs=1e-12)


def test_a_full_budget_takes_every_full_rank_and_the_fraction_is_counted():
    costs = {(5, "key"): {64: 0.5, 128: 0.1, 256: 0.0}, (5, "value"): {128: 0.7, 256: 0.0}}
    assert allocate_by_cost(costs, 512) == {(5, "key"): 256, (5, "value"): 256}
    half = allocate_by_cost(costs, 256)
    assert half == {(5, "key"): 128, (5, "value"): 128}
    assert kept_fraction(half, 256) == 0.5


def test_a_budget_below_the_smallest_ranks_is_refused():
    with pytest.raises(ValueError, match="below the smallest choices"):
        allocate_by_cost({(0, "key"): {64: 1.0}, (0, "value"): {64: 1.0}}, 100)
    with pytest.raises(ValueError, match="at least one"):
        allocate_by_cost({(0, "key"): {}}, 100)


@pytest.mark.parametrize("scales", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_rank_and_bits_choices_are_sized_by_latent_bits_and_the_choice_is_the_least_cost(seed, scales):
    rng = random.Random(100 + seed)
    costs = {}
    for g in range(rng.randint(1, 4)):
        options = rng.sample([(r, b) for r in (32, 64, 128, 256) for b in (4, 8, 16)], rng.randint(1, 5))
        costs[(g, "key")] = {o: rng.random() / (o[0] * o[1]) for o in options}  # more bits, less loss
    size = lambda choice: latent_bits(choice, scales=scales)  # noqa: E731  (with scales: + 32 bits per 32 channels)
    budget = sum(min(map(size, c)) for c in costs.values()) + rng.randint(0, 4096)
    chosen = allocate_by_cost(costs, budget, scales=scales)
    total, _ = _brute_force(costs, budget, size=size)
    assert sum(map(size, chosen.values())) <= budget
    assert sum(costs[g][c] for g, c in chosen.items()) == pytest.approx(total, abs=1e-12)
    assert byte_fraction(chosen, 256, scales=scales) * len(chosen) * 256 * 16 == sum(map(size, chosen.values()))


def test_an_int4_latent_of_full_rank_costs_a_quarter_of_the_fp16_bytes():
    costs = {(5, "key"): {(256, 16): 0.0, (256, 4): 0.01, (64, 16): 0.5},
             (5, "value"): {(256, 16): 0.0, (256, 4): 0.2, (128, 8): 0.1}}
    # a quarter of fp16 for both sides: 2 x 256 x 4 bits; the values' (128, 8) is as small and costs less
    chosen = allocate_by_cost(costs, 2 * 256 * 4)
    assert chosen == {(5, "key"): (256, 4), (5, "value"): (128, 8)}
    assert byte_fraction(chosen, 256) == 0.25 and kept_fraction(chosen, 256) == 0.75
    # a float32 scale per 32 channels adds one bit per quantized channel: (256 x 5 + 128 x 9) / (2 x 256 x 16)
    assert byte_fraction(chosen, 256, scales=True) == (256 * 5 + 128 * 9) / (2 * 256 * 16)


def test_choices_round_trip_through_their_text_and_bad_text_is_named():
    text = "5:128x8:256x4,11:64x16:192x4"
    choices = parse_choices(text)
    assert choices[(5, "key")] == (128, 8) and choices[(11, "value")] == (192, 4)
    assert format_choices(choices) == text
    for bad in ("5:128x8", "5:128:256x4", "a:1x8:1x8"):
        with pytest.raises(ValueError, match="LAYER:KEYRANKxBITS"):
            parse_choices(bad)


def test_a_mixed_precision_side_is_sized_parsed_and_quantized_segment_by_segment():
    import torch

    from codesign.attention.gemma import LowRankCore
    from codesign.attention.kv_budget import choice_rank, segments
    from codesign.attention.lowrank_kv import dequantize_latent, fit_projection, quantize_latent

    mixed = ((64, 8), (192, 4))
    assert latent_bits(mixed) == 64 * 8 + 192 * 4 and choice_rank(mixed) == 256
    assert latent_bits(mixed, scales=True) == 64 * 8 + 2 * 32 + 192 * 4 + 6 * 32  # each segment's own scales
    assert latent_bits(mixed, scales=True, scale_bits=16) == 64 * 8 + 2 * 16 + 192 * 4 + 6 * 16
    text = "5:64x8+192x4:128x4,11:32x16:32x8+32x4"
    choices = parse_choices(text)
    assert choices[(5, "key")] == mixed and segments(choices[(11, "value")]) == ((32, 8), (32, 4))
    assert format_choices(choices) == text
    assert kept_fraction(choices, 256) == (256 + 128 + 32 + 64) / (4 * 256)
    # the allocation sizes a mixed choice by its latent bits like any other
    costs = {(5, "key"): {(256, 4): 0.3, mixed: 0.1, (64, 16): 0.5}}
    assert allocate_by_cost(costs, latent_bits(mixed)) == {(5, "key"): mixed}
    assert allocate_by_cost(costs, latent_bits(mixed) - 1) == {(5, "key"): (256, 4)}
    # the core quantizes the leading 64 latent channels in int8 and the rest in int4, each with its own scales
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 1, 40, 16, generator=gen) * torch.logspace(0, -1, 16)
    moment = torch.einsum("bhnd,bhne->hde", x, x) / 40
    projection = fit_projection(moment, moment, [16], [16])
    core = LowRankCore(projection, bits=((6, 8), (10, 4)), value_bits=4)
    latent = torch.einsum("bhnd,hdr->bhnr", x, projection.key_down)
    expected = torch.cat([dequantize_latent(*quantize_latent(latent[..., :6], 8), 8, 6),
                          dequantize_latent(*quantize_latent(latent[..., 6:], 4), 4, 10)], dim=-1)
    assert torch.equal(core._roundtrip(x, projection.key_down, core.bits), expected)
    assert not torch.equal(core._roundtrip(x, projection.key_down, 4), expected)
    with pytest.raises(ValueError, match="leave no channel"):
        LowRankCore(projection, bits=((16, 8), (4, 4)))._roundtrip(x, projection.key_down, ((16, 8), (4, 4)))
