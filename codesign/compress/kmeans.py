"""Non-uniform (k-means / Lloyd–Max) scalar quantization with per-group absmax scaling."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.compress.formats import check_bits, check_group_size, pack_codes
from codesign.compress.qtensor import ScalarQuantizedWeight
from codesign.compress.registry import register_quantizer
from codesign.compress.validate import check_weight

__all__ = ["KMeansConfig", "lloyd_max", "nearest_level", "group_absmax", "quantize_kmeans"]


@dataclass(frozen=True)
class KMeansConfig:
    """k-means weight quantization.

    bits: code width, 1..8 (1–4 are the intended range).
    group_size: weights per absmax scale along the input dimension; a multiple of 8 dividing K.
    codebook: "layer" (one codebook of 2**bits levels per matrix) or "group" (one per group).
    iterations: Lloyd iterations at most; they stop early once no code changes.
    refits: rounds of refitting codes, group scales and levels to the weights after Lloyd.
    """

    bits: int = 4
    group_size: int = 64
    codebook: str = "layer"
    iterations: int = 25
    refits: int = 4

    def __post_init__(self) -> None:
        check_bits(self.bits)
        if self.codebook not in ("layer", "group"):
            raise ValueError(f"codebook must be 'layer' or 'group', got {self.codebook!r}")
        if self.iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {self.iterations}")
        if self.refits < 0:
            raise ValueError(f"refits must be >= 0, got {self.refits}")


def nearest_level(values: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """Index of the nearest of the sorted `levels` [G, C] for each of `values` [G, n] (int64)."""
    bounds = ((levels[:, 1:] + levels[:, :-1]) / 2).contiguous()
    if values.numel() * bounds.shape[1] > (1 << 22):
        return torch.searchsorted(bounds, values.contiguous())
    # small problems: counting the bounds below each value beats searchsorted's fixed cost on CPU
    codes = torch.zeros(values.shape, dtype=torch.long, device=values.device)
    for j in range(bounds.shape[1]):
        codes += values > bounds[:, j : j + 1]
    return codes


def _quantile_init(values: torch.Tensor, n_levels: int) -> torch.Tensor:
    ordered = values.sort(dim=1).values
    n = values.shape[1]
    at = ((torch.arange(n_levels, device=values.device) + 0.5) * n / n_levels).long().clamp(max=n - 1)
    return ordered[:, at]


def lloyd_max(
    values: torch.Tensor, n_levels: int, iterations: int = 25, init: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sorted Lloyd–Max levels [G, n_levels] minimizing squared error of each row of values [G, n].

    All rows iterate together on their sorted values: the level midpoints cut each row into
    contiguous runs (one searchsorted), whose means come from prefix sums. Starts from sorted `init` [G or 1, n_levels] when
    given (Lloyd never increases the error of its start), else from the sample quantiles.
    weights: non-negative [G, n] weights of the values (the error is sum weight * (value - level)^2).
    """
    if values.dim() != 2:
        raise ValueError(f"values must be 2-D [groups, n], got {values.dim()}-D")
    values = values.float()
    rows = values.shape[0]
    if init is None:
        levels = _quantile_init(values, n_levels)
    else:
        levels = init.float().expand(rows, n_levels).sort(dim=1).values
    # Sorted once, each row's values make every level a contiguous run: one searchsorted of the
    # midpoints gives the runs, float64 prefix sums give their sums, with no pass over the values.
    ordered, index = values.sort(dim=1)
    ordered = ordered.contiguous()
    mass = None if weights is None else weights.double().expand_as(values).gather(1, index)
    prefix = torch.nn.functional.pad((ordered.double() if mass is None else ordered.double() * mass).cumsum(dim=1), (1, 0))
    total = None if mass is None else torch.nn.functional.pad(mass.cumsum(dim=1), (1, 0))
    n = ordered.shape[1]
    previous = None
    for _ in range(iterations):
        bounds = ((levels[:, 1:] + levels[:, :-1]) / 2).contiguous()
        # a value equal to a midpoint goes to the lower level, as in nearest_level
        cuts = torch.searchsorted(ordered, bounds, right=True)
        if previous is not None and torch.equal(cuts, previous):
            break
        previous = cuts
        edges = torch.cat([torch.zeros_like(cuts[:, :1]), cuts, torch.full_like(cuts[:, :1], n)], dim=1)
        counts = edges[:, 1:] - edges[:, :-1]
        sums = prefix.gather(1, edges[:, 1:]) - prefix.gather(1, edges[:, :-1])
        if total is not None:  # weighted means; a run of zero weight counts as empty
            masses = total.gather(1, edges[:, 1:]) - total.gather(1, edges[:, :-1])
            counts = torch.where(masses > 0, counts, torch.zeros_like(counts))
            means = (sums / masses.clamp(min=1e-300)).float()
        else:
            means = (sums / counts.clamp(min=1)).float()
        # an empty level keeps its place; 1-D Lloyd keeps levels ordered, the sort guards ties
        levels = torch.where(counts > 0, means, levels).sort(dim=1).values
    return levels


