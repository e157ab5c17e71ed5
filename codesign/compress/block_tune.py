"""Block-wise tuning of a quantized block's stored scales (and k-means levels) against the original block's outputs.

Error feedback fits each layer alone to its own output under its input covariance; the errors of a
block's layers then meet in attention and the gated MLP, which no layer-wise objective sees. With the
codes fixed, every stored group scale (in log space, so it stays positive) and, for a per-layer k-means
codebook, every level are trained by Adam to make the quantized block's output, run on the hidden states
the quantized blocks before it produced, match the original block's output on the original hidden states
(OmniQuant's and EfficientQAT's block objective; here with the codes of error feedback and only the
stored continuous values trained, so the format and its size do not change).

The objective compares the outputs after dividing each token's vector by its RMS ("normalized",
the default), which is what the next block's input norm and the final norm see. A pre-norm model's
residual stream can hold almost all its energy in a few channels (Gemma-3-270M: 95-99 % in 5 of
640 channels in its middle blocks); a plain squared error ("mse") then fits those channels, whose
errors the norms nearly cancel, and neglects the rest. The last calibration
batches (`holdout`) are not trained on: the block keeps the epoch of least error on them, and its
untuned values when no epoch improves on them. Zero points and per-group codebooks stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from codesign.compress.formats import pack_codes, unpack_codes
from codesign.compress.qtensor import ScalarQuantizedWeight

__all__ = ["BlockTuneConfig", "OBJECTIVES", "TunedLinear", "check_objective", "tune_block"]

OBJECTIVES = ("normalized", "mse")


def check_objective(objective: str) -> None:
    """ValueError (one line) unless objective names one of OBJECTIVES."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown block-tune objective {objective!r}: choose one of {', '.join(OBJECTIVES)}")

Forward = Callable[[int], torch.Tensor]


@dataclass(frozen=True)
class BlockTuneConfig:
    """epochs: passes over the training batches; lr: Adam's step on log-scales and levels; holdout: batches kept aside;
    objective: "normalized" (outputs compared after each token's RMS normalization) or "mse" (plain, relative)."""

    epochs: int = 8
    lr: float = 1e-3
    holdout: float = 0.125
    seed: int = 0
    objective: str = "normalized"

    def __post_init__(self) -> None:
        if isinstance(self.epochs, bool) or not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"block-tune epochs must be a positive integer, got {self.epochs!r}")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"block-tune learning rate must lie in (0, 1), got {self.lr!r}")
        if not 0 < self.holdout < 1:
            raise ValueError(f"block-tune holdout must lie in (0, 1), got {self.holdout!r}")
        check_objective(self.objective)


