"""Drop-in attention for Gemma-3 (transformers' Gemma3Attention): exact, SANTA, or low-rank KV cache.

Gemma-3 specifics honoured here (transformers 5.x implementation): GQA (270M: 4 query heads, 1 KV
head, head_dim 256); RMS-norm on queries and keys (QK-norm) *before* RoPE; RoPE with a different
base for sliding-window layers (10k) and global layers (1M); sliding-window layers (window 512)
interleaved 5:1 with global layers; scores scaled by query_pre_attn_scalar^-1/2; no attention
logit soft-capping in Gemma-3 (attn_logit_softcapping is None — rejected if a config sets it).

`GemmaAttention` reuses the original block's projections and norms and hands RoPE'd queries and
the keys/values to a core. With transformers' KV cache (generation) the cores store what their
method stores — rotated keys for exact/SANTA, latents for low-rank — and a single-token step with an
unpadded batch goes through the decode kernels' dispatch (Triton on a GPU, torch reference
elsewhere). Without a cache (perplexity) every position is computed as the decode step it would
be: SANTA samples per query row, the low-rank core attends to reconstructed latents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from codesign.attention.bernoulli_qk import bernoulli_queries
from codesign.attention.lowrank_kv import (
    LATENT_GROUP,
    KVProjection,
    LatentKVCache,
    SecondMoment,
    allocate_ranks,
    dequantize_latent,
    fit_projection,
    latent_segments,
    lowrank_decode_attention,
    quantize_latent,
    rotate,
)
from codesign.attention.santa import santa_attention, santa_masked_attention

__all__ = [
    "apply_rope",
    "GemmaAttention",
    "ExactCore",
    "LocalCore",
    "SantaCore",
    "BernoulliQueryCore",
    "LowRankCore",
    "KVMomentCore",
    "gemma_attention_replacements",
    "gemma_global_layers",
    "collect_kv_moments",
    "fit_gemma_projections",
]


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE with transformers' cos/sin [B, T, D] on x [B, H, T, D] (rotate-half convention)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None] + rotated * sin[:, None]


def _visible(q_pos: torch.Tensor, k_pos: torch.Tensor, window: int | None, mask: torch.Tensor | None) -> torch.Tensor:
    """[B, 1, T, N] bool: causal (and sliding-window) visibility, intersected with the model's mask if it fits."""
    diff = q_pos[:, None, :, None] - k_pos[:, None, None, :]
    visible = diff >= 0
    if window is not None:
        visible &= diff < window
    if isinstance(mask, torch.Tensor) and mask.dim() == 4 and mask.shape[-2:] == visible.shape[-2:]:
        allowed = mask if mask.dtype == torch.bool else mask > torch.finfo(mask.dtype).min / 2
        visible = visible & allowed
    return visible


def _dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, visible: torch.Tensor, scale: float) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    scores = torch.einsum("bhtd,bhnd->bhtn", q, k.repeat_interleave(group, dim=1)) * scale
    probs = torch.softmax(scores.masked_fill(~visible, -torch.inf).float(), dim=-1).to(q.dtype)
    return torch.einsum("bhtn,bhnd->bhtd", probs, v.repeat_interleave(group, dim=1))


def _decode_window(visible: torch.Tensor) -> int | None:
    """For one query row per sequence whose visible keys are the same contiguous suffix: its start, else None."""
    if visible.shape[2] != 1:
        return None
    row = visible[:, 0, 0, :]
    n = row.shape[-1]
    start = n - int(row[0].sum())
    expected = torch.arange(n, device=row.device) >= start
    return start if bool((row == expected).all()) else None


