"""Input checks of the decode-attention APIs: one-line ValueErrors that name the bad value."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["FLOAT_DTYPES", "check_query", "check_heads", "check_lengths", "check_samples"]

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _tensor(t: object, name: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    return t


def check_query(q: torch.Tensor) -> tuple[int, int, int]:
    """q is a floating-point [batch, query heads, head dim] tensor; returns its shape."""
    _tensor(q, "q")
    if q.dim() != 3:
        raise ValueError(f"q must be [batch, heads, head_dim] (one decode query per head), got shape {tuple(q.shape)}")
    if q.dtype not in FLOAT_DTYPES:
        raise ValueError(f"q dtype {q.dtype} is not a floating-point type")
    return tuple(q.shape)  # type: ignore[return-value]


def check_heads(query_heads: int, kv_heads: int) -> int:
    """The GQA group size; query heads must be a positive multiple of the KV heads."""
    if kv_heads <= 0 or query_heads % kv_heads:
        raise ValueError(f"query heads {query_heads} is not a multiple of KV heads {kv_heads}")
    return query_heads // kv_heads


def check_lengths(lengths: torch.Tensor | Sequence[int] | None, batch: int, capacity: int) -> torch.Tensor:
    """Per-sequence key counts as int64 [batch], each in 1..capacity (None: every sequence is full)."""
    if lengths is None:
        return torch.full((batch,), capacity, dtype=torch.int64)
    lengths = torch.as_tensor(lengths).detach().cpu()
    if lengths.dtype.is_floating_point or lengths.dtype == torch.bool or tuple(lengths.shape) != (batch,):
        raise ValueError(f"lengths must be {batch} integers, got {lengths.dtype} of shape {tuple(lengths.shape)}")
    lengths = lengths.to(torch.int64)
    bad = (lengths < 1) | (lengths > capacity)
    if bool(bad.any()):
        i = int(bad.nonzero()[0])
        raise ValueError(f"lengths[{i}] = {int(lengths[i])} is outside 1..{capacity} (the cache holds {capacity} keys)")
    return lengths


def check_samples(n_samples: int | torch.Tensor | Sequence[int], lengths: torch.Tensor) -> torch.Tensor:
    """Samples per sequence as int64 [batch], each in 1..n (its number of keys)."""
    batch = lengths.shape[0]
    if isinstance(n_samples, bool):
        raise ValueError(f"n_samples must be an integer, got {n_samples!r}")
    if isinstance(n_samples, int):
        samples = torch.full((batch,), n_samples, dtype=torch.int64)
    else:
        samples = torch.as_tensor(n_samples).detach().cpu()
        if samples.dtype.is_floating_point or tuple(samples.shape) != (batch,):
            raise ValueError(f"n_samples must be an int or {batch} integers, got shape {tuple(samples.shape)}")
        samples = samples.to(torch.int64)
    bad = (samples < 1) | (samples > lengths)
    if bool(bad.any()):
        i = int(bad.nonzero()[0])
        raise ValueError(f"n_samples S = {int(samples[i])} for sequence {i} must be in 1..n = {int(lengths[i])}")
    return samples
