"""Non-uniform (k-means / Lloyd–Max) scalar quantization with per-group scales and, by default, zero points.

The default grid (`zero_point=True`) starts from asymmetric round to nearest: each group's [min, max]
range, shrunk by the clip ratio of least squared error, gives an fp16 step and a uint8 zero point, and
the levels are the integers 0..2**b - 1, so that start is AsymIntConfig's grid or better. Lloyd–Max then
moves the levels (one codebook per layer by default): W = (codebook[code] - zero) * step. At 3 bits
(`exact_zero`, the default there) 0.0 stays on every group's grid: the levels are rounded to 1/32 of a level at
3 bits (256 / 2**bits in general), each group's zero point is its level nearest the start's integer zero point, and refits fit the
steps; a weight that rounds to zero stays exactly zero, as in round to nearest; and Lloyd weighs each weight's
error by 1 + 3 |w| / (its group's range) (`magnitude_weight`). Without them (`exact_zero=False`)
rounds of exact block-coordinate descent refit codes, each group's step and fractional zero point, and the
levels. No refit increases the weight's squared error, and the stored (fp16) result is kept only if it is no
worse than the uniform start, so the grid's error never exceeds that of min-max round to nearest.
`zero_point=False` is the symmetric grid
(absmax-normalized weights, no zero point, a quarter bit less storage at group 64; with `exact_zero` its level
nearest 0 is 0); by default
(`zero_point=None`) each layer keeps whichever of the two grids has the lower squared error.
"""

from __future__ import annotations

import dataclasses
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
    refits: rounds of refitting codes, group scales (and zero points) and levels to the weights after Lloyd.
    zero_point: None (the default): each layer keeps the grid of lower squared error of True and False; True:
        asymmetric levels with a uint8 zero point per group, started from min-max round to nearest; False:
        absmax-normalized symmetric levels without one.
    lloyd: move the levels by Lloyd-Max (True) or keep them uniform (False; with zero points only: the refits
        then fit codes, steps and zero points, a min-max RTN with fractional zero points refined by least squares).
    clip_ratios: with zero_point, the candidate shrinks of each group's [min, max] range for the start
        (the best per group wins; 1.0 must be among them, so the start is never worse than plain min-max).
    exact_zero: keep 0.0 on every group's grid (True): the zero point is one of the levels and the symmetric
        codebook's level nearest 0 is 0. Weights that round to zero then stay exactly zero, as in integer round
        to nearest; a grid fitted to squared error alone moves them all by one offset, which a large activation
        on that input multiplies. False: fractional zero points and free levels, the least squared error. The
        default None means True at 3 bits only, as chosen on validation slices of the train split
        (benchmarks/kmeans_grid_validation.py): at 3 bits 0.0 kept exact scored better on SmolLM2 and Qwen, at
        4 bits worse on SmolLM2 by far more than it gained on Qwen; at 1 and 2 bits a level spent on 0 costs a
        quarter of the levels or more; above 4 bits it was not measured and the least squared error is kept.
    keep_ends: keep the lowest and highest level at the ends of each group's (clipped) range, as round to
        nearest does (Lloyd moves the others; the symmetric grid keeps -1 and 1 of its absmax-normalized units).
    magnitude_weight: m >= 0; Lloyd (and the level refits) weigh each weight's squared error by 1 + m * r, r its
        distance from 0 as a fraction of its group's range (of its absmax on the symmetric grid; 0 at zero, at most
        1), pulling levels toward the large weights that round to nearest keeps close. The default None means 3
        at 3 bits only, as chosen on the validation slices: at 3 bits it scored better on SmolLM2 and Qwen, at 4
        bits worse on SmolLM2; other widths were not measured.
    """

    bits: int = 4
    group_size: int = 64
    codebook: str = "layer"
    iterations: int = 25
    refits: int = 4
    zero_point: bool | None = None
    lloyd: bool = True
    clip_ratios: tuple[float, ...] = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7)
    exact_zero: bool | None = None
    keep_ends: bool = False
    magnitude_weight: float | None = None

    def __post_init__(self) -> None:
        check_bits(self.bits)
        if self.codebook not in ("layer", "group"):
            raise ValueError(f"codebook must be 'layer' or 'group', got {self.codebook!r}")
        if not isinstance(self.lloyd, bool) or (not self.lloyd and self.zero_point is not True):
            raise ValueError(f"lloyd=False (uniform levels) needs zero_point=True, got lloyd={self.lloyd!r}, "
                             f"zero_point={self.zero_point!r}")
        if self.zero_point is not None and not isinstance(self.zero_point, bool):
            raise ValueError(f"zero_point must be None, True or False, got {self.zero_point!r}")
        if (not isinstance(self.clip_ratios, tuple) or 1.0 not in self.clip_ratios
                or any(not isinstance(r, (int, float)) or not 0 < r <= 1 for r in self.clip_ratios)):
            raise ValueError(f"clip_ratios must be a tuple of values in (0, 1] that includes 1.0, got {self.clip_ratios!r}")
        if self.exact_zero is not None and not isinstance(self.exact_zero, bool):
            raise ValueError(f"exact_zero must be None, True or False, got {self.exact_zero!r}")
        if not isinstance(self.keep_ends, bool):
            raise ValueError(f"keep_ends must be True or False, got {self.keep_ends!r}")
        if self.magnitude_weight is not None and (isinstance(self.magnitude_weight, bool)
                                                  or not isinstance(self.magnitude_weight, (int, float))
                                                  or not self.magnitude_weight >= 0):
            raise ValueError(f"magnitude_weight must be None or a number >= 0, got {self.magnitude_weight!r}")
        if self.iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {self.iterations}")
        if self.refits < 0:
            raise ValueError(f"refits must be >= 0, got {self.refits}")

    @property
    def keeps_zero(self) -> bool:
        """Whether 0.0 is on every group's grid (exact_zero, resolved: None means at 3 bits only)."""
        return self.bits == 3 if self.exact_zero is None else self.exact_zero

    @property
    def magnitude(self) -> float:
        """The magnitude_weight in force (resolved: None means 3.0 at 3 bits, 0.0 at the other widths)."""
        if self.magnitude_weight is None:
            return 3.0 if self.bits == 3 else 0.0
        return float(self.magnitude_weight)


