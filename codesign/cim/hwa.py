"""Gradients through the simulated chip: hardware-aware (HWA) training of CIM layers.

The forward pass of a CIM layer with gradients enabled is the chip's own read (programming noise,
drift at the programmed time, read noise, DAC and ADC, digital rescale: readout.py). The backward pass
is the straight-through estimator with clipping of noise-aware training: the roundings of the DAC and ADC pass
the gradient unchanged, their clamps stop it (a tile partial sum that the ADC saturated gives no gradient to its
output through that tile, an input that a fixed-range DAC clipped gets none, and the weights see it clipped, as
autograd of torch.clamp gives), and the gradient is the float operation's gradient at the weights
each chip realizes at this read (``Crossbar.realized_weights(read_noise=True)``: programming noise,
drift, compensation and the ``per_time`` read-noise draw; a ``per_call``/``per_input`` read's own draw is
not kept, so those modes take the gradient at the noise-free realization). For C chips (C·B rows,
chip-major) each chip's rows get the gradient of its own weights, and the float weight gets the sum
over chips; the bias is digital (its gradient is exact).

Re-sampling per mini-batch is programming again (``program_model(model, seed=step, n_chips=K)``): every
call draws a new chip from the current float weights. :func:`codesign.cim.layers.chip_twin` makes a CIM copy of a float
network that shares its parameters, so an optimizer of the float network trains through the chip.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["ChipLinearRead", "ChipConvRead", "needs_grad"]


def _read_realization(crossbar) -> Tensor:  # noqa: ANN001
    """The weights (C, out, in) the last read saw: with per_time read noise its draw, else the noise-free ones."""
    return crossbar.read_realization()


def _saved_input(x: Tensor, crossbar) -> tuple[Tensor, Tensor | None]:  # noqa: ANN001
    """The input the weights' gradient sees and the mask of the inputs a fixed-range DAC clipped (None if none): the
    clamp of x to the range and its straight-through gradient (zero beyond it), as torch.clamp(x, -r, r)."""
    conv = crossbar.config.converter
    if conv.is_ideal or conv.input_range is None:  # each vector scaled by its own max |x|: nothing is clipped
        return x, None
    clipped = torch.gt(x.abs(), conv.input_range)
    if not bool(clipped.any()):
        return x, None
    return x.clamp(-conv.input_range, conv.input_range), clipped


class ChipLinearRead(torch.autograd.Function):
    """y = the crossbar read of x (C·B, in); backward at each chip's realized weights (straight-through, clipped)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, crossbar) -> Tensor:  # noqa: ANN001
        y, saturated = crossbar.forward_saturation(x, bias)
        realized = _read_realization(crossbar).to(x.dtype)  # (C, out, in)
        x_seen, clipped = _saved_input(x, crossbar)
        ctx.save_for_backward(x_seen, realized, saturated, clipped)
        ctx.has_bias = bias is not None
        ctx.segments, ctx.rows = crossbar.segments, crossbar.grid.rows
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN205
        x, realized, saturated, clipped = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_b = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None  # digital: after the ADC
        if saturated is not None and saturated.shape[1] > 1:  # several row tiles, each saturating on its own
            grad_x, grad_w = _tile_grads(grad, x, realized, saturated, ctx.segments, ctx.rows, need_x, need_w)
        else:
            if saturated is not None:  # one row tile: a saturated output passes nothing back
                grad = grad.masked_fill(saturated.view(grad.shape), 0.0)
            chips = realized.shape[0]
            grad_x = grad_w = None
            if need_x:
                if chips == 1:
                    grad_x = grad.mm(realized[0])
                else:
                    grad_x = torch.bmm(grad.view(chips, -1, grad.shape[-1]), realized).view(x.shape)
            if need_w:
                grad_w = grad.t().mm(x)  # as F.linear's backward computes it (contiguous): the sum over every chip's rows
        if clipped is not None and grad_x is not None:
            grad_x.masked_fill_(clipped, 0.0)
        return grad_x, grad_w, grad_b, None