class TunedLinear(torch.nn.Module):
    """A QuantizedLinear's weight as fixed codes times trainable group scales (and trainable per-layer levels).

    It holds only what is stored (uint8 codes, per-group scales, zero points, levels) and, in training, keeps
    only its input for the backward pass: the weight is rebuilt there (:class:`_CodedLinear`), so tuning a
    whole model keeps one layer's float weight at a time rather than several per layer.
    """

    def __init__(self, module: torch.nn.Module) -> None:
        super().__init__()
        weight = module.qweight
        if not isinstance(weight, ScalarQuantizedWeight):
            raise ValueError(f"block tuning needs scalar-grid layers, got {type(weight).__name__}")
        self.source, self.grid = module, weight
        n, k = weight.shape
        self.codes = unpack_codes(weight.packed, weight.bits, k)  # uint8 [N, K]
        self.log_scale = torch.nn.Parameter(weight.scales.float().clamp(min=torch.finfo(torch.float16).tiny).log())
        # per-layer levels train (k-means, with or without zero points); an integer grid's levels stay integers
        train_levels = weight.codebook.dim() == 1 and (weight.zeros is None or weight.method.startswith("kmeans"))
        # the zero points stay as stored; they shift each group's levels
        self.zeros = None if weight.zeros is None else weight.zeros.float()[..., None]  # [N, K / g, 1]
        # levels with zero points are stored in fractions of a level (0 .. 2**8); trained in units of half their
        # span, as the symmetric levels in [-1, 1] are, so that a step size means the same for both
        book_span = float(weight.codebook.float().max() - weight.codebook.float().min())
        self.level_unit = book_span / 2 if weight.zeros is not None and book_span > 0 else 1.0
        self.levels = torch.nn.Parameter(weight.codebook.float().clone() / self.level_unit) if train_levels else None
        self.fixed_book = None if train_levels else weight.codebook.float()
        self.bias: torch.Tensor | None = module.bias  # type: ignore[assignment]

    def units(self, levels: torch.Tensor | None) -> torch.Tensor:
        """The weight before its group scales, grouped [N, K / g, g]: levels (or the fixed codebook) at the codes, less
        the zero points."""
        n, k = self.grid.shape
        g = self.grid.group_size
        index = self.codes.int()
        if levels is not None:
            units = (levels * self.level_unit)[index].view(n, k // g, g)
        else:
            assert self.fixed_book is not None
            book = self.fixed_book
            units = (book[index] if book.dim() == 1 else book.gather(2, index.view(n, k // g, g).long())).view(n, k // g, g)
        return units if self.zeros is None else units - self.zeros

    def weight(self) -> torch.Tensor:
        """The dequantized weight [N, K] of the current scales and levels (differentiable)."""
        return (self.units(self.levels) * self.log_scale.exp()[..., None]).flatten(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., K] -> [..., N] with the trainable weight."""
        y = _CodedLinear.apply(x.float(), self.log_scale, self.levels, self).to(x.dtype)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def trainable(self) -> list[torch.nn.Parameter]:
        """The log-scales (and levels): the parameters that require grad (the bias, a frozen Parameter, does not)."""
        return [p for p in self.parameters() if p.requires_grad]

    def state(self) -> list[torch.Tensor]:
        """The trained values, detached copies."""
        return [p.detach().clone() for p in self.trainable()]

    def load(self, state: list[torch.Tensor]) -> None:
        """Set the trained values from state()."""
        with torch.no_grad():
            for p, v in zip(self.trainable(), state):
                p.copy_(v)

    @torch.no_grad()
    def write_back(self) -> None:
        """Store the tuned scales (float16) and levels into the QuantizedLinear's buffers; levels re-sorted with their codes."""
        buffers = {name: _stored(self.source, name) for name in ("scales", "codebook", "packed")}
        buffers["scales"].copy_(self.log_scale.exp().to(torch.float16))
        if self.levels is not None:
            book = (self.levels * self.level_unit).to(torch.float16)
            order = torch.argsort(book.float(), stable=True)
            rank = torch.empty_like(order)
            rank[order] = torch.arange(order.numel())
            buffers["codebook"].copy_(book[order])
            if not bool((order == torch.arange(order.numel())).all()):  # the nearest-level search needs sorted levels
                buffers["packed"].copy_(pack_codes(rank[self.codes.long()].to(torch.uint8), self.grid.bits))


class _CodedLinear(torch.autograd.Function):
    """y = x W^T with W = units(levels) * exp(log_scale) per group; saves x only and rebuilds W in backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, log_scale: torch.Tensor, levels: torch.Tensor | None, layer: TunedLinear) -> torch.Tensor:
        ctx.layer = layer
        ctx.save_for_backward(x, log_scale, levels)
        with torch.no_grad():
            return torch.nn.functional.linear(x, layer.weight())

    @staticmethod
    def backward(ctx, grad_y: torch.Tensor):
        x, log_scale, levels = ctx.saved_tensors
        layer: TunedLinear = ctx.layer
        with torch.no_grad():
            scale = log_scale.exp()[..., None]  # [N, K / g, 1]
            units = layer.units(levels)  # [N, K / g, g]
            weight = (units * scale).flatten(1)
            grad_x = grad_y @ weight if ctx.needs_input_grad[0] else None
            del weight
            grad_w = (grad_y.reshape(-1, grad_y.shape[-1]).t() @ x.reshape(-1, x.shape[-1])).view_as(units)
            grad_log_scale = (grad_w * units).sum(-1) * scale[..., 0] if ctx.needs_input_grad[1] else None
            grad_levels = None
            if levels is not None and ctx.needs_input_grad[2]:
                flat = (grad_w * scale).flatten()
                grad_levels = levels.new_zeros(levels.shape).index_add_(0, layer.codes.flatten().int(), flat) * layer.level_unit
        return grad_x, grad_log_scale, grad_levels, None


def _stored(module: torch.nn.Module, name: str) -> torch.Tensor:
    tensor = module._buffers.get(name)
    if tensor is None:
        raise ValueError(f"the quantized layer has no stored {name!r}")
    return tensor


def _swap(block: torch.nn.Module, modules: Sequence[torch.nn.Module]) -> dict[tuple[torch.nn.Module, str], TunedLinear]:
    """Replace each of `modules` inside block by a TunedLinear; returns {(parent, attribute): tuned}."""
    wanted = {id(m) for m in modules}
    swapped: dict[tuple[torch.nn.Module, str], TunedLinear] = {}
    for parent in list(block.modules()):
        for attribute, child in list(parent.named_children()):
            if id(child) in wanted:
                tuned = TunedLinear(child)
                setattr(parent, attribute, tuned)
                swapped[(parent, attribute)] = tuned
    return swapped


def tune_block(block: torch.nn.Module, modules: Sequence[torch.nn.Module], forward: Forward,
               targets: Sequence[torch.Tensor], config: BlockTuneConfig) -> dict[str, float]:
    """Tune the scales (and levels) of `modules` (QuantizedLinears inside block) in place.

    forward(i): the block's output on calibration batch i (with the quantized chain's hidden states);
    targets[i]: the original block's output on it. Returns the holdout errors before and after.
    """
    count = len(targets)
    held = max(1, round(count * config.holdout)) if count > 1 else 0
    train, check = list(range(count - held)), list(range(count - held, count)) or list(range(count))
    frozen = [p for p in block.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    swapped = _swap(block, modules)
    tuned = list(swapped.values())
    try:
        optimizer = torch.optim.Adam([p for t in tuned for p in t.trainable()], lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed)

        loss = _LOSSES[config.objective]
        before = best = error_of(forward, targets, check, config.objective)
        best_state: list[list[torch.Tensor]] | None = None  # None: no epoch beat the untuned values
        for _ in range(config.epochs):
            for i in torch.randperm(len(train), generator=generator).tolist():
                optimizer.zero_grad(set_to_none=True)
                with torch.enable_grad():  # the sequential pass around this runs under no_grad
                    loss(forward(train[i]), targets[train[i]]).backward()
                optimizer.step()
            now = error_of(forward, targets, check, config.objective)
            if now < best:
                best, best_state = now, [t.state() for t in tuned]
        for t, state in zip(tuned, best_state or []):  # untouched otherwise: the stored values stay bit for bit
            t.load(state)
            t.write_back()
    finally:
        for (parent, attribute), t in swapped.items():
            setattr(parent, attribute, t.source)
        for p in frozen:
            p.requires_grad_(True)
    return {"holdout_before": before, "holdout_after": error_of(forward, targets, check, config.objective)}


def _relative_mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return (output.float() - target.float()).pow(2).mean() / target.float().pow(2).mean().clamp(min=1e-30)


def _normalized_mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    def unit(x: torch.Tensor) -> torch.Tensor:
        x = x.float()
        return x * x.pow(2).mean(-1, keepdim=True).clamp(min=1e-30).rsqrt()
    return (unit(output) - unit(target)).pow(2).mean()


_LOSSES = {"normalized": _normalized_mse, "mse": _relative_mse}


def error_of(forward: Forward, targets: Sequence[torch.Tensor], indices: Sequence[int], objective: str = "normalized") -> float:
    """Mean error of forward(i) against targets[i] over indices under `objective` (no grad)."""
    with torch.no_grad():
        return sum(_LOSSES[objective](forward(i), targets[i]).item() for i in indices) / len(indices)