def nearest_level(values: torch.Tensor, levels: torch.Tensor) -> torch.Tensor:
    """Index of the nearest of the sorted `levels` [G, C] for each of `values` [G, n] (int64)."""
    bounds = ((levels[:, 1:] + levels[:, :-1]) / 2).contiguous()
    if values.numel() * bounds.shape[1] > (1 << 22) and bounds.shape[1] > 15:
        return torch.searchsorted(bounds, values.contiguous())
    # small problems and codebooks of up to 16 levels: counting the bounds below each value (in uint8) beats
    # searchsorted on CPU
    codes = torch.zeros(values.shape, dtype=torch.uint8, device=values.device)
    for j in range(bounds.shape[1]):
        codes += values > bounds[:, j : j + 1]
    return codes.long()


def _quantile_init(values: torch.Tensor, n_levels: int) -> torch.Tensor:
    ordered = values.sort(dim=1).values
    n = values.shape[1]
    at = ((torch.arange(n_levels, device=values.device) + 0.5) * n / n_levels).long().clamp(max=n - 1)
    return ordered[:, at]


def lloyd_max(
    values: torch.Tensor, n_levels: int, iterations: int = 25, init: torch.Tensor | None = None,
    weights: torch.Tensor | None = None, fixed_ends: bool = False,
) -> torch.Tensor:
    """Sorted Lloyd–Max levels [G, n_levels] minimizing squared error of each row of values [G, n].

    All rows iterate together on their sorted values: the level midpoints cut each row into
    contiguous runs (one searchsorted), whose means come from prefix sums. Starts from sorted `init` [G or 1, n_levels] when
    given (Lloyd never increases the error of its start), else from the sample quantiles.
    weights: non-negative [G, n] weights of the values (the error is sum weight * (value - level)^2).
    fixed_ends: keep the lowest and highest level where they start (the others move as Lloyd moves them).
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
        moved = torch.where(counts > 0, means, levels)
        if fixed_ends:
            moved = _with_ends(moved, levels)
        levels = moved.sort(dim=1).values
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
    if config.zero_point:
        return _quantize_asymmetric(weight, config)
    if config.zero_point is None:
        # the grid of lower error: zero points, or the symmetric one (a quarter bit less storage at group 64)
        asymmetric = _quantize_asymmetric(weight, config)
        symmetric = quantize_kmeans(weight, dataclasses.replace(config, zero_point=False))
        errors = [float(((q.dequantize() - weight.float()) ** 2).sum()) for q in (symmetric, asymmetric)]
        return symmetric if errors[0] <= errors[1] else asymmetric
    groups = k // config.group_size
    per_layer = config.codebook == "layer"
    grouped = weight.float().reshape(n * groups, config.group_size)
    scale = group_absmax(weight, config.group_size).float().reshape(-1, 1)
    units = grouped / scale
    # per-group codebooks start from the layer's, so they never end worse than a layer codebook
    ends = torch.linspace(-1, 1, 1 << config.bits, device=weight.device)[None] if config.keep_ends else None
    lean = 1 + config.magnitude * units.abs() if config.magnitude else None
    book = lloyd_max(units.reshape(1, -1), 1 << config.bits, config.iterations, init=ends, fixed_ends=config.keep_ends,
                     weights=None if lean is None else lean.reshape(1, -1))
    if not per_layer:
        book = lloyd_max(units, 1 << config.bits, config.iterations, init=book, fixed_ends=config.keep_ends, weights=lean)

    def pin(levels: torch.Tensor) -> torch.Tensor:
        if ends is not None:
            levels = _with_ends(levels, ends)
        return _pin_zero(levels) if config.keeps_zero else levels
    book = pin(book)
    for _ in range(config.refits):
        codes = _assign(grouped / scale, book, per_layer)
        values = book[0][codes] if per_layer else torch.gather(book, 1, codes)
        num = (values * grouped).sum(dim=1, keepdim=True)
        den = (values * values).sum(dim=1, keepdim=True)
        fitted = (num / den.clamp(min=1e-30)).to(torch.float16).float()
        scale = torch.where((num > 0) & (fitted > 0), fitted, scale)
        book = pin(_refit_book(grouped, scale, codes, book))
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


def _pin_zero(book: torch.Tensor) -> torch.Tensor:
    """The sorted levels [R, C] with each row's level nearest 0 set to 0 (the order is kept)."""
    return book.scatter(1, book.abs().argmin(dim=1, keepdim=True), 0.0)


