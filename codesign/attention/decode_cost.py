"""Decode-step cost of the attention methods, counted from the shapes (not timed): KV bytes read and FLOPs.

One decode step (one new query token) at n cached positions. The methods replace the global layers;
the sliding-window layers read their last `window` positions in fp16 whatever the method. FLOPs
count 2 per multiply-add in the score and value stages of the replaced layers:
- dense: 2·n·D per query head for the scores and as many for the values;
- SANTA: every key scored, S = ceil(n / ratio) sampled value rows added (2·S·D);
- Bernoulli qKᵀ: the scores read a share f of the key features (f·n·D values, 2·f·n·D FLOPs);
- the pre-RoPE low-rank kernel: each key rebuilt once per KV head (2·n·r_k·D plus the rotation),
  scored (2·n·D per query head), value latents aggregated (2·n·r_v) before one up-projection (2·r_v·D);
  its bytes are the latents with their scales (codesign.attention.kv_budget.latent_bits);
- local: exact attention over the last `window` positions only (a control).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AttentionShape", "GEMMA3_270M", "Cost", "dense_cost", "santa_cost", "bernoulli_cost", "lowrank_cost",
           "local_cost", "sliding_bytes", "sliding_lowrank_bytes"]

FP16_BYTES = 2


@dataclass(frozen=True)
class AttentionShape:
    """What the cost of a decode step depends on: heads, head size, and how many layers of each kind."""

    q_heads: int
    kv_heads: int
    head_dim: int
    global_layers: int
    sliding_layers: int
    window: int

    @classmethod
    def of(cls, config: Any) -> AttentionShape:
        """The shape of a transformers Gemma-3 text config."""
        types = list(config.layer_types)
        return cls(config.num_attention_heads, config.num_key_value_heads, config.head_dim,
                   types.count("full_attention"), types.count("sliding_attention"), config.sliding_window)


GEMMA3_270M = AttentionShape(q_heads=4, kv_heads=1, head_dim=256, global_layers=3, sliding_layers=15, window=512)


@dataclass(frozen=True)
class Cost:
    """Bytes read and FLOPs of one decode step in the replaced (global) layers."""

    bytes: float
    flops: float


def _read(shape: AttentionShape, key_rows: float, value_rows: float) -> Cost:
    """A step that reads key_rows fp16 key rows and value_rows value rows in every replaced layer: their bytes, and
    2 FLOPs per element and query head for the scores and the value sum."""
    d = shape.head_dim
    rows = shape.global_layers * shape.kv_heads * (key_rows + value_rows)
    return Cost(rows * d * FP16_BYTES, shape.global_layers * shape.q_heads * 2 * (key_rows + value_rows) * d)


def _samples(n: int, ratio: float | None) -> int:
    """SANTA's S = ceil(n / ratio) value rows (all n without SANTA)."""
    return n if ratio is None else max(1, math.ceil(n / ratio))


def dense_cost(n: int, shape: AttentionShape = GEMMA3_270M) -> Cost:
    """Exact attention over n positions."""
    return _read(shape, n, n)


def santa_cost(n: int, ratio: float, shape: AttentionShape = GEMMA3_270M) -> Cost:
    """Every key, S = ceil(n / ratio) of the values."""
    return _read(shape, n, _samples(n, ratio))


def bernoulli_cost(n: int, features_read: float, ratio: float | None = None, shape: AttentionShape = GEMMA3_270M) -> Cost:
    """A share features_read of every key's features; all values, or S = ceil(n / ratio) of them with SANTA."""
    return _read(shape, features_read * n, _samples(n, ratio))


def _latent_bits(choices: Mapping[tuple[int, str], Any], layers: int, kind: str, scale_bits: int = 32) -> tuple[list[int], int]:
    """(the layers of choices {(layer, "key" | "value"): (rank, bits)}, checked to be `layers` of them; their latent bits
    per position and KV head, scales of scale_bits counted)."""
    from codesign.attention.kv_budget import latent_bits

    covered = sorted({layer for layer, _ in choices})
    if len(covered) != layers:
        raise ValueError(f"choices cover {len(covered)} layers, the shape has {layers} {kind}")
    return covered, sum(latent_bits(choices[(layer, side)], scales=True, scale_bits=scale_bits)
                        for layer in covered for side in ("key", "value"))


def lowrank_cost(n: int, choices: Mapping[tuple[int, str], Any], shape: AttentionShape = GEMMA3_270M,
                 scale_bits: int = 32) -> Cost:
    """The pre-RoPE low-rank cache at choices {(layer, "key" | "value"): (rank, bits)} (one per replaced layer; scales
    of scale_bits)."""
    from codesign.attention.kv_budget import choice_rank

    layers, total_bits = _latent_bits(choices, shape.global_layers, "replaced layers", scale_bits)
    d, flops = shape.head_dim, 0.0
    for layer in layers:
        rk, rv = choice_rank(choices[(layer, "key")]), choice_rank(choices[(layer, "value")])
        rebuild = shape.kv_heads * (2 * n * rk * d + 3 * n * d)  # up-projection + rotation
        flops += rebuild + shape.q_heads * (2 * n * d + 2 * n * rv + 2 * rv * d)
    return Cost(shape.kv_heads * n * total_bits / 8, flops)


def local_cost(n: int, window: int, shape: AttentionShape = GEMMA3_270M) -> Cost:
    """Exact attention over the last `window` positions."""
    return dense_cost(min(n, window), shape)


def sliding_bytes(n: int, shape: AttentionShape = GEMMA3_270M) -> float:
    """Bytes the sliding-window layers read at n positions (fp16 keys and values of their window)."""
    return shape.sliding_layers * shape.kv_heads * min(n, shape.window) * shape.head_dim * FP16_BYTES * 2


def sliding_lowrank_bytes(n: int, choices: Mapping[tuple[int, str], Any], shape: AttentionShape = GEMMA3_270M,
                          scale_bits: int = 32) -> float:
    """Bytes the sliding-window layers read at n positions when their keys and values are low-rank latents at choices
    {(layer, "key" | "value"): (rank, bits)} (one per sliding layer; scales of scale_bits counted, as lowrank_cost)."""
    _, bits = _latent_bits(choices, shape.sliding_layers, "sliding-window layers", scale_bits)
    return shape.kv_heads * min(n, shape.window) * bits / 8
