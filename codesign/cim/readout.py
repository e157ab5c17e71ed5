"""Reading a programmed crossbar: DAC, tile GEMMs, per-input read noise, ADC, digital accumulation.

:class:`CrossbarReadout` is the converters and GEMMs of one layer; the :class:`~codesign.cim.crossbar.Crossbar`
that owns it programs and ages the devices and hands every read a :class:`ReadState`: the weights the read
sees at the current time (w_eff in ADC steps plus the read noise of ``per_time`` or ``per_call``), the
per-input read variance, the read-noise generators and the digital column scale (tile scale × drift
compensation × code unit × ADC step). This module imports nothing of the crossbar but its tile layout.

- Row layout (``forward``): every input vector is a row. A plan prepared once per batch size and weight
  state holds, per segment of equal row tiles, the (C, tiles, B, rows) view of the input, the workspaces,
  the GEMM views and the column scales; a call runs the DAC (|x| into the code buffer, one reduction per
  vector for its full scale, x·K/full scale rounded), one (batched) GEMM, the ADC (round, clamp) and the
  digital rescale, whose addcmul also adds the bias.
- Column layout (``forward_columns``, a layer of one row tile): each chip's vectors are columns of x
  (C, *row axes, *vector axes), any strided view such as the overlapping windows of a padded image, read
  in place into the DAC codes (C, rows, M); one GEMM per chip; the result is written vector-major.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from codesign.cim.config import ConverterConfig
from codesign.cim.converters import max_code
from codesign.cim.tiles import Segment, TileGrid, segment_block

__all__ = ["ConverterSteps", "ReadState", "CrossbarReadout"]

_SPLIT_DRAW = 1 << 17  # read-noise draws of at least this many values come from two streams (two cores)
_DRAW_POOL: ThreadPoolExecutor | None = None  # the second core's worker for those draws
_TINY = 1e-30  # floor of a DAC full scale (an all-zero input vector)
_NO_MASK = np.zeros((1, 1, 1, 1), dtype=np.bool_)  # a kernel's saturation mask when none is asked for (never written)


def _draw_pool() -> ThreadPoolExecutor:
    global _DRAW_POOL
    if _DRAW_POOL is None:
        _DRAW_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cim-draw")
    return _DRAW_POOL


@dataclass(frozen=True)
class ConverterSteps:
    """The converters' integer scales: K of the DAC and of the ADC, one DAC code, one ADC step in DAC codes."""

    dac_max: int  # K of the DAC (1 without quantization)
    adc_max: int  # K of the ADC (1 without quantization)
    code_unit: float  # 1/K of the DAC: one code's share of the full scale
    adc_step: float  # one ADC step in DAC code units

    @classmethod
    def of(cls, conv: ConverterConfig) -> ConverterSteps:
        """The steps of a converter configuration."""
        dac_max = max_code(conv.dac_bits) if conv.dac_bits is not None and not conv.is_ideal else 1
        adc_max = max_code(conv.adc_bits) if conv.adc_bits is not None else 1
        code_unit = 1.0 / dac_max
        adc_step = conv.adc_range / adc_max / code_unit if conv.adc_bits is not None else 1.0
        return cls(dac_max, adc_max, code_unit, adc_step)


class ReadState(NamedTuple):
    """What one read needs of the programmed chips at the current time (made by Crossbar for every call)."""

    n_chips: int
    weights: Tensor  # the weights this call reads (C·N), ADC steps: w_eff plus per_time or per_call read noise
    variance: Tensor | None  # per_input read noise: read_std² (C·N); None otherwise
    generators: tuple[torch.Generator, torch.Generator] | None  # the read-noise streams; None when nothing is drawn
    digital_scale: Tensor  # (C, n_row_tiles, out_padded)
    # the columns a row read computes: out_features for chips drawn weight by weight (their unused columns hold
    # nothing), None for every column of the tiles (programmed chips: their reads stay as they were)
    columns: int | None = None


class _Arrays(NamedTuple):
    """numpy views of a CPU row read's workspaces, for the compiled kernels (made once per read plan)."""

    codes: np.ndarray
    amax: np.ndarray
    partial: np.ndarray
    scale: np.ndarray  # column_scale as (C, tiles, 1, width)
    no_mask: np.ndarray  # the saturation mask's argument when no mask is asked for (never written)


