"""Low-rank KV cache: per-head projections from calibration activations, an optionally quantized latent cache,
and decode attention that reads only the latent.

Projection (one eigendecomposition per head, for K and for V): accumulate the uncentred second
moment Σ = E[x xᵀ] of a head's keys (or values) over calibration tokens; its top-r eigenvectors U_r
minimise E‖x - U_r U_rᵀ x‖² (no mean term, so reconstruction is one matmul). Latent channels are
whitened: down = U_r diag(λ)^-½, up = diag(λ)^½ U_rᵀ — every channel then has unit variance, which
is what lets one absmax scale per token and group of 32 channels quantize the latent (int8 or int4).
(Channels with λ < 1e-6 λ_max are scaled as if λ = 1e-6 λ_max.)

RoPE does not commute with a fixed projection (R(j) P ≠ P R'(j)), so where keys are projected
matters. rope_mode="pre" projects keys *before* RoPE (they are position-free and low-rank) and the
kernel reconstructs each key from its latent and rotates it by its own position before the dot
product; rope_mode="post" projects keys *after* RoPE (so the cache holds rotated keys) and the
query is projected once, q̃ = q upᵀ, so scores are q̃·latent with no reconstruction at all — cheaper,
but rotated keys are less low-rank. Both are exact at full rank.

Ranks (`allocate_ranks`): each spectrum (one per head and per K/V, over every layer given) is
normalised by its trace; the kept channels are the globally largest normalised eigenvalues, after
every spectrum has its min_rank. A keep fraction f keeps round(f x total channels): KV compression
1 - f (before latent quantization).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from codesign.attention.validate import check_heads, check_lengths, check_query
from codesign.kernels.dispatch import run_kernel_or_reference

__all__ = [
    "ROPE_MODES",
    "LATENT_BITS",
    "LATENT_GROUP",
    "SCALE_BITS",
    "check_scale_bits",
    "KVProjection",
    "LatentKVCache",
    "LatentPart",
    "latent_segments",
    "SecondMoment",
    "allocate_ranks",
    "fit_projection",
    "quantize_latent",
    "dequantize_latent",
    "rotate",
    "encode_kv",
    "lowrank_decode_reference",
    "lowrank_decode_attention",
]

ROPE_MODES = ("pre", "post")
LATENT_BITS = (16, 8, 4)  # 16: float16 latent, no quantization
LATENT_GROUP = 32  # latent channels sharing one quantization scale (per token)
SCALE_BITS = {32: torch.float32, 16: torch.float16}  # how a scale is stored: float32 (the default) or float16


def check_scale_bits(scale_bits: int) -> None:
    """ValueError unless scale_bits names a scale storage (SCALE_BITS)."""
    if scale_bits not in SCALE_BITS:
        raise ValueError(f"scale bits must be one of {tuple(SCALE_BITS)}, got {scale_bits}")
_QMAX = {8: 127, 4: 7}


@dataclass(frozen=True)
class KVProjection:
    """Per-KV-head projections of one layer: latent = x @ down[h], x̂ = latent @ up[h]; zero past each head's rank."""

    key_down: torch.Tensor  # [Hkv, D, Rk]
    key_up: torch.Tensor  # [Hkv, Rk, D]
    key_ranks: tuple[int, ...]
    value_down: torch.Tensor  # [Hkv, D, Rv]
    value_up: torch.Tensor  # [Hkv, Rv, D]
    value_ranks: tuple[int, ...]
    rope_mode: str = "pre"

    def __post_init__(self) -> None:
        if self.rope_mode not in ROPE_MODES:
            raise ValueError(f"unknown rope_mode {self.rope_mode!r}: choose one of {', '.join(ROPE_MODES)}")
        heads, dim, _ = self.key_down.shape
        for name, down, up, ranks in (("key", self.key_down, self.key_up, self.key_ranks),
                                      ("value", self.value_down, self.value_up, self.value_ranks)):
            if down.dim() != 3 or down.shape[:2] != (heads, dim) or up.shape != (heads, down.shape[2], dim):
                raise ValueError(f"{name} projections must be [Hkv, D, R] and [Hkv, R, D], got "
                                 f"{tuple(down.shape)} and {tuple(up.shape)}")
            if len(ranks) != heads or any(not 1 <= r <= down.shape[2] for r in ranks):
                raise ValueError(f"{name} ranks {ranks} must be {heads} values in 1..{down.shape[2]}")

    @property
    def kv_heads(self) -> int:
        """Number of KV heads."""
        return self.key_down.shape[0]

    @property
    def head_dim(self) -> int:
        """Head dimension D."""
        return self.key_down.shape[1]

    def kept_fraction(self) -> float:
        """Latent channels kept over 2 x Hkv x D (the KV cache size before quantization, relative)."""
        return (sum(self.key_ranks) + sum(self.value_ranks)) / (2 * self.kv_heads * self.head_dim)