def _tile_grads(grad: Tensor, x: Tensor, realized: Tensor, saturated: Tensor, segments, rows: int,  # noqa: ANN001
                need_x: bool, need_w: bool) -> tuple[Tensor | None, Tensor | None]:
    """Input and weight gradients of a read of several row tiles, each tile's saturated partial sums (saturated:
    (C, tiles, B, out)) passing nothing back: per segment of equal tiles, one batched GEMM over chips and tiles."""
    chips, out, n_in = realized.shape
    batch = grad.shape[0] // chips
    g = torch.where(saturated, 0.0, grad.view(chips, 1, batch, out))  # (C, tiles, B, out)
    xv = x.view(chips, batch, n_in)
    grad_x = torch.empty((chips, batch, n_in), dtype=grad.dtype, device=grad.device) if need_x else None
    grad_w = torch.empty((out, n_in), dtype=grad.dtype, device=grad.device) if need_w else None
    for seg in segments:
        first_tile, cols, shape = seg.first_input // rows, slice(seg.first_input, seg.first_input + seg.tiles * seg.rows), \
            (seg.tiles, seg.rows)
        gs = g[:, first_tile: first_tile + seg.tiles]
        if grad_x is not None:
            w = realized[:, :, cols].unflatten(2, shape).transpose(1, 2)  # (C, tiles, out, rows)
            grad_x[:, :, cols].unflatten(2, shape).copy_(torch.matmul(gs, w).transpose(1, 2))
        if grad_w is not None:
            xs = xv[:, :, cols].unflatten(2, shape).transpose(1, 2)  # (C, tiles, B, rows)
            per_chip = torch.matmul(gs.transpose(-1, -2), xs)  # (C, tiles, out, rows)
            grad_w[:, cols].unflatten(1, shape).copy_((per_chip[0] if chips == 1 else per_chip.sum(0)).transpose(0, 1))
    return (grad_x.view(x.shape) if grad_x is not None else None), grad_w


class ChipConvRead(torch.autograd.Function):
    """y = the CIM convolution's read of an input zero-padded by `padding` (rows, columns) on both sides; backward at
    each chip's realized kernels (straight-through, clipped), the convolution's own with that padding."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, layer,  # noqa: ANN001
                padding: tuple[int, int]) -> Tensor:
        rows, cols = padding
        y, saturated = layer._read(F.pad(x, (cols, cols, rows, rows)) if rows or cols else x, saturation=True)
        realized = _read_realization(layer.crossbar).to(x.dtype)
        x_seen, clipped = _saved_input(x, layer.crossbar)
        ctx.save_for_backward(x_seen, realized.view(realized.shape[0], *weight.shape), saturated, clipped)
        ctx.stride, ctx.dilation, ctx.has_bias, ctx.padding = layer.stride, layer.dilation, bias is not None, padding
        ctx.rows = layer.crossbar.grid.rows
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN205
        x, realized, saturated, clipped = ctx.saved_tensors
        chips, out = realized.shape[0], realized.shape[1]
        grad_b = grad.sum((0, 2, 3)) if ctx.has_bias and ctx.needs_input_grad[2] else None  # digital: after the ADC
        member = None
        if saturated is not None and saturated.shape[1] > out:
            # several row tiles: one convolution of tiles·out channels, channel t·out + o holding output o's kernel
            # on tile t's rows only (zero elsewhere) and getting output o's gradient where tile t did not saturate
            fan_in, tiles = realized[0, 0].numel(), saturated.shape[1] // out
            member = (torch.arange(fan_in, device=grad.device) // ctx.rows == torch.arange(tiles, device=grad.device)
                      .unsqueeze(1)).to(realized.dtype)  # (tiles, fan_in)
            kernels = (realized.view(chips, 1, out, fan_in) * member.view(1, tiles, 1, fan_in)).view(
                chips, tiles * out, *realized.shape[2:])
            grad = torch.where(saturated, 0.0, grad.repeat(1, tiles, 1, 1))
        else:
            kernels = realized
            if saturated is not None:
                grad = grad.masked_fill(saturated, 0.0)
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], False]
        xs, gs = ((x,), (grad,)) if chips == 1 else (x.chunk(chips), grad.chunk(chips))
        grad_x = [] if mask[0] else None
        grad_w = None
        for k in range(chips):  # the convolution's own backward at chip k's kernels (what autograd computes)
            gx, gw, _ = torch.ops.aten.convolution_backward(
                gs[k], xs[k], kernels[k], None, list(ctx.stride), list(ctx.padding), list(ctx.dilation), False, [0, 0], 1,
                mask)
            if mask[0]:
                grad_x.append(gx)
            if mask[1]:
                grad_w = gw if grad_w is None else grad_w + gw
        if grad_w is not None and member is not None:  # each tile's rows from its own channels
            tiles = member.shape[0]
            grad_w = (grad_w.view(tiles, out, -1) * member.unsqueeze(1)).sum(0).view(realized.shape[1:])
        gx_all = (grad_x[0] if chips == 1 else torch.cat(grad_x)) if grad_x is not None else None
        if clipped is not None and gx_all is not None:
            gx_all.masked_fill_(clipped, 0.0)
        return gx_all, grad_w, grad_b, None, None


def needs_grad(x: Tensor, layer: nn.Module) -> bool:
    """True when a forward must record the chip read for backward."""
    if not torch.is_grad_enabled():
        return False
    return x.requires_grad or any(p.requires_grad for p in layer.parameters(recurse=False))