class _RowRead(NamedTuple):
    """One segment's row read prepared for a batch size: its input view, workspaces, weights and column scales."""

    segment: Segment
    input_stride: tuple[int, int, int, int]  # strides of the (C, tiles, B, rows) view of the (C·B, in) input
    codes: Tensor  # DAC codes (C, tiles, B, rows)
    amax: Tensor  # the DAC full scale per vector (C, tiles, B, 1)
    partial: Tensor  # partial sums in ADC steps (C, tiles, B, width): width = ReadState.columns or out_padded
    single: bool  # one chip and one tile: a plain GEMM (less overhead than a batch of one)
    matmul_in: Tensor  # codes as the (batched) GEMM takes them
    weights: Tensor  # the weights read, transposed: (rows, width) or (C·tiles, rows, width)
    matmul_out: Tensor  # partial as the GEMM writes it
    one_tile: Tensor | None  # partial without its tile axis (C, B, width) when the segment is one tile
    column_scale: Tensor  # digital_scale of the segment: (C, tiles, 1, width), or (C, 1, width) for one tile
    arrays: _Arrays | None  # numpy views of the workspaces (CPU)


class CrossbarReadout:
    """The read of one crossbar layer: DAC, GEMMs, read noise per input, ADC, digital rescale and accumulation.

    Holds what does not change between reads (the tile layout, the converters) and the workspaces and read
    plan it reuses between calls; everything that depends on the chips' state comes in a ReadState.
    """

    def __init__(self, grid: TileGrid, segments: tuple[Segment, ...], converter: ConverterConfig) -> None:
        self.grid = grid
        self.segments = segments
        self.converter = converter
        self.steps = ConverterSteps.of(converter)
        self._scratch: dict[str, Tensor] = {}  # workspaces of the read, reused between calls
        self._row_plan_cache: tuple | None = None  # (batch key, weights read, digital_scale, segment reads)

    def set_converter(self, converter: ConverterConfig) -> None:
        """Read with another converter configuration of the same resolution (e.g. a calibrated input range)."""
        if ConverterSteps.of(converter) != self.steps:
            raise ValueError("a converter of another resolution needs a new Crossbar")
        self.converter = converter
        self._row_plan_cache = None  # the read plan holds the DAC's workspaces of the old mode

    def clear(self) -> None:
        """Forget the workspaces and the read plan (the chips were programmed anew)."""
        self._scratch.clear()
        self._row_plan_cache = None

    def check_bias(self, bias: Tensor | None) -> None:
        """A one-line ValueError unless bias is None or of shape (out_features,)."""
        if bias is not None and tuple(bias.shape) != (self.grid.out_features,):
            raise ValueError(f"bias of shape {tuple(bias.shape)}: expected ({self.grid.out_features},)")

    def _workspace(self, name: str, shape: tuple[int, ...], like: Tensor) -> Tensor:
        """A scratch tensor kept between calls (fresh large allocations cost page faults on every call)."""
        buf = self._scratch.get(name)
        if buf is None or buf.shape != shape or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._scratch[name] = torch.empty(shape, dtype=like.dtype, device=like.device)
        return buf

    def randn(self, name: str, shape: tuple[int, ...], like: Tensor,
              generators: tuple[torch.Generator, torch.Generator]) -> Tensor:
        """Standard-normal draws into a reused workspace, in the working dtype.

        torch draws normals on one core; a large draw is split in two halves from two fixed streams
        (the read generator and its companion), drawn concurrently when torch may use more than one
        thread. The split depends on the size only, so the values do not depend on the number of threads.
        """
        buf = self._workspace(name, shape, like)
        flat = buf.view(-1)
        n = flat.numel()
        gen, second = generators
        if n < _SPLIT_DRAW:
            torch.randn((n,), generator=gen, out=flat)
            return buf
        half = n // 2
        if torch.get_num_threads() > 1 and buf.device.type == "cpu":
            pending = _draw_pool().submit(torch.randn, (n - half,), generator=second, out=flat[half:])
            torch.randn((half,), generator=gen, out=flat[:half])
            pending.result()
        else:
            torch.randn((half,), generator=gen, out=flat[:half])
            torch.randn((n - half,), generator=second, out=flat[half:])
        return buf

    def compiled(self, x: Tensor) -> bool:
        """True when the compiled kernels (read_kernels.py) can run the converters of a read of x: CPU float32
        through quantizing converters without ADC noise and without a fixed input range."""
        conv = self.converter
        return not conv.is_ideal and conv.adc_noise == 0 and conv.input_range is None and conv.dac_bits is not None \
            and conv.adc_bits is not None and x.dtype == torch.float32 and x.device.type == "cpu"

    def fuses_columns(self, x: Tensor, row_dims: int, per_input: bool) -> bool:
        """True when a column read of x runs the compiled kernels (read_kernels.dac_windows, adc_scale): a convolution's windows (C,
        in channels, kernel rows, kernel columns, B, H, W) of one row tile, without per-input read noise; the
        kernels measure each window's max |x| themselves."""
        return row_dims == 3 and x.dim() == 7 and not per_input and self.grid.n_row_tiles == 1 and self.compiled(x)

    @property
    def uses_vector_amax(self) -> bool:
        """True when forward_columns can use a caller's max |x| per vector: the DAC scales every vector by its
        own max |x| (no fixed input range) and the layer is one row tile (a vector is not split)."""
        conv = self.converter
        return not conv.is_ideal and conv.input_range is None and self.grid.n_row_tiles == 1

    def _dac(self, x: Tensor, dim: int | tuple[int, ...], codes: Tensor, amax: Tensor,
             measured: bool = False) -> Tensor | float:
        """DAC: writes the codes of x into `codes` (x's shape) and returns the full scale to re-apply digitally:
        per input vector along `dim` (in `amax`, x's shape with `dim` of size 1; holding max |x| already when
        `measured`) or the fixed input range (a number).

        Inputs are scaled to [-1, 1] (by each vector's max |x|, or the fixed range) and, with a finite resolution,
        held as integer codes; full scale × code unit is re-applied after the ADC (the code unit in digital_scale).
        """
        conv = self.converter
        full_scale: Tensor | float
        if conv.input_range is None:
            full_scale = amax if measured else torch.amax(torch.abs(x, out=codes), dim=dim, keepdim=True, out=amax)
            if conv.adc_noise > 0:  # an all-zero vector keeps scale 1 (its ADC noise is rescaled by it)
                full_scale.masked_fill_(full_scale == 0, 1.0)
            else:  # without ADC noise an all-zero vector reads exactly 0 on any scale
                full_scale.clamp_min_(_TINY)
        else:
            full_scale = conv.input_range
        if conv.dac_bits is None:
            torch.div(x, full_scale, out=codes)
        else:  # x·(K/full scale), rounded: exact at the ties of dyadic inputs such as k/16 on a full scale of 1
            k = self.steps.dac_max
            to_codes = k / full_scale if isinstance(full_scale, float) else full_scale.reciprocal().mul_(k)
            torch.mul(x, to_codes, out=codes).round_()
        if conv.input_range is not None:
            codes.clamp_(-self.steps.dac_max, self.steps.dac_max)
        return full_scale

    def _adc(self, p: Tensor, generators: tuple[torch.Generator, torch.Generator] | None, name: str,
             saturation: bool = False) -> Tensor | None:
        """ADC noise and quantization of partial sums p (in ADC steps) in place; with `saturation`, the mask (p's
        shape) of the partial sums the ADC clamped (None when it clamped none, or has no range)."""
        conv, steps = self.converter, self.steps
        if conv.adc_noise > 0:
            assert generators is not None  # ADC noise makes the read noisy: the Crossbar gives the generators
            noise = self.randn(name, tuple(p.shape), p, generators)
            p.add_(noise, alpha=conv.adc_noise / steps.code_unit / steps.adc_step)
        if conv.adc_bits is None:
            return None
        p.round_()
        # |rint(p)| beyond the last code: what the clamp changes (a code at ±adc_max passes, as torch.clamp's gradient)
        saturated = torch.gt(p.abs(), steps.adc_max) if saturation else None
        p.clamp_(-steps.adc_max, steps.adc_max)
        return saturated if saturated is not None and bool(saturated.any()) else None

    def read_rows(self, x: Tensor, bias: Tensor | None, state: ReadState) -> Tensor:
        """Row layout: every input vector a row, partial sums per row tile (C, tiles, B, width).

        x (C·B, in), chip-major, with B = chip_batch rows per chip (checked by the caller); y (C·B, out).
        """
        return self._rows(x, bias, state, False)[0]

    def read_rows_saturation(self, x: Tensor, bias: Tensor | None, state: ReadState) -> tuple[Tensor, Tensor | None]:
        """read_rows, and the mask (C, n_row_tiles, B, out) of the partial sums the ADC saturated (None if none)."""
        return self._rows(x, bias, state, True)

    def _rows(self, x: Tensor, bias: Tensor | None, state: ReadState, saturation: bool) -> tuple[Tensor, Tensor | None]:
        gr, chips = self.grid, state.n_chips
        batch = x.shape[0] // chips
        out_dtype = x.dtype
        flat_w, gen, variance = state.weights, state.generators, state.variance
        x = x.to(flat_w.dtype).contiguous()
        ideal = self.converter.is_ideal
        width = self._width(state)
        fuse_bias = bias is not None and width == gr.out_features
        if state.columns == gr.out_features and variance is None and self.compiled(x):
            y_fused, masks = self._read_rows_fused(x, bias, state, saturation)
            return y_fused.to(out_dtype), masks
        y: Tensor | None = None
        saturated: list[Tensor | None] = []
        biased = False
        full_scale: Tensor | float
        for i, r in enumerate(self._row_plan(batch, state, x)):
            xt = x.as_strided(r.codes.shape, r.input_stride, x.storage_offset() + r.segment.first_input)
            if ideal:
                full_scale, codes = 1.0, xt
                source = xt.view(r.matmul_in.shape) if r.single else xt.reshape(r.matmul_in.shape)
            else:
                full_scale, codes, source = self._dac(xt, -1, r.codes, r.amax), r.codes, r.matmul_in
            (torch.mm if r.single else torch.bmm)(source, r.weights, out=r.matmul_out)  # in ADC steps
            p = r.partial
            if variance is not None:
                assert gen is not None  # per_input read noise: the Crossbar gives the generators
                var = segment_block(variance, r.segment, chips, gr.out_padded)
                sq = torch.mul(codes, codes, out=self._workspace(f"dac_sq{i}", tuple(r.codes.shape), x))
                std = torch.matmul(sq, var.transpose(-1, -2), out=self._workspace(f"std{i}", tuple(p.shape), x))
                p.addcmul_(std.sqrt_(), self.randn(f"noise{i}", tuple(p.shape), p, gen))
            saturated.append(self._adc(p, gen, f"adc_noise{i}", saturation))
            # digital: input full scale per vector; code unit × ADC step, tile scale and drift compensation per column
            if isinstance(full_scale, Tensor) or full_scale != 1.0:
                p.mul_(full_scale)
            if r.one_tile is None:
                part = p.mul_(r.column_scale).sum(dim=1)  # accumulate the row tiles (a fresh tensor)
                y = part if y is None else y.add_(part)
            elif y is None:  # p is a workspace: the result is a fresh tensor
                biased = fuse_bias
                y = torch.addcmul(bias, r.one_tile, r.column_scale) if biased and bias is not None \
                    else torch.mul(r.one_tile, r.column_scale)
            else:
                y.addcmul_(r.one_tile, r.column_scale)
        assert y is not None  # a layer has at least one segment
        if bias is not None and not biased:
            y = y.add_(bias) if fuse_bias else y[..., : gr.out_features] + bias
        elif width != gr.out_features:
            y = y[..., : gr.out_features]
        y = y.reshape(chips * batch, gr.out_features)
        masks = self._tile_masks(saturated, self._row_plan(batch, state, x), width) if saturation else None
        return (y if y.dtype == out_dtype else y.to(out_dtype)), masks

    def _tile_masks(self, masks: list[Tensor | None], plan: tuple[_RowRead, ...], width: int) -> Tensor | None:
        """The segments' saturation masks (C, tiles, B, width) as one (C, n_row_tiles, B, out) mask, or None if none
        saturated."""
        if all(m is None for m in masks):
            return None
        full = [m if m is not None else torch.zeros(r.partial.shape, dtype=torch.bool, device=r.partial.device)
                for m, r in zip(masks, plan, strict=True)]
        mask = full[0] if len(full) == 1 else torch.cat(full, dim=1)
        return mask if width == self.grid.out_features else mask[..., : self.grid.out_features]

    def _read_rows_fused(self, x: Tensor, bias: Tensor | None, state: ReadState,
                         saturation: bool) -> tuple[Tensor, Tensor | None]:
        """read_rows of a drawn chip (it reads its out_features columns) through quantizing converters with the DAC
        and the ADC + digital rescale as one kernel each (read_kernels.py); x contiguous CPU float32. With
        `saturation`, also the mask of the partial sums the ADC saturated (read_rows_saturation)."""
        from codesign.cim.read_kernels import adc_accumulate, dac_codes  # numba: compiled on the first drawn read

        gr, chips = self.grid, state.n_chips
        batch = x.shape[0] // chips
        y = torch.empty((chips, batch, gr.out_features), dtype=x.dtype)
        y_np = y.numpy()
        k, tiny, adc_max = np.float32(self.steps.dac_max), np.float32(_TINY), np.float32(self.steps.adc_max)
        masks: list[Tensor | None] = []
        plan = self._row_plan(batch, state, x)
        for i, r in enumerate(plan):
            xt = x.as_strided(r.codes.shape, r.input_stride, x.storage_offset() + r.segment.first_input)
            arrays = r.arrays
            assert arrays is not None  # a CPU plan holds its numpy views
            dac_codes(xt.detach().numpy(), k, tiny, arrays.codes, arrays.amax)
            (torch.mm if r.single else torch.bmm)(r.matmul_in, r.weights, out=r.matmul_out)  # in ADC steps
            mask = torch.empty(r.partial.shape, dtype=torch.bool) if saturation else None
            count = adc_accumulate(arrays.partial, adc_max, arrays.amax, arrays.scale, y_np, i > 0,
                                   mask.numpy() if mask is not None else arrays.no_mask, mask is not None)
            masks.append(mask if count else None)
        if bias is not None:
            y.add_(bias)
        return y.view(chips * batch, gr.out_features), self._tile_masks(masks, plan, gr.out_features)

    def _width(self, state: ReadState) -> int:
        """The columns a row read computes: state.columns, or every column of the tiles."""
        return self.grid.out_padded if state.columns is None else state.columns

    def _row_plan(self, batch: int, state: ReadState, like: Tensor) -> tuple[_RowRead, ...]:
        """Every segment's row read for this batch size; kept while the weights read and digital_scale are the same."""
        flat_w, digital_scale = state.weights, state.digital_scale
        width = self._width(state)
        key = (batch, state.n_chips, like.dtype, like.device, width)
        cached = self._row_plan_cache
        if cached is not None and cached[0] == key and cached[1] is flat_w and cached[2] is digital_scale:
            return cached[3]
        gr, chips, reads = self.grid, state.n_chips, []
        for i, seg in enumerate(self.segments):
            w = segment_block(flat_w, seg, chips, gr.out_padded)  # (C, tiles, out_padded, rows)
            first_tile = seg.first_input // gr.rows
            scale = digital_scale[:, first_tile: first_tile + seg.tiles, :width].unsqueeze(2)  # (C, tiles, 1, width)
            codes = self._workspace(f"codes{i}", (chips, seg.tiles, batch, seg.rows), like)
            partial = self._workspace(f"partial{i}", (chips, seg.tiles, batch, width), like)
            single = chips * seg.tiles == 1  # one matrix: a plain GEMM has less overhead than a batch of one
            n = chips * seg.tiles
            amax = self._workspace(f"amax{i}", (chips, seg.tiles, batch, 1), like)
            arrays = _Arrays(codes.numpy(), amax.numpy(), partial.numpy(), scale.numpy(),
                             np.zeros((1, 1, 1, 1), dtype=np.bool_)) \
                if like.device.type == "cpu" and like.dtype == torch.float32 else None  # the kernels' case
            reads.append(_RowRead(
                segment=seg,
                input_stride=(batch * gr.in_features, seg.rows, gr.in_features, 1),
                codes=codes,
                amax=amax,
                partial=partial,
                single=single,
                matmul_in=codes.view(batch, seg.rows) if single else codes.view(n, batch, seg.rows),
                weights=w.view(gr.out_padded, seg.rows)[:width].t() if single
                else w.view(n, gr.out_padded, seg.rows)[:, :width].transpose(1, 2),
                matmul_out=partial.view(batch, width) if single else partial.view(n, batch, width),
                one_tile=partial[:, 0] if seg.tiles == 1 else None,
                column_scale=scale[:, 0] if seg.tiles == 1 else scale,
                arrays=arrays,
            ))
        plan = tuple(reads)
        self._row_plan_cache = (key, flat_w, digital_scale, plan)
        return plan

    def read_columns(self, x: Tensor, row_dims: int, bias: Tensor | None, vector_amax: Tensor | None,
                     state: ReadState, saturation: bool = False) -> tuple[Tensor, Tensor | None]:
        """Column layout (one row tile): codes (C, rows, M) for the M vectors of x (C, *rows, *vectors), y = W @ codes
        per chip, returned as (C, out, *vectors) (see Crossbar.forward_columns); with `saturation`, also the mask
        (C, 1, out, *vectors) of the partial sums the ADC saturated (None if none)."""
        gr, chips = self.grid, state.n_chips
        vectors = tuple(x.shape[1 + row_dims:])
        m, out_dtype = math.prod(vectors), x.dtype
        flat_w, gen, variance = state.weights, state.generators, state.variance
        x = x.to(flat_w.dtype)
        codes = self._workspace("codes_columns", (chips, gr.rows, m), x)
        fused = self.fuses_columns(x, row_dims, variance is not None)
        full_scale: Tensor | float
        if fused:  # the DAC of every window in one compiled pass: the torch path's operations, so its values
            from codesign.cim.read_kernels import adc_scale, dac_windows  # numba: compiled on the first such read

            full_scale = self._workspace("amax_columns", (chips, 1, m), x)
            to_codes = self._workspace("to_codes_columns", (chips, 1, m), x)
            dac_windows(x.detach().numpy(), np.float32(self.steps.dac_max), np.float32(_TINY), codes.view(x.shape).numpy(),
                        full_scale.view(chips, *vectors).numpy(), to_codes.view(chips, *vectors).numpy())
        elif self.converter.is_ideal:
            full_scale = 1.0
            codes.view(x.shape).copy_(x)
        else:
            per_vector = (chips,) + (1,) * row_dims + vectors  # x's shape with the row axes reduced
            if vector_amax is not None and self.uses_vector_amax:
                amax, measured = vector_amax.to(x.dtype).view(per_vector), True
            else:
                amax, measured = self._workspace("amax_columns", (chips, 1, m), x).view(per_vector), False
            full_scale = self._dac(x, tuple(range(1, 1 + row_dims)), codes.view(x.shape), amax, measured)
        p = self._workspace("partial_columns", (chips, gr.out_padded, m), x)
        if chips == 1:
            torch.mm(flat_w.view(gr.out_padded, gr.rows), codes.view(gr.rows, m), out=p.view(gr.out_padded, m))
        else:
            torch.bmm(flat_w.view(chips, gr.out_padded, gr.rows), codes, out=p)  # in ADC steps
        if fused:  # the ADC's round, mask and clamp and the input full scale in one compiled pass
            assert isinstance(full_scale, Tensor)
            mask = torch.empty(p.shape, dtype=torch.bool) if saturation else None
            count = adc_scale(p.numpy(), np.float32(self.steps.adc_max), full_scale.numpy(),
                              mask.numpy() if mask is not None else _NO_MASK, mask is not None)
            saturated = mask if count else None
        else:
            if variance is not None:
                assert gen is not None  # per_input read noise: the Crossbar gives the generators
                var = variance.view(chips, gr.out_padded, gr.rows)
                sq = torch.mul(codes, codes, out=self._workspace("dac_sq_columns", tuple(codes.shape), x))
                std = torch.bmm(var, sq, out=self._workspace("std_columns", tuple(p.shape), x))
                p.addcmul_(std.sqrt_(), self.randn("noise_columns", tuple(p.shape), p, gen))
            saturated = self._adc(p, gen, "adc_noise_columns", saturation)
            if isinstance(full_scale, Tensor):  # the input full scale per vector
                p.mul_(full_scale.view(chips, 1, m))
            elif full_scale != 1.0:
                p.mul_(full_scale)
        if saturated is not None:
            saturated = saturated[:, : gr.out_features].reshape(chips, 1, gr.out_features, *vectors)
        # code unit × ADC step, tile scale and drift compensation per column, and the bias, written vector-major (first
        # vector axis before the outputs): a fresh tensor in the layout a batch of images wants
        first = vectors[0] if vectors else 1
        y = torch.empty((chips, first, gr.out_padded, m // first), dtype=x.dtype, device=x.device)
        p4 = p.view(chips, gr.out_padded, first, m // first)
        scale = state.digital_scale[:, 0].view(chips, gr.out_padded, 1, 1)
        if bias is not None and gr.out_padded == gr.out_features:
            torch.addcmul(bias.view(-1, 1, 1), p4, scale, out=y.transpose(1, 2))
        else:
            torch.mul(p4, scale, out=y.transpose(1, 2))
            y = y[:, :, : gr.out_features]
            if bias is not None:
                y = y + bias.view(-1, 1)
        y = y.transpose(1, 2).reshape(chips, gr.out_features, *vectors)
        return (y if y.dtype == out_dtype else y.to(out_dtype)), saturated