def _stored_step(step: torch.Tensor, fine: int) -> torch.Tensor:
    """The step as stored (fp16 of step / fine, times fine), 1 where that is not positive (a constant group)."""
    stored = (step / fine).to(torch.float16).float() * fine
    return torch.where(stored > 0, stored, torch.ones_like(stored))


def _minmax_start(grouped: torch.Tensor, top: int, fine: int, ratios: tuple[float, ...], exact_zero: bool):
    """Per group [R, 1]: step, zero point (a multiple of 1 / fine) and squared error of the best min-max RTN.

    Candidates: each clip ratio of the [min, max] range (shrunk toward zero, as GPTQ's and AWQ's clip
    search), with the integer zero point of AsymInt (0 on the grid) and, unless exact_zero, the fractional
    one that makes the levels span the range.
    """
    low, high = grouped.amin(dim=1, keepdim=True), grouped.amax(dim=1, keepdim=True)
    best_err = torch.full_like(low, float("inf"))
    best_step, best_zero = torch.ones_like(low), torch.zeros_like(low)
    for ratio in ratios:
        step = _stored_step((high - low) * ratio / top, fine)
        zeros = [torch.round(-low * ratio / step).clamp(0, top)]
        if not exact_zero:
            zeros.append((torch.round(-low * ratio / step * fine) / fine).clamp(0, 255 / fine))
        for zero in zeros:
            codes = torch.round(grouped / step + zero).clamp(0, top)
            err = _group_errors(grouped, codes, step, zero)
            better = err < best_err
            best_err = torch.where(better, err, best_err)
            best_step = torch.where(better, step, best_step)
            best_zero = torch.where(better, zero, best_zero)
    return best_step, best_zero, best_err


