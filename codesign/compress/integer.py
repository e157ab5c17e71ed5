"""Uniform integer per-group quantization: symmetric on brevitas's IntQuant, and asymmetric min-max with zero points.

Asymmetric (`AsymIntConfig`, registered as "int-asym"): round-to-nearest on each group's [min, max]
range, step = (max - min) / (2**b - 1) stored fp16, an integer zero point z = round(-min / step) in
0..2**b - 1 stored uint8, code = clamp(round(w / step) + z); W = (code - z) * step. This is the
baseline of GPTQ / AWQ / HQQ-style tools (their "asymmetric RTN"). Symmetric (`IntConfig`, "int"):

brevitas.core.quant.IntQuant does the rounding and clamping (RoundSte, TensorClamp) and its
min_int/max_int give the code range. We use it unsigned with a half-integer zero point
(2**b - 1) / 2, so the levels are symmetric and mid-rise ({-1.5, -0.5, 0.5, 1.5}·step at 2
bits) and every code maps to a fixed codebook times the group scale — the same storage and
kernels as k-means. The group step comes from the group absmax times a clip ratio searched
per group on a small grid (minimum squared error).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from codesign.compress.formats import check_bits, check_group_size, pack_codes
from codesign.compress.qtensor import ScalarQuantizedWeight
from codesign.compress.registry import register_quantizer
from codesign.compress.validate import check_weight

__all__ = ["IntConfig", "AsymIntConfig", "uniform_codebook", "quantize_int", "quantize_int_asym"]


@dataclass(frozen=True)
class IntConfig:
    """Integer (uniform) weight quantization.

    bits: code width, 1..8.
    group_size: weights per scale along the input dimension; a multiple of 8 dividing K.
    clip_ratios: candidate ratios of the clipping range to the group absmax; the best per group wins.
    """

    bits: int = 4
    group_size: int = 64
    clip_ratios: tuple[float, ...] = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3)

    def __post_init__(self) -> None:
        check_bits(self.bits)
        if not self.clip_ratios or any(not 0 < r <= 1 for r in self.clip_ratios):
            raise ValueError(f"clip_ratios must be non-empty values in (0, 1], got {self.clip_ratios}")


def _int_quant():
    """brevitas's IntQuant (brevitas is the optional `quant` extra, imported on first use)."""
    try:
        from brevitas.core.quant import IntQuant  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("integer quantization needs brevitas: pip install 'codesign[quant]'") from exc
    return IntQuant(narrow_range=False, signed=False, input_view_impl=torch.nn.Identity())


def uniform_codebook(bits: int) -> torch.Tensor:
    """[2**bits] float32 mid-rise levels in [-1, 1]: code c -> (c - zero_point) / zero_point."""
    zero_point = ((1 << bits) - 1) / 2
    return (torch.arange(1 << bits, dtype=torch.float32) - zero_point) / zero_point


def _codes(quant, grouped: torch.Tensor, half_range: torch.Tensor, bits: int) -> torch.Tensor:
    zero_point = torch.tensor(((1 << bits) - 1) / 2)
    step = half_range / zero_point
    return quant.to_int(step, zero_point, torch.tensor(float(bits)), grouped)


@register_quantizer("int", IntConfig)
def quantize_int(weight: torch.Tensor, config: IntConfig = IntConfig()) -> ScalarQuantizedWeight:
    """Quantize W[N, K] to b-bit integers with one fp16 scale per group."""
    check_weight(weight)
    n, k = weight.shape
    check_group_size(config.group_size, k)
    groups = k // config.group_size
    grouped = weight.float().view(n, groups, config.group_size)
    amax = grouped.abs().amax(dim=2, keepdim=True)
    amax = torch.where(amax > 0, amax, torch.ones_like(amax))
    book = uniform_codebook(config.bits).to(weight.device)
    quant = _int_quant()
    best_err = torch.full((n, groups, 1), float("inf"), device=weight.device)
    best_scale = amax
    for ratio in config.clip_ratios:
        # scales are stored in fp16, so the search scores the fp16 value it would store
        scale = (amax * ratio).to(torch.float16).float()
        codes = _codes(quant, grouped, scale, config.bits)
        err = ((book[codes.long()] * scale - grouped) ** 2).sum(dim=2, keepdim=True)
        better = err < best_err
        best_err = torch.where(better, err, best_err)
        best_scale = torch.where(better, scale, best_scale)
    codes = _codes(quant, grouped, best_scale, config.bits).to(torch.uint8).view(n, k)
    return ScalarQuantizedWeight(
        packed=pack_codes(codes, config.bits),
        scales=best_scale[..., 0].to(torch.float16).contiguous(),
        codebook=book.to(torch.float16),
        bits=config.bits,
        group_size=config.group_size,
        shape=(n, k),
        method="int",
    )


@dataclass(frozen=True)
class AsymIntConfig:
    """Asymmetric integer (min-max, zero point, round to nearest): bits 1..8, group_size a multiple of 8 dividing K."""

    bits: int = 4
    group_size: int = 64

    def __post_init__(self) -> None:
        check_bits(self.bits)


@register_quantizer("int-asym", AsymIntConfig)
def quantize_int_asym(weight: torch.Tensor, config: AsymIntConfig = AsymIntConfig()) -> ScalarQuantizedWeight:
    """Quantize W[N, K] to b-bit codes with one fp16 step and one uint8 zero point per group (min-max RTN)."""
    check_weight(weight)
    n, k = weight.shape
    check_group_size(config.group_size, k)
    top = (1 << config.bits) - 1
    grouped = weight.float().view(n, k // config.group_size, config.group_size)
    low, high = grouped.amin(dim=2, keepdim=True), grouped.amax(dim=2, keepdim=True)
    step = ((high - low) / top).to(torch.float16).float()  # the stored fp16 value codes the weights
    step = torch.where(step > 0, step, torch.ones_like(step))  # a constant group: any step, the zero point carries it
    zero = torch.round(-low / step).clamp(0, top)
    codes = (torch.round(grouped / step) + zero).clamp(0, top).to(torch.uint8).view(n, k)
    return ScalarQuantizedWeight(
        packed=pack_codes(codes, config.bits),
        scales=step[..., 0].to(torch.float16).contiguous(),
        codebook=torch.arange(top + 1, dtype=torch.float16, device=weight.device),
        bits=config.bits,
        group_size=config.group_size,
        shape=(n, k),
        method="int-asym",
        zeros=zero[..., 0].to(torch.uint8).contiguous(),
    )
