"""Attention-side compression for long-context decode: sampled value aggregation (SANTA) and a low-rank KV cache.

    santa_attention(q, k, v, n_samples, lengths, variant="systematic")    # reads S of n value rows
    q_sampled, kept = bernoulli_queries(q, density=0.5, kv_heads=1)       # scores read half the key features
    projection = fit_projection(key_moment, value_moment, key_ranks, value_ranks, rope_mode="pre")
    cache = encode_kv(projection, keys, values, positions, bits=8)        # latent cache, int8
    lowrank_decode_attention(q, cache, projection, inv_freq, lengths)

Each has a torch reference and a Triton kernel (codesign.kernels.santa, codesign.kernels.lowrank_kv),
chosen by the rule of codesign.kernels.dispatch. codesign.attention.gemma drops both into Gemma-3.
Results and protocols: docs/attention.md.
"""

from codesign.attention import bernoulli_qk as _bernoulli_qk
from codesign.attention import lowrank_kv as _lowrank_kv
from codesign.attention import santa as _santa
from codesign.attention.bernoulli_qk import bernoulli_queries, keep_probabilities
from codesign.attention.lowrank_kv import (
    LATENT_BITS,
    LATENT_GROUP,
    ROPE_MODES,
    KVProjection,
    LatentKVCache,
    SecondMoment,
    allocate_ranks,
    dequantize_latent,
    encode_kv,
    fit_projection,
    lowrank_decode_attention,
    lowrank_decode_reference,
    quantize_latent,
    rotate,
)
from codesign.attention.philox import philox_uniform
from codesign.attention.santa import (
    VARIANTS,
    decode_attention_reference,
    sample_counts,
    sample_points,
    santa_attention,
    santa_masked_attention,
    santa_reference,
)
from codesign.kernels.dispatch import KERNELS, reset_fallback_warnings

__all__ = [
    "KERNELS",
    "reset_fallback_warnings",
    "philox_uniform",
    *_santa.__all__,
    *_bernoulli_qk.__all__,
    *_lowrank_kv.__all__,
]