def _group_errors(grouped: torch.Tensor, values: torch.Tensor, step: torch.Tensor, zero: torch.Tensor | float) -> torch.Tensor:
    return (((values - zero) * step - grouped) ** 2).sum(dim=1, keepdim=True)


def _quantize_asymmetric(weight: torch.Tensor, config: KMeansConfig) -> ScalarQuantizedWeight:
    """The zero-point grid: min-max RTN start, Lloyd levels in code units, then exact block-coordinate refits.

    Stored with AsymInt's layout (fp16 scale, uint8 zero point per group, fp16 codebook), but in units of
    1 / fine of a level (fine = 256 / 2**bits): codebook = fine * level, zero = fine * z, scale = step / fine,
    so the zero point takes fractional values and the levels can span a group's range exactly.
    """
    n, k = weight.shape
    groups, levels = k // config.group_size, 1 << config.bits
    top, per_layer, fine = levels - 1, config.codebook == "layer", 256 >> config.bits
    grouped = weight.float().reshape(n * groups, config.group_size)
    step, zero, start_err = _minmax_start(grouped, top, fine, config.clip_ratios, config.keeps_zero)
    start_step, start_zero = step, zero
    uniform = torch.arange(levels, dtype=torch.float32, device=weight.device)[None]
    # in code units u = w / step + zero the error of a weight is step^2 (u - level)^2: Lloyd weighted by step^2
    units = grouped / step + zero
    mass = _lloyd_mass(grouped, step, top, config.magnitude)
    ends = config.keep_ends
    book = (lloyd_max(units.reshape(1, -1), levels, config.iterations, init=uniform, weights=mass.reshape(1, -1),
                      fixed_ends=ends) if config.lloyd else uniform)
    if not per_layer and config.lloyd:
        book = lloyd_max(units, levels, config.iterations, init=book, weights=mass, fixed_ends=ends)
    elif not per_layer:
        book = uniform.expand(n * groups, levels)
    if config.keeps_zero:
        # levels on the stored 1/fine grid and each group's zero point on its level nearest the start's, so
        # that level dequantizes to exactly 0; the refits then fit the steps only (a level refit would move
        # the zero points off their levels)
        book = (torch.round(book * fine) / fine).clamp(0, 255 / fine)
        at = _assign(zero, book, per_layer)
        zero = book[0][at] if per_layer else torch.gather(book, 1, at)
    for _ in range(config.refits if config.keeps_zero else 0):
        codes = _assign(grouped / step + zero, book, per_layer)
        offsets = (book[0][codes] if per_layer else torch.gather(book, 1, codes)) - zero
        err = _group_errors(grouped, offsets, step, 0)
        num, den = (offsets * grouped).sum(dim=1, keepdim=True), (offsets * offsets).sum(dim=1, keepdim=True)
        trial_step = _stored_step(torch.where((den > 0) & (num > 0), num / den.clamp(min=1e-30), step), fine)
        step = torch.where(_group_errors(grouped, offsets, trial_step, 0) < err, trial_step, step)
    for _ in range(0 if config.keeps_zero else config.refits):
        codes = _assign(grouped / step + zero, book, per_layer)
        values = book[0][codes] if per_layer else torch.gather(book, 1, codes)
        err = _group_errors(grouped, values, step, zero)
        # least squares w ~ a * level + b per group (a = step, b = -step * zero), the zero point rounded to its
        # grid; a group keeps the new pair only where it lowers the group's error
        mean_v, mean_w = values.mean(dim=1, keepdim=True), grouped.mean(dim=1, keepdim=True)
        var = ((values - mean_v) ** 2).sum(dim=1, keepdim=True)
        slope = ((values - mean_v) * (grouped - mean_w)).sum(dim=1, keepdim=True) / var.clamp(min=1e-30)
        trial_step = _stored_step(torch.where((var > 0) & (slope > 0), slope, step), fine)
        trial_zero = (torch.round((mean_v - mean_w / trial_step) * fine) / fine).clamp(0, 255 / fine)
        better = _group_errors(grouped, values, trial_step, trial_zero) < err
        step, zero = torch.where(better, trial_step, step), torch.where(better, trial_zero, zero)
        # levels: the step^2-weighted mean of the code units assigned to each
        if config.lloyd:
            book = _refit_levels(grouped / step + zero, _lloyd_mass(grouped, step, top, config.magnitude), codes, book)
            if ends:
                book = _with_ends(book, uniform)
    stored = (book * fine).to(torch.float16)
    book = stored.float() / fine
    codes = _assign(grouped / step + zero, book, per_layer)
    values = book[0][codes] if per_layer else torch.gather(book, 1, codes)
    if _group_errors(grouped, values, step, zero).sum() > start_err.sum():
        # fp16 levels can cost a little: never store worse than the uniform start
        step, zero = start_step, start_zero
        stored = (uniform * fine).to(torch.float16).expand(1 if per_layer else n * groups, levels)
        codes = _assign(grouped / step + zero, uniform, True)
    codebook = stored[0].contiguous() if per_layer else stored.reshape(n, groups, levels).contiguous()
    return ScalarQuantizedWeight(
        packed=pack_codes(codes.view(n, k).to(torch.uint8), config.bits),
        scales=(step / fine).view(n, groups).to(torch.float16).contiguous(),
        codebook=codebook,
        bits=config.bits,
        group_size=config.group_size,
        shape=(n, k),
        method="kmeans",
        zeros=torch.round(zero * fine).view(n, groups).to(torch.uint8).contiguous(),
    )


