"""Decode-step cost counts: the methods agree with each other where they coincide, and with the byte fractions."""

import pytest

from codesign.attention.decode_cost import (
    GEMMA3_270M,
    bernoulli_cost,
    dense_cost,
    local_cost,
    lowrank_cost,
    santa_cost,
    sliding_bytes,
    sliding_lowrank_bytes,
)
from codesign.attention.kv_budget import byte_fraction, parse_choices


def test_dense_counts_every_key_and_value_of_the_global_layers():
    cost = dense_cost(512)
    assert cost.bytes == 3 * 1 * 512 * 256 * 2 * 2 == 1536 * 1024  # layers x KV heads x rows x dim x fp16 x (K, V)
    assert cost.flops == 3 * 4 * 2 * (2 * 512 * 256)  # layers x query heads x (scores + values)
    assert sliding_bytes(8192) == 15 * 512 * 256 * 2 * 2


@pytest.mark.parametrize("n", [1, 100, 512, 8192])
def test_santa_and_bernoulli_reduce_to_each_other_and_to_dense(n):
    assert bernoulli_cost(n, 1.0) == dense_cost(n)
    assert bernoulli_cost(n, 1.0, 16) == santa_cost(n, 16)
    s = max(1, -(-n // 16))
    assert santa_cost(n, 16).bytes == dense_cost(n).bytes * (n + s) / (2 * n)
    assert local_cost(n, 512) == dense_cost(min(n, 512))


def test_lowrank_bytes_are_the_latents_with_their_scales():
    choices = parse_choices("5:64x4:192x4,11:64x8:256x4,17:128x4:64x4")
    cost = lowrank_cost(4096, choices)
    assert cost.bytes == pytest.approx(dense_cost(4096).bytes * byte_fraction(choices, 256, scales=True), rel=1e-12)
    with pytest.raises(ValueError, match="choices cover 1 layers"):
        lowrank_cost(4096, parse_choices("5:64x4:192x4"), GEMMA3_270M)


@pytest.mark.parametrize("n", [100, 512, 8192])
def test_sliding_layers_at_full_rank_fp16_read_what_their_window_does_and_latents_scale_with_bits(n):
    sliding = [i for i in range(18) if i not in (5, 11, 17)]
    full = {(layer, side): (256, 16) for layer in sliding for side in ("key", "value")}
    assert sliding_lowrank_bytes(n, full) == sliding_bytes(n)
    int4 = {group: (128, 4) for group in full}  # 128 x 4 bits + 4 float32 scales of 32 channels, against 256 x 16
    assert sliding_lowrank_bytes(n, int4) == sliding_bytes(n) * (128 * 4 + 4 * 32) / (256 * 16)
    assert sliding_lowrank_bytes(n, int4, scale_bits=16) == sliding_bytes(n) * (128 * 4 + 4 * 16) / (256 * 16)
    with pytest.raises(ValueError, match="15 sliding-window layers"):
        sliding_lowrank_bytes(n, {(0, "key"): (64, 4), (0, "value"): (64, 4)})