def group_absmax(weight: torch.Tensor, group_size: int) -> torch.Tensor:
    """[N, K / group_size] absmax per group, fp16-rounded, with all-zero groups given scale 1."""
    n, k = weight.shape
    amax = weight.float().view(n, k // group_size, group_size).abs().amax(dim=2)
    amax = torch.where(amax > 0, amax, torch.ones_like(amax))
    return amax.to(torch.float16)


def _assign(units: torch.Tensor, book: torch.Tensor, per_layer: bool) -> torch.Tensor:
    """Codes [R, G] of normalized values units [R, G] against book [1 or R, C]."""
    if per_layer:
        return nearest_level(units.reshape(1, -1), book).view(units.shape)
    return nearest_level(units, book)


def _refit_book(grouped: torch.Tensor, scale: torch.Tensor, codes: torch.Tensor, book: torch.Tensor) -> torch.Tensor:
    """Levels minimizing sum (w - s*c)^2 for fixed codes and scales: c = sum(s*w) / sum(s^2) per level."""
    rows, n_levels = book.shape
    base = (torch.arange(rows, device=book.device) * n_levels)[:, None] if rows > 1 else 0
    flat = (codes + base).flatten()
    weights = scale.expand_as(grouped)
    num = torch.zeros(rows * n_levels, device=book.device).index_add_(0, flat, (weights * grouped).flatten())
    den = torch.zeros(rows * n_levels, device=book.device).index_add_(0, flat, (weights * weights).flatten())
    refit = torch.where(den > 0, num / den.clamp(min=1e-30), book.flatten())
    return refit.view(rows, n_levels).sort(dim=1).values


@register_quantizer("kmeans", KMeansConfig)
def quantize_kmeans(weight: torch.Tensor, config: KMeansConfig = KMeansConfig()) -> ScalarQuantizedWeight:
    """Quantize W[N, K] to k-means codes with per-group scales.

    Lloyd–Max on the absmax-normalized weights gives the codebook; then `refits` rounds of exact
    block-coordinate descent on the weight-space error: codes (nearest level), group scales
    (least squares) and levels (scale-weighted means), so no round increases the error.
    """
    check_weight(weight)
    n, k = weight.shape
    check_group_size(config.group_size, k)
    groups = k // config.group_size
    per_layer = config.codebook == "layer"
    grouped = weight.float().reshape(n * groups, config.group_size)
    scale = group_absmax(weight, config.group_size).float().reshape(-1, 1)
    units = grouped / scale
    # per-group codebooks start from the layer's, so they never end worse than a layer codebook
    book = lloyd_max(units.reshape(1, -1), 1 << config.bits, config.iterations)
    if not per_layer:
        book = lloyd_max(units, 1 << config.bits, config.iterations, init=book)
    for _ in range(config.refits):
        codes = _assign(grouped / scale, book, per_layer)
        values = book[0][codes] if per_layer else torch.gather(book, 1, codes)
        num = (values * grouped).sum(dim=1, keepdim=True)
        den = (values * values).sum(dim=1, keepdim=True)
        fitted = (num / den.clamp(min=1e-30)).to(torch.float16).float()
        scale = torch.where((num > 0) & (fitted > 0), fitted, scale)
        book = _refit_book(grouped, scale, codes, book)
    # fp16 rounding is monotone, so the stored codebook stays sorted for the nearest-level search
    book16 = book.to(torch.float16)
    codes = _assign(grouped / scale, book16.float(), per_layer).view(n, k)
    codebook = book16[0].contiguous() if per_layer else book16.view(n, groups, -1).contiguous()
    return ScalarQuantizedWeight(
        packed=pack_codes(codes.to(torch.uint8), config.bits),
        scales=scale.view(n, groups).to(torch.float16).contiguous(),
        codebook=codebook,
        bits=config.bits,
        group_size=config.group_size,
        shape=(n, k),
        method="kmeans",
    )
