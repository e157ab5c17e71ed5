"""Gradients through the simulated chip: hardware-aware (HWA) training of CIM layers.

The forward pass of a CIM layer with gradients enabled is the chip's own read (programming noise,
drift at the programmed time, read noise, DAC and ADC, digital rescale: readout.py). The backward pass
is the straight-through estimator of noise-aware training: the quantizers (DAC rounding, ADC rounding
and clamp) pass the gradient unchanged, and the gradient is the float operation's gradient at the weights
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
from torch import Tensor, nn

__all__ = ["ChipLinearRead", "ChipConvRead", "needs_grad"]


def _read_realization(crossbar) -> Tensor:  # noqa: ANN001
    """The weights (C, out, in) the last read saw: with per_time read noise its draw, else the noise-free ones."""
    return crossbar.realized_weights(read_noise=crossbar.config.read_noise == "per_time")


class ChipLinearRead(torch.autograd.Function):
    """y = the crossbar read of x (C·B, in); backward at each chip's realized weights (straight-through)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Tensor, bias: Tensor | None, crossbar) -> Tensor:  # noqa: ANN001
        y = crossbar(x, bias)
        realized = _read_realization(crossbar).to(x.dtype)  # (C, out, in)
        ctx.save_for_backward(x, realized)
        ctx.has_bias = bias is not None
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN205
        x, realized = ctx.saved_tensors
        chips = realized.shape[0]
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            if chips == 1:
                grad_x = grad.mm(realized[0])
            else:
                grad_x = torch.bmm(grad.view(chips, -1, grad.shape[-1]), realized).view(x.shape)
        if ctx.needs_input_grad[1]:
            grad_w = grad.t().mm(x)  # as F.linear's backward computes it (contiguous): the sum over every chip's rows
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = grad.sum(0)
        return grad_x, grad_w, grad_b, None


class ChipConvRead(torch.autograd.Function):
    """y = the CIM convolution's read of a padded input; backward at each chip's realized kernels."""

    @staticmethod
    def forward(ctx, x_padded: Tensor, weight: Tensor, bias: Tensor | None, layer) -> Tensor:  # noqa: ANN001
        y = layer._read(x_padded)
        realized = _read_realization(layer.crossbar).to(x_padded.dtype)
        ctx.save_for_backward(x_padded, realized.view(realized.shape[0], *weight.shape))
        ctx.stride, ctx.dilation, ctx.has_bias = layer.stride, layer.dilation, bias is not None
        return y

    @staticmethod
    def backward(ctx, grad: Tensor):  # noqa: ANN205
        x, realized = ctx.saved_tensors
        chips = realized.shape[0]
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], False]
        xs, gs = x.chunk(chips), grad.chunk(chips)
        grad_x = [] if mask[0] else None
        grad_w = None
        for k in range(chips):  # the convolution's own backward at chip k's kernels (what autograd computes)
            gx, gw, _ = torch.ops.aten.convolution_backward(
                gs[k], xs[k], realized[k], None, list(ctx.stride), [0, 0], list(ctx.dilation), False, [0, 0], 1, mask)
            if mask[0]:
                grad_x.append(gx)
            if mask[1]:
                grad_w = gw if grad_w is None else grad_w + gw
        grad_b = grad.sum((0, 2, 3)) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return (torch.cat(grad_x) if mask[0] else None), grad_w, grad_b, None


def needs_grad(x: Tensor, layer: nn.Module) -> bool:
    """True when a forward must record the chip read for backward."""
    if not torch.is_grad_enabled():
        return False
    return x.requires_grad or any(p.requires_grad for p in layer.parameters(recurse=False))