class SecondMoment:
    """Running uncentred second moment E[x xᵀ] per head of [..., heads, tokens, D] activations (float64)."""

    def __init__(self) -> None:
        self.total: torch.Tensor | None = None
        self.count = 0

    def add(self, x: torch.Tensor) -> None:
        """Accumulate activations [batch, heads, tokens, D]."""
        if x.dim() != 4:
            raise ValueError(f"activations must be [batch, heads, tokens, head_dim], got shape {tuple(x.shape)}")
        flat = x.detach().to(torch.float64).transpose(0, 1).reshape(x.shape[1], -1, x.shape[3])
        moment = flat.transpose(1, 2) @ flat
        self.total = moment if self.total is None else self.total + moment
        self.count += flat.shape[1]

    def value(self) -> torch.Tensor:
        """[heads, D, D]."""
        if self.total is None or self.count == 0:
            raise ValueError("no calibration activations were accumulated")
        return self.total / self.count


def _spectrum(moment: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eigenvalues (descending, >= 0) and eigenvectors (columns) of each head's [D, D] moment."""
    values, vectors = torch.linalg.eigh(moment.to(torch.float64))
    return values.flip(-1).clamp(min=0), vectors.flip(-1)


def allocate_ranks(spectra: Sequence[torch.Tensor], keep_fraction: float, min_rank: int = 1) -> list[int]:
    """Ranks per spectrum: min_rank each, then the globally largest trace-normalised eigenvalues."""
    if not 0 < keep_fraction <= 1:
        raise ValueError(f"keep fraction must be in (0, 1], got {keep_fraction}")
    sizes = [int(s.numel()) for s in spectra]
    if not sizes or min(sizes) < 1:
        raise ValueError("every spectrum needs at least one eigenvalue")
    if not 1 <= min_rank <= min(sizes):
        raise ValueError(f"min_rank {min_rank} must be in 1..{min(sizes)}")
    budget = round(keep_fraction * sum(sizes))
    if budget < min_rank * len(sizes):
        raise ValueError(f"keep fraction {keep_fraction} leaves {budget} channels, fewer than "
                         f"min_rank {min_rank} for each of {len(sizes)} spectra")
    candidates = []
    for index, spectrum in enumerate(spectra):
        ordered = spectrum.to(torch.float64).flatten().sort(descending=True).values
        normalised = ordered / ordered.sum().clamp(min=torch.finfo(torch.float64).tiny)
        for value in normalised[min_rank:].tolist():
            candidates.append((value, index))
    ranks = [min_rank] * len(sizes)
    candidates.sort(key=lambda item: -item[0])  # stable: within a spectrum, larger eigenvalues first
    for _, index in candidates[: budget - min_rank * len(sizes)]:
        ranks[index] += 1
    return ranks


def _fit_side(moment: torch.Tensor, ranks: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    values, vectors = _spectrum(moment)
    heads, dim, _ = moment.shape
    width = max(ranks)
    down = torch.zeros(heads, dim, width, dtype=torch.float64)
    up = torch.zeros(heads, width, dim, dtype=torch.float64)
    for h, rank in enumerate(ranks):
        top = values[h, :rank]
        # whitening amplifies a channel by at most 1000x the strongest one's scale: a direction that
        # calibration barely saw must not blow up (float16 latents) on tokens that do use it
        sigma = top.clamp(min=max(float(values[h, 0]) * 1e-6, 1e-30)).sqrt()
        basis = vectors[h, :, :rank]
        down[h, :, :rank] = basis / sigma
        up[h, :rank, :] = (basis * sigma).T
    return down.float(), up.float()


def fit_projection(
    key_moment: torch.Tensor, value_moment: torch.Tensor,
    key_ranks: Sequence[int], value_ranks: Sequence[int], rope_mode: str = "pre",
) -> KVProjection:
    """Projections from per-head second moments [Hkv, D, D] (keys pre- or post-RoPE as rope_mode says)."""
    for name, moment in (("key", key_moment), ("value", value_moment)):
        if moment.dim() != 3 or moment.shape[1] != moment.shape[2]:
            raise ValueError(f"{name} moment must be [heads, D, D], got shape {tuple(moment.shape)}")
    if key_moment.shape != value_moment.shape:
        raise ValueError(f"key and value moments differ: {tuple(key_moment.shape)} vs {tuple(value_moment.shape)}")
    heads, dim, _ = key_moment.shape
    for name, ranks in (("key", key_ranks), ("value", value_ranks)):
        if len(ranks) != heads:
            raise ValueError(f"{len(ranks)} {name} ranks for {heads} KV heads")
        for rank in ranks:
            if not 1 <= rank <= dim:
                raise ValueError(f"{name} rank {rank} must be in 1..head_dim={dim}")
    key_down, key_up = _fit_side(key_moment, key_ranks)
    value_down, value_up = _fit_side(value_moment, value_ranks)
    return KVProjection(key_down, key_up, tuple(key_ranks), value_down, value_up, tuple(value_ranks), rope_mode)


def quantize_latent(
    latent: torch.Tensor, bits: int, group_size: int = LATENT_GROUP, scale_bits: int = 32
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(codes, scales [..., ceil(R / group_size)]): symmetric absmax per token and group of latent channels.

    int8 codes, or int4 packed two per byte (offset 8, even channel in the low nibble); bits=16
    returns the float16 latent and no scales. The scales are float32, or float16 with scale_bits=16
    (the codes are then rounded against the stored float16 scale).
    """
    if bits not in LATENT_BITS:
        raise ValueError(f"latent bits must be one of {LATENT_BITS}, got {bits}")
    if group_size < 1:
        raise ValueError(f"latent group size must be positive, got {group_size}")
    check_scale_bits(scale_bits)
    if bits == 16:
        return latent.to(torch.float16), None
    qmax = _QMAX[bits]
    width = latent.shape[-1]
    groups = -(-width // group_size)
    padded = torch.nn.functional.pad(latent.float(), (0, groups * group_size - width))
    grouped = padded.unflatten(-1, (groups, group_size))
    scale = (grouped.abs().amax(-1) / qmax).to(SCALE_BITS[scale_bits])
    if not bool(torch.isfinite(scale).all()):
        raise ValueError(f"a latent group's absmax / {qmax} does not fit {SCALE_BITS[scale_bits]} scales "
                         "(non-finite or too large): use scale_bits=32")
    # a group of zeros (or one whose scale underflows float16) keeps scale 1: its codes are 0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    codes = torch.clamp(torch.round(grouped / scale.float()[..., None]), -qmax, qmax).to(torch.int8).flatten(-2)[..., :width]
    if bits == 8:
        return codes.contiguous(), scale
    if width % 2:
        codes = torch.nn.functional.pad(codes, (0, 1))
    nibbles = (codes + 8).to(torch.uint8)
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4), scale


def dequantize_latent(
    codes: torch.Tensor, scale: torch.Tensor | None, bits: int, width: int, group_size: int = LATENT_GROUP
) -> torch.Tensor:
    """float32 latent [..., width] from quantize_latent's output."""
    if bits == 16:
        return codes.float()
    if bits == 8:
        values = codes.float()
    else:
        low = (codes & 15).to(torch.int16) - 8
        high = (codes >> 4).to(torch.int16) - 8
        values = torch.stack((low, high), dim=-1).flatten(-2)[..., :width].float()
    return values * scale.float().repeat_interleave(group_size, dim=-1)[..., :width]


def rotate(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """RoPE in the rotate-half convention (pairs i, i + D/2) at integer positions: x [..., N, D], positions [..., N]."""
    angles = positions.to(torch.float32)[..., None] * inv_freq.to(device=x.device, dtype=torch.float32)
    cos, sin = angles.cos(), angles.sin()
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


LatentBits = int | tuple[tuple[int, int], ...]  # one precision, or mixed segments ((width, bits), ...)


def latent_segments(bits: LatentBits, width: int) -> list[tuple[int, int]]:
    """(width, bits) segments covering a latent of `width` channels: one for a single precision; for mixed segments
    ((w, b), ...) the last one takes every channel past the others (a head's zero channels beyond its rank)."""
    if isinstance(bits, int):
        return [(width, bits)]
    if not bits or any(w < 1 for w, _ in bits):
        raise ValueError(f"mixed latent segments {bits!r}: need (width >= 1, bits) pairs")
    head = [(int(w), int(b)) for w, b in bits[:-1]]
    rest = width - sum(w for w, _ in head)
    if rest < 1 and width > 1:
        raise ValueError(f"mixed latent segments {bits!r} leave no channel of {width} for the last one")
    return head + [(max(rest, 1), int(bits[-1][1]))]


@dataclass
class LatentPart:
    """The last `width` latent channels of one side stored at their own precision: codes [B, Hkv, N, width or
    width/2] and scales (None at 16 bits)."""

    codes: torch.Tensor
    scale: torch.Tensor | None
    bits: int
    width: int


@dataclass
class LatentKVCache:
    """A latent KV cache: codes [B, Hkv, N, R or R/2], scales [B, Hkv, N, R / group] (None at 16 bits), key positions [B, N].

    Keys are stored at `bits`, values at `value_bits` (None: the same). With a tail (mixed precision), a side's
    codes and scales hold its first R − tail.width channels and the tail the rest, each with its own scales."""

    key_codes: torch.Tensor
    key_scale: torch.Tensor | None
    value_codes: torch.Tensor
    value_scale: torch.Tensor | None
    positions: torch.Tensor
    bits: int
    group_size: int = LATENT_GROUP
    value_bits: int | None = None
    key_tail: LatentPart | None = None
    value_tail: LatentPart | None = None

    def nbytes(self) -> int:
        """Bytes held (codes and scales; positions excluded, a dense cache needs them too)."""
        parts = [self.key_codes, self.key_scale, self.value_codes, self.value_scale]
        for tail in (self.key_tail, self.value_tail):
            if tail is not None:
                parts += [tail.codes, tail.scale]
        return sum(t.numel() * t.element_size() for t in parts if t is not None)

    def side(self, keys: bool) -> tuple[torch.Tensor, torch.Tensor | None, int, LatentPart | None]:
        """(codes, scales, bits, tail) of the keys or of the values."""
        if keys:
            return self.key_codes, self.key_scale, self.bits, self.key_tail
        return self.value_codes, self.value_scale, self.bits if self.value_bits is None else self.value_bits, \
            self.value_tail


def _encode_side(latent: torch.Tensor, bits: LatentBits, group_size: int,
                 scale_bits: int) -> tuple[torch.Tensor, torch.Tensor | None, int, LatentPart | None]:
    """(codes, scales, bits, tail) of one side's latent: a single precision, or two mixed segments."""
    segments = latent_segments(bits, latent.shape[-1])
    if len(segments) > 2:
        raise ValueError(f"mixed latent segments {bits!r}: the cache stores at most two precisions per side")
    (head_width, head_bits), tail = segments[0], segments[1:]
    codes, scale = quantize_latent(latent[..., :head_width], head_bits, group_size, scale_bits)
    if not tail:
        return codes, scale, head_bits, None
    tail_width, tail_bits = tail[0]
    tail_codes, tail_scale = quantize_latent(latent[..., head_width:], tail_bits, group_size, scale_bits)
    return codes, scale, head_bits, LatentPart(tail_codes, tail_scale, tail_bits, tail_width)


def _decode_side(cache: LatentKVCache, keys: bool, width: int) -> torch.Tensor:
    """float32 latent [..., width] of one side (head part and tail)."""
    codes, scale, bits, tail = cache.side(keys)
    head = width - (tail.width if tail is not None else 0)
    latent = dequantize_latent(codes, scale, bits, head, cache.group_size)
    if tail is None:
        return latent
    return torch.cat((latent, dequantize_latent(tail.codes, tail.scale, tail.bits, tail.width, cache.group_size)), -1)


def encode_kv(
    projection: KVProjection, keys: torch.Tensor, values: torch.Tensor, positions: torch.Tensor, bits: LatentBits = 16,
    group_size: int = LATENT_GROUP, scale_bits: int = 32, value_bits: LatentBits | None = None,
) -> LatentKVCache:
    """Project keys/values [B, Hkv, N, D] into a latent cache (keys pre-RoPE if rope_mode='pre', else rotated).

    Keys at `bits`, values at `value_bits` (default: bits); either may be mixed segments ((w, b), (w2, b2)):
    the first w latent channels at b bits, the rest at b2 (kv_budget's choices such as 64x8+192x4)."""
    if keys.shape != values.shape or keys.dim() != 4:
        raise ValueError(f"keys and values must both be [B, Hkv, N, D], got {tuple(keys.shape)} and {tuple(values.shape)}")
    if keys.shape[1] != projection.kv_heads or keys.shape[3] != projection.head_dim:
        raise ValueError(f"keys have {keys.shape[1]} heads of dim {keys.shape[3]}; the projection expects "
                         f"{projection.kv_heads} heads of dim {projection.head_dim}")
    if tuple(positions.shape) != (keys.shape[0], keys.shape[2]):
        raise ValueError(f"positions must be [B, N] = {(keys.shape[0], keys.shape[2])}, got {tuple(positions.shape)}")
    down_k = projection.key_down.to(keys.device)
    down_v = projection.value_down.to(keys.device)
    key_latent = torch.einsum("bhnd,hdr->bhnr", keys.float(), down_k)
    value_latent = torch.einsum("bhnd,hdr->bhnr", values.float(), down_v)
    key_codes, key_scale, key_bits, key_tail = _encode_side(key_latent, bits, group_size, scale_bits)
    value_codes, value_scale, v_bits, value_tail = _encode_side(
        value_latent, bits if value_bits is None else value_bits, group_size, scale_bits)
    return LatentKVCache(key_codes, key_scale, value_codes, value_scale, positions.to(torch.int32), key_bits, group_size,
                         value_bits=None if v_bits == key_bits else v_bits, key_tail=key_tail, value_tail=value_tail)


def _check_decode(q: torch.Tensor, cache: LatentKVCache, projection: KVProjection, inv_freq: torch.Tensor | None):
    bsz, hq, dim = check_query(q)
    if not isinstance(cache, LatentKVCache):
        raise ValueError(f"cache must be a LatentKVCache, got {type(cache).__name__}")
    if cache.key_codes.dim() != 4 or cache.key_codes.shape[0] != bsz:
        raise ValueError(f"cache batch {tuple(cache.key_codes.shape)[:1]} does not match q batch {bsz}")
    hkv = cache.key_codes.shape[1]
    if hkv != projection.kv_heads:
        raise ValueError(f"cache has {hkv} KV heads but the projection has {projection.kv_heads}")
    check_heads(hq, hkv)
    if dim != projection.head_dim:
        raise ValueError(f"q head_dim {dim} does not match the projection's {projection.head_dim}")
    if projection.rope_mode == "pre":
        if inv_freq is None or tuple(inv_freq.shape) != (dim // 2,):
            raise ValueError(f"rope_mode 'pre' needs inv_freq of shape ({dim // 2},) to rotate reconstructed keys")
    return bsz, hq, hkv, cache.key_codes.shape[2], dim


def lowrank_decode_reference(
    q: torch.Tensor, cache: LatentKVCache, projection: KVProjection, inv_freq: torch.Tensor | None = None,
    lengths: torch.Tensor | Sequence[int] | None = None, scale: float | None = None,
) -> torch.Tensor:
    """Torch reference: reconstruct K̂ (rotated at its positions in 'pre' mode) and V̂, then exact attention; q is rotated."""
    bsz, hq, hkv, n_keys, dim = _check_decode(q, cache, projection, inv_freq)
    lengths = check_lengths(lengths, bsz, n_keys).to(q.device)
    scale = dim**-0.5 if scale is None else scale
    device = q.device
    key_latent = _decode_side(cache, True, projection.key_up.shape[1])
    value_latent = _decode_side(cache, False, projection.value_up.shape[1])
    keys = torch.einsum("bhnr,hrd->bhnd", key_latent, projection.key_up.to(device))
    if projection.rope_mode == "pre":
        keys = rotate(keys, cache.positions[:, None, :].to(device), inv_freq)
    values = torch.einsum("bhnr,hrd->bhnd", value_latent, projection.value_up.to(device))
    group = hq // hkv
    scores = torch.einsum("bhd,bhnd->bhn", q.float(), keys.repeat_interleave(group, dim=1)) * scale
    visible = torch.arange(n_keys, device=device)[None, None, :] < lengths[:, None, None]
    probs = torch.softmax(scores.masked_fill(~visible, -torch.inf), dim=-1)
    return torch.einsum("bhn,bhnd->bhd", probs, values.repeat_interleave(group, dim=1)).to(q.dtype)


def _tail_args(tail: LatentPart | None) -> tuple[torch.Tensor, torch.Tensor | None, int, int] | None:
    return None if tail is None else (tail.codes, tail.scale, tail.bits, tail.width)


def lowrank_decode_attention(
    q: torch.Tensor, cache: LatentKVCache, projection: KVProjection, inv_freq: torch.Tensor | None = None,
    lengths: torch.Tensor | Sequence[int] | None = None, *, scale: float | None = None,
    kernel: str = "auto", block_n: int = 32, chunk: int | None = None,
) -> torch.Tensor:
    """Decode attention on a latent cache: q [B, Hq, D] (RoPE applied), lengths[b] valid keys per sequence."""
    bsz, hq, hkv, n_keys, dim = _check_decode(q, cache, projection, inv_freq)
    lengths = check_lengths(lengths, bsz, n_keys)
    scale = dim**-0.5 if scale is None else float(scale)

    def run_triton():
        from codesign.kernels.lowrank_kv import lowrank_decode

        return lowrank_decode(
            q.contiguous(), cache.key_codes.contiguous(), cache.key_scale, cache.value_codes.contiguous(),
            cache.value_scale, cache.positions.to(q.device).contiguous(),
            projection.key_up.to(q.device).contiguous(), projection.value_up.to(q.device).contiguous(),
            None if inv_freq is None else inv_freq.to(device=q.device, dtype=torch.float32).contiguous(),
            lengths.to(device=q.device, dtype=torch.int32), bits=cache.bits, group_size=cache.group_size,
            rope=projection.rope_mode == "pre", scale=scale, block_n=block_n, chunk=chunk,
            value_bits=cache.value_bits, key_tail=_tail_args(cache.key_tail), value_tail=_tail_args(cache.value_tail),
        )

    def run_reference():
        return lowrank_decode_reference(q, cache, projection, inv_freq, lengths, scale)

    return run_kernel_or_reference(kernel, q, run_triton, run_reference, "attention")