class ExactCore:
    """Softmax attention over rotated keys, as transformers computes it (the reference of the other cores)."""

    def attend(self, block: GemmaAttention, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
        """[B, Hq, T, D] attention output."""
        k = apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(k, v, block.layer_idx)
            key_pos = _cached_positions(q_pos, k.shape[2])
        return _dense(q, k, v, self.visible(block, q_pos, key_pos, mask), block.scaling)

    def visible(self, block: GemmaAttention, q_pos: torch.Tensor, key_pos: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        """[B, 1, T, N] bool: the keys each query row attends to (causal, the layer's sliding window, the model's mask)."""
        return _visible(q_pos, key_pos, block.sliding_window, mask)

    def from_exact_cache(self, block: GemmaAttention, keys: torch.Tensor, values: torch.Tensor,
                         positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """What this core keeps in the KV cache for keys/values an exact prefill cached (keys rotated, at positions [N])."""
        return keys, values


class LocalCore(ExactCore):
    """Exact attention over the last `window` keys only: a control that drops the distant history."""

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.window = window

    def visible(self, block, q_pos, key_pos, mask):
        """The exact core's visible keys, only those within `window` positions of the query."""
        return super().visible(block, q_pos, key_pos, mask) & _visible(q_pos, key_pos, self.window, None)


class KVMomentCore(ExactCore):
    """Exact attention that also accumulates second moments of pre-RoPE keys, rotated keys and values."""

    def __init__(self) -> None:
        self.keys, self.rotated_keys, self.values = SecondMoment(), SecondMoment(), SecondMoment()

    def attend(self, block, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
        """Record, then attend exactly."""
        self.keys.add(k)
        self.rotated_keys.add(apply_rope(k, cos, sin))
        self.values.add(v)
        return super().attend(block, q, k, v, cos, sin, key_pos, q_pos, mask, cache)


class SantaCore(ExactCore):
    """SANTA with S = ceil(n / ratio) samples per query row (n: keys the row sees)."""

    def __init__(self, ratio: float, variant: str = "systematic", seed: int = 0) -> None:
        if ratio < 1:
            raise ValueError(f"ratio n/S must be >= 1, got {ratio}")
        self.ratio, self.variant, self.seed = ratio, variant, seed
        self.generator = torch.Generator().manual_seed(seed)
        self.step = 0

    def attend(self, block, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
        """Sampled value aggregation over the visible keys."""
        k = apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(k, v, block.layer_idx)
            key_pos = _cached_positions(q_pos, k.shape[2])
        visible = _visible(q_pos, key_pos, block.sliding_window, mask)
        start = _decode_window(visible)
        if start is not None:
            n = k.shape[2] - start
            self.step += 1
            out = santa_attention(
                q[:, :, 0].contiguous(), k[:, :, start:].contiguous(), v[:, :, start:].contiguous(),
                max(1, math.ceil(n / self.ratio)), variant=self.variant, seed=self.seed * 1_000_003 + self.step,
                scale=block.scaling,
            )
            return out[:, :, None]
        return santa_masked_attention(q, k, v, visible, self.ratio, self.variant, self.generator, block.scaling)


class BernoulliQueryCore(ExactCore):
    """Bernoulli qKᵀ sampling (bernoulli_qk.py) in front of another core: every query row's scores read only the
    sampled `density` of the key features; `inner` (exact, SANTA, low-rank) does the rest."""

    def __init__(self, density: float, inner: ExactCore | None = None, seed: int = 0) -> None:
        bernoulli_queries(torch.zeros(1, 1, 1), density, 1)  # validates the density
        self.density, self.inner = density, inner if inner is not None else ExactCore()
        self.generator = torch.Generator().manual_seed(seed)
        self.features_read, self.rows = 0.0, 0  # running sum of the share of key features read per row

    def attend(self, block, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
        """The inner core's attention with the sampled queries."""
        sampled, kept = bernoulli_queries(q, self.density, k.shape[1], self.generator)
        share = kept.double().mean(-1)
        self.features_read += float(share.sum())
        self.rows += share.numel()
        return self.inner.attend(block, sampled, k, v, cos, sin, key_pos, q_pos, mask, cache)

    def visible(self, block, q_pos, key_pos, mask):
        """The inner core's visible keys."""
        return self.inner.visible(block, q_pos, key_pos, mask)

    def from_exact_cache(self, block, keys, values, positions):
        """What the inner core keeps."""
        return self.inner.from_exact_cache(block, keys, values, positions)


class LowRankCore(ExactCore):
    """Keys and values pass through the latent cache (key latents quantized at `bits`, value latents at `value_bits`,
    by default the same) before attention."""

    def __init__(self, projection: KVProjection, bits: int | tuple[tuple[int, int], ...] = 16, group_size: int = LATENT_GROUP,
                 value_bits: int | tuple[tuple[int, int], ...] | None = None, scale_bits: int = 32) -> None:
        value_bits = bits if value_bits is None else value_bits
        for b in (bits, value_bits):
            for _, segment_bits in latent_segments(b, 1):  # validates bits, group size, scale bits
                quantize_latent(torch.zeros(1, 2), segment_bits, group_size, scale_bits)
        self.projection, self.bits, self.value_bits, self.group_size = projection, bits, value_bits, group_size
        self.scale_bits = scale_bits

    def _roundtrip(self, x: torch.Tensor, down: torch.Tensor, bits: int | tuple[tuple[int, int], ...]) -> torch.Tensor:
        latent = torch.einsum("bhnd,hdr->bhnr", x.float(), down.to(x.device))
        parts, start = [], 0
        for width, segment_bits in latent_segments(bits, latent.shape[-1]):  # each segment quantized with its own scales
            piece = latent[..., start:start + width]
            codes, scale = quantize_latent(piece, segment_bits, self.group_size, self.scale_bits)
            parts.append(dequantize_latent(codes, scale, segment_bits, piece.shape[-1], self.group_size))
            start += width
        return torch.cat(parts, dim=-1).to(x.dtype)

    def from_exact_cache(self, block, keys, values, positions):
        """The (dequantized) latents of cached keys (un-rotated first for pre-RoPE projections) and values."""
        if self.projection.rope_mode == "pre":
            keys = rotate(keys, -positions, block.inv_freq)
        return (self._roundtrip(keys, self.projection.key_down, self.bits),
                self._roundtrip(values, self.projection.value_down, self.value_bits))

    def attend(self, block, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
        """Attention over keys and values reconstructed from their (quantized) latents."""
        proj = self.projection
        if proj.kv_heads != k.shape[1] or proj.head_dim != k.shape[3]:
            raise ValueError(f"projection is for {proj.kv_heads} KV heads of dim {proj.head_dim}, the layer has "
                             f"{k.shape[1]} of dim {k.shape[3]}")
        stored = k if proj.rope_mode == "pre" else apply_rope(k, cos, sin)
        key_latent = self._roundtrip(stored, proj.key_down, self.bits)
        value_latent = self._roundtrip(v, proj.value_down, self.value_bits)
        if cache is not None:
            key_latent, value_latent = cache.update(key_latent, value_latent, block.layer_idx)
            key_pos = _cached_positions(q_pos, key_latent.shape[2])
        visible = _visible(q_pos, key_pos, block.sliding_window, mask)
        start = _decode_window(visible)
        if start is not None and cache is not None:
            latent_cache = LatentKVCache(
                key_latent[:, :, start:].half(), None, value_latent[:, :, start:].half(), None,
                key_pos[:, start:].to(torch.int32), 16,
            )
            out = lowrank_decode_attention(q[:, :, 0].contiguous(), latent_cache, proj, block.inv_freq,
                                           scale=block.scaling)
            return out[:, :, None]
        keys = torch.einsum("bhnr,hrd->bhnd", key_latent.float(), proj.key_up.to(q.device)).to(q.dtype)
        if proj.rope_mode == "pre":
            keys = rotate(keys, key_pos[:, None, :], block.inv_freq)
        values = torch.einsum("bhnr,hrd->bhnd", value_latent.float(), proj.value_up.to(q.device)).to(q.dtype)
        return _dense(q, keys, values, visible, block.scaling)


def _cached_positions(q_pos: torch.Tensor, n_keys: int) -> torch.Tensor:
    """Positions of a cache's n_keys contiguous keys ending at the last query position."""
    return q_pos[:, -1:] - (n_keys - 1) + torch.arange(n_keys, device=q_pos.device)[None, :]


class GemmaAttention(torch.nn.Module):
    """A Gemma-3 attention block whose softmax-attention step is done by `core`."""

    def __init__(self, original: torch.nn.Module, core: ExactCore, inv_freq: torch.Tensor) -> None:
        super().__init__()
        config = original.config
        if getattr(config, "attn_logit_softcapping", None):
            raise ValueError("attention logit soft-capping is not supported by these attention cores")
        self.original = original
        self.core = core
        self.layer_idx = original.layer_idx
        self.head_dim = original.head_dim
        self.scaling = original.scaling
        self.sliding_window = original.sliding_window
        self.register_buffer("inv_freq", inv_freq.detach().float().clone(), persistent=False)

    def forward(self, hidden_states, position_embeddings=None, attention_mask=None, position_ids=None,
                cache=None, past_key_values=None, **kwargs):
        """Same signature and outputs as Gemma3Attention.forward (attention weights: None)."""
        cache = cache if cache is not None else past_key_values
        a = self.original
        bsz, length, _ = hidden_states.shape
        shape = (bsz, length, -1, self.head_dim)
        q = a.q_norm(a.q_proj(hidden_states).view(shape).transpose(1, 2))
        k = a.k_norm(a.k_proj(hidden_states).view(shape).transpose(1, 2))
        v = a.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q = apply_rope(q, cos, sin)
        if position_ids is None:
            position_ids = torch.arange(length, device=hidden_states.device)[None, :].expand(bsz, -1)
        position_ids = position_ids.expand(bsz, -1)
        out = self.core.attend(self, q, k, v, cos, sin, position_ids, position_ids, attention_mask, cache)
        out = out.transpose(1, 2).reshape(bsz, length, -1)
        return a.o_proj(out), None


def _inv_freq(model: torch.nn.Module, attention: torch.nn.Module) -> torch.Tensor:
    rotary = model.get_decoder().rotary_emb
    layer_type = attention.layer_type
    if getattr(rotary, "rope_type", {}).get(layer_type, "default") != "default":
        raise ValueError(f"RoPE type {rotary.rope_type[layer_type]!r} is not supported (only 'default')")
    return getattr(rotary, f"{layer_type}_inv_freq")


def gemma_global_layers(model: torch.nn.Module) -> list[int]:
    """Indices of the decoder layers whose attention sees the whole context (no sliding window)."""
    return [i for i, layer in enumerate(model.get_decoder().layers) if layer.self_attn.sliding_window is None]


def gemma_attention_replacements(model: torch.nn.Module, make_core,
                                 layers: str = "all") -> dict[str, torch.nn.Module]:
    """{name: GemmaAttention(original, make_core(layer_index))} for every layer, or only the global ones (layers="global")."""
    from codesign.llm.swap import attention_replacements

    if layers not in ("all", "global"):
        raise ValueError(f"layers must be 'all' or 'global', got {layers!r}")

    def make(index: int, attention: torch.nn.Module) -> torch.nn.Module | None:
        if layers == "global" and attention.sliding_window is not None:
            return None  # a sliding-window layer keeps its own attention
        return GemmaAttention(attention, make_core(index), _inv_freq(model, attention))

    return {name: m for name, m in attention_replacements(model, make).items() if m is not None}


@torch.no_grad()
def collect_kv_moments(model: torch.nn.Module, tokens: torch.Tensor, context: int = 512) -> list[KVMomentCore]:
    """Second moments of every layer's keys (pre- and post-RoPE) and values over a calibration token stream."""
    from codesign.llm.swap import swapped

    cores: list[KVMomentCore] = []

    def make(_: int) -> KVMomentCore:
        cores.append(KVMomentCore())
        return cores[-1]

    device = next(model.parameters()).device
    with swapped(model, gemma_attention_replacements(model, make)):
        for start in range(0, tokens.numel(), context):
            window = tokens[start : start + context].to(device)
            model.get_decoder()(input_ids=window[None])
    return cores


def fit_gemma_projections(
    moments: Sequence[KVMomentCore], keep_fraction: float, rope_mode: str = "pre", min_rank: int = 1
) -> list[KVProjection]:
    """One KVProjection per layer, ranks allocated over every layer, head and K/V together (see allocate_ranks)."""
    key_moments = [(m.keys if rope_mode == "pre" else m.rotated_keys).value() for m in moments]
    value_moments = [m.values.value() for m in moments]
    spectra = []
    for key, value in zip(key_moments, value_moments):
        spectra.extend(torch.linalg.eigvalsh(key))
        spectra.extend(torch.linalg.eigvalsh(value))
    ranks = allocate_ranks(spectra, keep_fraction, min_rank)
    projections, at = [], 0
    for key, value in zip(key_moments, value_moments):
        heads = key.shape[0]
        key_ranks, value_ranks = ranks[at : at + heads], ranks[at + heads : at + 2 * heads]
        at += 2 * heads
        projections.append(fit_projection(key, value, key_ranks, value_ranks, rope_mode))
    return projections