def _with_ends(levels: torch.Tensor, ends: torch.Tensor) -> torch.Tensor:
    """``levels`` [R, C] with its lowest and highest level replaced by those of ``ends`` [R or 1, C'] (keep_ends)."""
    rows = levels.shape[0]
    return torch.cat([ends[:, :1].expand(rows, 1), levels[:, 1:-1], ends[:, -1:].expand(rows, 1)], dim=1)


def _lloyd_mass(grouped: torch.Tensor, step: torch.Tensor, top: int, magnitude_weight: float) -> torch.Tensor:
    """Weights [R, n] of the code-unit errors: step^2, times 1 + m * |w| / (its group's range) with magnitude_weight."""
    mass = (step * step).expand_as(grouped)
    if magnitude_weight:
        mass = mass * (1 + magnitude_weight * (grouped.abs() / (step * top)).clamp(max=1))
    return mass


def _refit_levels(units: torch.Tensor, mass: torch.Tensor, codes: torch.Tensor, book: torch.Tensor) -> torch.Tensor:
    """Levels [1 or R, C] minimizing sum mass * (unit - level)^2 for fixed codes (an empty level stays), sorted."""
    rows, n_levels = book.shape
    base = (torch.arange(units.shape[0], device=book.device) * n_levels)[:, None] if rows > 1 else 0
    flat = (codes + base).flatten()
    num = torch.zeros(rows * n_levels, dtype=torch.float64, device=book.device).index_add_(
        0, flat, (mass * units).flatten().double())
    den = torch.zeros(rows * n_levels, dtype=torch.float64, device=book.device).index_add_(0, flat, mass.flatten().double())
    refit = torch.where(den > 0, num / den.clamp(min=1e-300), book.flatten().double()).float()
    return refit.view(rows, n_levels).sort(dim=1).values
