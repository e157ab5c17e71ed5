"""Crossbar mapping: a weight matrix on tiles of differential pairs, C simulated chips at once.

Mapping (docs/cim.md, "Mapping"):

- The (out, in) weight is zero-padded to whole tiles of ``rows × cols`` and cut into
  ``n_row_tiles × n_col_tiles`` tiles; tile (i, j) holds inputs i·rows.. and outputs j·cols...
- Each tile is scaled by its own largest |w| (per-tile scaling), so its weights lie in
  [−1, 1], and stored on pairs G+ = g_max·max(w, 0), G− = g_max·max(−w, 0).
- A tile reads (G+ − G−)/g_max times the DAC-converted inputs; each column's partial sum
  goes through the ADC; partial sums of the row tiles are rescaled (tile scale, input
  scale, drift-compensation factor) and accumulated digitally (the read: readout.py, which the
  Crossbar owns and hands the chips' state of every read; the tile layout: tiles.py).
- Read noise: by default (``read_noise="per_time"``) one draw per device per chip and inference
  time, the 1/f fluctuation accumulated up to t (Joshi et al. 2020 / aihwkit): every read at that
  time sees it, a later ``drift_to`` draws anew, and the draw is a function of (seed, layer, chip,
  t) only. ``"per_call"`` draws anew at every forward call (shared by the call's inputs);
  ``"per_input"`` gives every input vector an independent draw, computed exactly as Gaussian
  noise of variance Σ_i x_i²·(σ+_i² + σ−_i²)/g_max² on each partial sum (a second matmul).
- IR drop (optional) scales each device by 1 − ir_drop·load·d(row), a static, input-independent
  first-order approximation (docs/cim.md, "IR drop").
- Global drift compensation: at programming, a probe read (all-ones input on every real row,
  no read noise, no converters) gives r0 = Σ_o |y_o|; at time t the same probe gives r(t),
  and the digital output scale is multiplied by r0 / r(t).

Chips: ``program(weight, seed, n_chips=C)`` programs C chips, chip k drawn from its own
generator seeded by (seed, layer_id, first_chip + k), so a chip is the same whatever C it is
programmed with. The forward pass takes C·B rows, chip-major (rows k·B..(k+1)·B−1 go to chip k),
and evaluates all chips in one batched matmul.

Storage: only devices that hold a weight are simulated. The rows of a layer form at most two
"segments" of equal-height row tiles: the full tiles (n, out_padded, rows) and, when in_features
is not a multiple of the tile height, the used rows of the last tile (1, out_padded, last_rows)
(a layer smaller than a tile is one segment of the rows it uses). Per chip that is
N = out_padded·in_features devices. Every per-device array is stored segment by segment, and
within a segment chip by chip, so each segment of each array is one contiguous
(C, tiles, out_padded, rows) block that a batched matmul reads as it is; device arrays carry the
sign-oriented pair (devices/base.py) in a leading axis of size 2. Programming and aging walk
these arrays in cache-sized chunks (a 4096×4096 layer is 33.5 M devices per chip), and what
depends only on the programmed state (the sign and IR-drop factor of every pair, the read-noise
coefficient) is computed once per chip.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor, nn

from codesign.cim.config import CIMConfig, ConverterConfig
from codesign.cim.devices import DeviceState, apply_faults, draw_faults, make_device
from codesign.cim.readout import CrossbarReadout, ReadState
from codesign.cim.tile_storage import tile_storage
from codesign.cim.tiles import Segment, TileGrid, segment_block, segments_of

__all__ = ["TileGrid", "Crossbar", "tile_weights", "ir_drop_factor", "derive_seed", "check_seed", "check_time"]

_READ_STREAM = 0x5EAD  # seed key of the read-noise generator (apart from the chips' keys)
_PARAM_STREAM = 0xD81F  # seed key of a chip's time-behaviour parameters (PCM drift exponents)
_CHUNK = 1 << 18  # elements per chunk when programming and aging: temporaries stay in the L2 cache
# per-device arrays that a new programming of the same size overwrites entirely: kept as its workspaces
_REUSED = ("g_prog", "fault_code", "pair_scale", "w_magnitude", "w_eff", "read_std", "read_q", "w_read")


def derive_seed(*keys: int) -> int:
    """A 63-bit seed derived from non-negative integer keys (numpy SeedSequence)."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(1, dtype=np.uint64)[0]
    return int(state) & ((1 << 63) - 1)


def check_seed(seed: object, name: str = "seed") -> int:
    """A valid seed (a non-negative int) or a one-line ValueError."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"{name}={seed!r}: must be a non-negative integer")
    return int(seed)


def check_time(t_seconds: object) -> float:
    """A valid time after programming (finite, >= 0 seconds) or a one-line ValueError."""
    if not isinstance(t_seconds, (int, float, np.number)) or isinstance(t_seconds, bool):
        raise ValueError(f"t_seconds={t_seconds!r}: time must be a number of seconds")
    t = float(t_seconds)
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"t_seconds={t_seconds!r}: time must be finite and >= 0 seconds")
    return t


def tile_weights(weight: Tensor, grid: TileGrid) -> tuple[Tensor, Tensor]:
    """Weights divided by their tile's largest |w|, in tile storage order (n_row_tiles, out_padded, rows),
    and the tile scales (n_row_tiles, out_padded)."""
    out, rows, full = grid.out_features, grid.rows, grid.in_features // grid.rows  # full: whole row tiles
    # one strided copy into tile order; only the padding (outputs beyond out, rows beyond the last input) is zeroed
    normalized = torch.empty(grid.tile_shape, dtype=weight.dtype, device=weight.device)
    if grid.out_padded > out:
        normalized[:, out:].zero_()
    if full:
        normalized[:full, :out].copy_(weight[:, : full * rows].view(out, full, rows).transpose(0, 1))
    if full < grid.n_row_tiles:
        last = grid.in_features - full * rows
        normalized[full, :out, :last].copy_(weight[:, full * rows:])
        normalized[full, :, last:].zero_()
    tiles = normalized.view(grid.n_row_tiles, grid.n_col_tiles, grid.cols, grid.rows)
    amax = torch.maximum(tiles.amax(dim=(2, 3)), tiles.amin(dim=(2, 3)).neg())
    amax = torch.where(amax == 0, torch.ones_like(amax), amax)  # an all-zero tile maps to zero conductances; NaN stays
    scale = amax.repeat_interleave(grid.cols, dim=1)  # (n_row_tiles, out_padded)
    normalized.div_(scale.unsqueeze(-1))
    return normalized, scale


def ir_drop_factor(normalized: Tensor, ir_drop: float, physical_rows: int) -> Tensor:
    """Static IR-drop attenuation per device (n_row_tiles, out_padded, rows), 1 = no loss.

    In a tile of R = physical_rows rows, row r sits m = R − r wire segments from the column's
    sense circuit (row 0 farthest). For a uniformly loaded column the voltage lost at distance
    m, relative to the farthest row, is d(m) = (2m(R+1) − m(m+1)) / (R(R+1)); it is scaled by
    the column's load (Σ|w| over its rows / R, i.e. (G+ + G−)/g_max averaged over the tile's
    rows) and by ``ir_drop``.
    """
    big_r = physical_rows
    m = big_r - torch.arange(normalized.shape[-1], dtype=normalized.dtype, device=normalized.device)
    profile = (2 * m * (big_r + 1) - m * (m + 1)) / (big_r * (big_r + 1))
    load = normalized.abs().sum(dim=-1, keepdim=True) / big_r  # (n_row_tiles, out_padded, 1)
    return 1.0 - ir_drop * load * profile


class _SampleViews(NamedTuple):
    """Crossbar.sample's arrays, rewritten in place by every draw of the same chip count."""

    w_read: Tensor  # (C·N,) realized weights in ADC steps, storage order
    out_scale: Tensor  # (C, n_row_tiles, out_padded): tile scale × compensation
    group_scale: Tensor  # out_scale × ADC step: the realized matrix per group
    digital_scale: Tensor  # out_scale × code unit × ADC step: the read's digital rescale
    parts: list[tuple[int, int, Segment, Tensor]]  # (chip, segment index, segment, its view of w_read)
    scales: Tensor  # (3, C, n_row_tiles, out_padded): out_scale, group_scale, digital_scale
    factors: Tensor  # (3, C, 1, 1): 1, ADC step, code unit × ADC step


def _all_finite(x: Tensor) -> bool:
    """True when every value of x is finite (numpy on a small CPU array: a tenth of torch's dispatch)."""
    if x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64):
        return bool(np.isfinite(x.numpy()).all())
    return bool(torch.isfinite(x).all())


def _parts(n_elements: int) -> Iterator[slice]:
    """Slices of about _CHUNK elements covering n_elements."""
    for s in range(0, n_elements, _CHUNK):
        yield slice(s, min(s + _CHUNK, n_elements))


def _blocks(n_chips: int, n_elements: int) -> Iterator[tuple[slice, slice]]:
    """(chip slice, element slice) blocks of about _CHUNK elements covering a (C, N) array."""
    if n_elements >= _CHUNK:
        for k in range(n_chips):
            for s in range(0, n_elements, _CHUNK):
                yield slice(k, k + 1), slice(s, min(s + _CHUNK, n_elements))
    else:
        per_block = max(1, _CHUNK // n_elements)
        for k in range(0, n_chips, per_block):
            yield slice(k, min(k + per_block, n_chips)), slice(0, n_elements)


def _shift(part: slice, offset: int) -> slice:
    return slice(part.start + offset, part.stop + offset)


class Crossbar(nn.Module):
    """The analog part of one layer on C simulated chips: program, drift, read (readout.py; the bias is digital)."""

    def __init__(self, in_features: int, out_features: int, config: CIMConfig) -> None:
        super().__init__()
        if not isinstance(config, CIMConfig):
            raise ValueError(f"config={config!r}: expected a CIMConfig")
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}={v!r}: must be a positive integer")
        self.config = config
        # A layer smaller than a tile uses part of it: store (and simulate) only that part.
        rows, cols = min(config.tile.rows, in_features), min(config.tile.cols, out_features)
        self.grid = TileGrid(in_features, out_features, rows, cols)
        self.segments = segments_of(self.grid)
        self.n_devices = self.grid.out_padded * in_features  # device pairs per chip
        self.device_model = make_device(config.device)
        self.readout = CrossbarReadout(self.grid, self.segments, config.converter)
        # w_eff and read_std are kept in ADC steps (DAC code units / ADC step, a constant of the converters),
        # so the partial sums of a read come out of the matmul ready for the ADC's rounding
        self._adc_step = self.readout.steps.adc_step
        self._code_unit = self.readout.steps.code_unit
        self.n_chips = 0
        self.t_seconds = 0.0
        self._sampled = False  # the chips were drawn weight by weight (sample): realized weights only
        self._sampled_matrix: Tensor | None = None  # their realized weights (C, out, in), weight units
        self._sample_views: _SampleViews | None = None  # sample()'s arrays (_sampling_views)
        self._read_generator: torch.Generator | None = None
        self._read_generator_2: torch.Generator | None = None
        self._realized_t: float | None = None  # the time w_eff was computed for
        self._read_std_t: float | None = None  # the time read_std was computed for
        self._w_read_t: float | None = None  # the time w_read (per_time read noise) was drawn for
        self._chip_read_seeds: list[int] = []
        self._chip_keys = (0, 0, 0)  # (seed, layer_id, first_chip) of the programmed chips
        self._probe_t: float | None = None  # the time of the last probe read (its result is `_probe_now`)
        self._param_seeds: list[int] = []
        for name in ("tile_scale", "w_normalized", "w_magnitude", "ir_factor", "pair_scale", "g_prog", "fault_code", "reference", "read_q",
                     "w_eff", "read_std", "read_var", "w_read", "out_scale", "digital_scale", "_probe_now",
                     *(f"param_{p}" for p in self.device_model.param_names)):
            self.register_buffer(name, None, persistent=False)
        self._spare: dict[str, Tensor] = {}  # the last chips' arrays, reused by the next programming of the same size
        self._workspaces: dict[tuple, Tensor] = {}  # temporaries of the chunk walks, by name and shape

    def __setattr__(self, name: str, value: object) -> None:
        """A registered buffer or an existing plain attribute is set directly: program, drift and read set many of
        them, and nn.Module's checks for parameters and submodules cost more than the small arrays' arithmetic."""
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers and (value is None or isinstance(value, Tensor)):
            buffers[name] = value
        elif name in self.__dict__ and not isinstance(value, nn.Module) \
                and not (isinstance(value, Tensor) and isinstance(value, nn.Parameter)):  # Parameter's check is Python
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def _scratch(self, name: str, shape: tuple[int, ...]) -> Tensor:
        """A temporary of the chunk walks (the conductances' dtype), kept between calls: valid until the next use."""
        key, g = (name, *shape), self.g_prog  # one per shape: the chunks of two segments alternate
        buf = self._workspaces.get(key)
        if buf is None or buf.dtype != g.dtype or buf.device != g.device:
            buf = self._workspaces[key] = torch.empty(shape, dtype=g.dtype, device=g.device)
        return buf

    def _array(self, name: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> Tensor:
        """An uninitialized array for buffer `name`: the previous chips' one when it has this shape (no fresh pages
        and cache misses on every programming of a training loop), else a new one."""
        spare = self._spare.pop(name, None)
        if spare is not None and spare.shape == shape and spare.dtype == dtype and spare.device == device:
            return spare
        return torch.empty(shape, dtype=dtype, device=device)

    def extra_repr(self) -> str:
        g, t = self.grid, self.config.tile
        return (f"in={g.in_features}, out={g.out_features}, tiles={g.n_row_tiles}x{g.n_col_tiles} of "
                f"{t.rows}x{t.cols}, device={self.config.device_name}, chips={self.n_chips}, t={self.t_seconds:g}s")

    # --- layout ----------------------------------------------------------------------------

    def _device_flat(self, tiled: Tensor) -> Tensor:
        """(..., n_row_tiles, out_padded, rows) on whole tiles -> (..., N) in storage order (used rows only)."""
        gr, parts = self.grid, []
        for seg in self.segments:
            first_tile = seg.first_input // gr.rows
            parts.append(tiled[..., first_tile: first_tile + seg.tiles, :, : seg.rows].reshape(*tiled.shape[:-3], -1))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def _seg(self, flat: Tensor, seg: Segment) -> Tensor:
        """One segment of a per-device array (..., C·N): a (..., C, size) view."""
        c = self.n_chips
        return flat[..., c * seg.offset: c * (seg.offset + seg.size)].view(*flat.shape[:-1], c, seg.size)

    def _seg_tiles(self, flat: Tensor, seg: Segment) -> Tensor:
        """One segment of a (C·N,) array as its contiguous (C, tiles, out_padded, rows) block."""
        return segment_block(flat, seg, self.n_chips, self.grid.out_padded)

    def _to_matrix(self, flat: Tensor) -> Tensor:
        """A per-device array (..., C·N) -> (..., C, out_features, in_features)."""
        gr, c, lead = self.grid, self.n_chips, flat.shape[:-1]
        blocks = []
        for seg in self.segments:
            b = self._seg(flat, seg).reshape(*lead, c, seg.tiles, gr.out_padded, seg.rows)
            blocks.append(b.transpose(-2, -3).reshape(*lead, c, gr.out_padded, seg.tiles * seg.rows))
        m = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=-1)
        return m[..., : gr.out_features, :]

    def _walk(self) -> Iterator[tuple[Segment, slice, slice]]:
        """(segment, chip slice, element slice within the segment) chunks covering every stored device."""
        for seg in self.segments:
            for chips, part in _blocks(self.n_chips, seg.size):
                yield seg, chips, part

    # --- programming -------------------------------------------------------------------

    @torch.no_grad()
    def program(self, weight: Tensor, seed: int, n_chips: int = 1, first_chip: int = 0, layer_id: int = 0) -> Crossbar:
        """Program C chips with this weight: draw every per-device random value once, then drift_to(0)."""
        seed, first_chip, layer_id, weight, normalized, scale = self._check_program(weight, seed, n_chips, first_chip,
                                                                                   layer_id)
        dev, dtype = weight.device, weight.dtype
        model, faults = self.device_model, self.config.faults
        flat = self._device_flat(normalized)
        self.n_chips = n_chips
        self._sampled, self._sampled_matrix, self._sample_views = False, None, None
        total = n_chips * self.n_devices
        self._spare.clear()  # the previous chips' arrays of this size become workspaces of these
        if self.g_prog is None or self.g_prog.shape[-1] != total:
            self._workspaces.clear()  # chunks of another shape
        for name in (*_REUSED, *(f"param_{p}" for p in model.param_names)):
            value = self._buffers.get(name)
            if value is not None and value.shape[-1] == total and value.device == dev:
                self._spare[name] = value
        g_prog = self._array("g_prog", (2, total), dtype, dev)
        code = self._array("fault_code", (2, total), torch.int8, dev) if faults.active else None
        # |w|, what the device models program and draw drift exponents from
        self.w_magnitude = torch.abs(flat, out=self._array("w_magnitude", tuple(flat.shape), dtype, dev))
        for k in range(n_chips):
            gen = torch.Generator(device=dev)
            gen.manual_seed(derive_seed(seed, layer_id, first_chip + k))
            for seg in self.segments:
                g_seg = self._seg(g_prog, seg)
                code_seg = self._seg(code, seg) if code is not None else None
                for part in _parts(seg.size):
                    model.program(self.w_magnitude[_shift(part, seg.offset)], gen, out=g_seg[:, k, part])
                    if code_seg is not None:
                        code_seg[:, k, part] = draw_faults((2, part.stop - part.start), faults, gen, dev)
        self.g_prog, self.fault_code, self.w_normalized = g_prog, code, flat
        for p in model.param_names:
            setattr(self, f"param_{p}", None)  # drawn on the first drift_to(t > 0)
        self._chip_keys = (seed, layer_id, first_chip)  # the other streams' seeds are derived when first used
        self._param_seeds, self._chip_read_seeds = [], []
        self.tile_scale = scale
        ir = self.config.tile.ir_drop
        self.ir_factor = self._device_flat(ir_drop_factor(normalized, ir, self.config.tile.rows)) if ir > 0 else None
        # what a pair's conductance difference is multiplied by (sign of its weight over g_max·ADC step, IR drop):
        # it depends on the programmed weights only
        unit = 1.0 / (model.g_max_us * self._adc_step)
        pair_scale = self._array("pair_scale", tuple(flat.shape), dtype, dev).fill_(unit).copysign_(flat)  # ±0 too
        self.pair_scale = pair_scale.mul_(self.ir_factor) if self.ir_factor is not None else pair_scale
        self._read_generator = self._read_generator_2 = None
        self.w_eff = self.read_std = self.read_var = self.w_read = None
        self.read_q = self.reference = self.out_scale = self.digital_scale = None
        self._realized_t = self._read_std_t = self._probe_t = self._w_read_t = None
        self.readout.clear()
        self._realize(0.0)
        if self.config.drift_compensation != "none":
            self.reference = self._probe()
            self._probe_now, self._probe_t = self.reference, 0.0
        return self.drift_to(0.0)

    def _check_program(self, weight: Tensor, seed: int, n_chips: int, first_chip: int, layer_id: int,
                       tile: Callable[[Tensor, TileGrid], tuple[Tensor, Tensor]] = tile_weights,
                       ) -> tuple[int, int, int, Tensor, Tensor, Tensor]:
        """The checked keys, the detached weight and its tiles (normalized, scales, by `tile`), or a one-line
        ValueError."""
        seed = check_seed(seed)
        layer_id = check_seed(layer_id, "layer_id")
        first_chip = check_seed(first_chip, "first_chip")
        if not isinstance(n_chips, int) or isinstance(n_chips, bool) or n_chips < 1:
            raise ValueError(f"n_chips={n_chips!r}: must be a positive integer")
        gr = self.grid
        if tuple(weight.shape) != (gr.out_features, gr.in_features):
            raise ValueError(f"weight of shape {tuple(weight.shape)}: expected ({gr.out_features}, {gr.in_features})")
        if not weight.is_floating_point():
            raise ValueError(f"weight of dtype {weight.dtype}: expected a floating-point tensor")
        weight = weight.detach()
        normalized, scale = tile(weight, gr)
        # one inf would set its tile's scale and zero (or NaN) every other weight; the tile maxima (which propagate
        # NaN) are then inf or NaN: a check on the few tile scales instead of another pass over the weight
        if not _all_finite(scale):
            bad = int((~torch.isfinite(weight)).sum())
            raise ValueError(f"weight has {bad} non-finite value(s) (inf or NaN): a conductance cannot hold them; "
                             "check the model for a diverged training")
        return seed, first_chip, layer_id, weight, normalized, scale

    @torch.no_grad()
    def sample(self, weight: Tensor, seed: int, sampler, n_chips: int = 1, first_chip: int = 0,  # noqa: ANN001
               layer_id: int = 0) -> Crossbar:
        """C chips read at sampler.t_seconds, every weight drawn from its realized distribution (sampler.py).

        The chips hold their realized weights only (no device state): they are read and give gradients like
        programmed ones, but cannot be aged (drift_to) or asked for conductances.
        """
        gr, ir = self.grid, self.config.tile.ir_drop
        # a CPU float32 weight without IR drop goes straight to storage order, in one pass (tile_storage.tile_storage)
        fused = ir == 0 and weight.dtype == torch.float32 and weight.device.type == "cpu"
        seed, first_chip, layer_id, weight, normalized, scale = self._check_program(
            weight, seed, n_chips, first_chip, layer_id, tile_storage if fused else tile_weights)
        views = self._sample_views
        if n_chips != self.n_chips or not self._sampled or views is None or views.w_read.dtype != weight.dtype \
                or views.w_read.device != weight.device:
            self.readout.clear()
            self.n_chips = n_chips  # the segment views of w_read
            views = self._sample_views = self._sampling_views(n_chips, weight)
        flat = normalized if fused else self._device_flat(normalized)
        ir_factor = self._device_flat(ir_drop_factor(normalized, ir, gr.rows)) if ir > 0 else None
        alpha = None
        if self.config.drift_compensation != "none":  # the probe ratio's expectation (sampler.py)
            sums = torch.cat([sampler.probe(flat[seg.offset: seg.offset + seg.size], seg.rows) for seg in self.segments],
                             dim=1).view(2, gr.n_row_tiles, gr.out_padded).to(scale.dtype)
            y = sums.mul_(scale).sum(dim=1)  # (2, out_padded): at programming, at t
            if self.config.drift_compensation != "per_column":
                y = y[:, : gr.out_features].abs().sum(dim=1, keepdim=True)
            alpha = torch.where(y[1] > 0, y[0] / y[1], torch.ones_like(y[1]))
        # out_scale, group_scale and digital_scale (C, n_row_tiles, out_padded) of every chip in one product (× 1, ×
        # ADC step, × code unit · ADC step), rewritten in place: the read plan stays
        torch.mul(scale * alpha if alpha is not None else scale, views.factors, out=views.scales)
        out_scale = views.out_scale
        # the realized weights in the layer's layout (realized_weights, the straight-through backward) come out of
        # the same pass: w_read × out_scale × ADC step. A fresh array: a graph of an earlier read may hold the last.
        # The unused columns of a tile (outputs out_features..out_padded) are not drawn: their w_read stays 0.
        outputs = gr.out_features
        matrix = torch.empty((n_chips, outputs, gr.in_features), dtype=weight.dtype, device=weight.device)
        unit = 1.0 / self._adc_step
        for k, i, seg, out in views.parts:
            first_tile = seg.first_input // gr.rows
            columns = matrix[k, :, seg.first_input: seg.first_input + seg.tiles * seg.rows]
            target = columns.view(outputs, seg.tiles, seg.rows)
            scales = views.group_scale[k, first_tile: first_tile + seg.tiles].view(-1)
            sampler.draw(flat[seg.offset: seg.offset + seg.size], (seed, layer_id, first_chip + k, i), unit, out, scales,
                         target, gr.out_padded)
            if ir_factor is not None:
                ir_seg = ir_factor[seg.offset: seg.offset + seg.size]
                out.mul_(ir_seg)
                target.mul_(ir_seg.view(seg.tiles, gr.out_padded, seg.rows)[:, :outputs].transpose(0, 1))
        self._chip_keys = (seed, layer_id, first_chip)
        self.w_normalized, self.tile_scale, self.ir_factor = flat, scale, ir_factor
        if not self._sampled:  # the device state of programmed chips goes
            self.g_prog = self.fault_code = self.pair_scale = self.w_eff = self.reference = None
            self.read_q = self.read_std = self.read_var = None
            for p in self.device_model.param_names:
                setattr(self, f"param_{p}", None)
            self._spare.clear()
            self._workspaces.clear()
            self._read_generator = self._read_generator_2 = None
            self._param_seeds, self._chip_read_seeds = [], []
        self._sampled, self.w_read, self._sampled_matrix = True, views.w_read, matrix
        t = sampler.t_seconds
        self._realized_t = self._w_read_t = self._read_std_t = self._probe_t = t
        self.out_scale, self.digital_scale, self.t_seconds = out_scale, views.digital_scale, t
        return self

    def _sampling_views(self, n_chips: int, like: Tensor) -> _SampleViews:
        """What sample() writes, kept while the chip count stays (sample rewrites them in place)."""
        gr = self.grid
        w_read = torch.zeros(n_chips * self.n_devices, dtype=like.dtype, device=like.device)  # unused columns stay 0
        scales = torch.empty((3, n_chips, gr.n_row_tiles, gr.out_padded), dtype=like.dtype, device=like.device)
        parts = [(k, i, seg, self._seg(w_read, seg)[k]) for k in range(n_chips) for i, seg in enumerate(self.segments)]
        factors = torch.tensor([1.0, self._adc_step, self._code_unit * self._adc_step], dtype=like.dtype,
                               device=like.device).view(3, 1, 1, 1).expand(3, n_chips, 1, 1)  # (T, O) × it: every chip
        return _SampleViews(w_read, scales[0], scales[1], scales[2], parts, scales, factors)

    def _materialize_params(self) -> None:
        """Draw the time-behaviour parameters (e.g. PCM drift exponents) of every chip, once."""
        model = self.device_model
        if not model.param_names or getattr(self, f"param_{model.param_names[0]}") is not None:
            return
        g = self.g_prog
        params = {p: self._array(f"param_{p}", tuple(g.shape), g.dtype, g.device) for p in model.param_names}
        seed, layer_id, first_chip = self._chip_keys
        self._param_seeds = [derive_seed(seed, layer_id, first_chip + k, _PARAM_STREAM) for k in range(self.n_chips)]
        for k in range(self.n_chips):
            gen = torch.Generator(device=self.g_prog.device)
            gen.manual_seed(self._param_seeds[k])
            for seg in self.segments:
                views = {p: self._seg(v, seg) for p, v in params.items()}
                for part in _parts(seg.size):
                    magnitude = self.w_magnitude[_shift(part, seg.offset)]
                    model.draw_params(magnitude, gen, {p: v[:, k, part] for p, v in views.items()})
        for p, value in params.items():
            setattr(self, f"param_{p}", value)

    def _state(self, seg: Segment, chips: slice, part: slice) -> DeviceState:
        params = {}
        for p in self.device_model.param_names:
            value = getattr(self, f"param_{p}")
            if value is not None:
                params[p] = self._seg(value, seg)[:, chips, part]
        return DeviceState(g=self._seg(self.g_prog, seg)[:, chips, part], params=params)

    def _conductance(self, state: DeviceState, seg: Segment, chips: slice, part: slice, t: float) -> Tensor:
        """Conductances (2, chips, n) of a chunk at t, stuck devices included (in a workspace when computed)."""
        g = self.device_model.conductance(state, t, out=self._scratch("g_t", tuple(state.g.shape)))
        if self.fault_code is not None:
            g = apply_faults(g, self._seg(self.fault_code, seg)[:, chips, part], self.device_model.g_max_us)
        return g

    def _empty_per_chip(self, name: str) -> Tensor:
        return self._array(name, (self.n_chips * self.n_devices,), self.g_prog.dtype, self.g_prog.device)

    def _pair_scale(self, part: slice) -> Tensor:
        """What a pair's conductance difference is multiplied by: its weight's sign over g_max·ADC step, IR drop
        (a view of the buffer computed at programming: not to be modified)."""
        return self.pair_scale[part]

    def _realize(self, t: float, with_read_std: bool = False, weights: bool = True) -> None:
        """Fill w_eff (C·N, normalized units / ADC step) for time t, chunk by chunk, and read_std with it when the
        read-noise coefficients are known (or asked for): one pass computes each conductance once."""
        model = self.device_model
        if t > 0 and model.has_drift:
            self._materialize_params()
        if self.w_eff is None:
            self.w_eff = self._empty_per_chip("w_eff")
        # read_std is kept up to date once the coefficients are known, unless the clipped per_time read, which
        # draws from the conductances, is the only read that would use it
        std_too = model.has_read_noise and (with_read_std or (self.read_q is not None and not self._clipped_time_noise))
        if std_too and self.read_q is None:
            self.read_q = self._array("read_q", tuple(self.g_prog.shape), self.g_prog.dtype, self.g_prog.device)
            new_q = True
        else:
            new_q = False
        if std_too and self.read_std is None:
            self.read_std = self._empty_per_chip("read_std")
        factor = model.read_time_factor(t) if std_too else 1.0
        for seg, chips, part in self._walk():
            state = self._state(seg, chips, part)
            g_t = self._conductance(state, seg, chips, part, t)
            device_part = _shift(part, seg.offset)
            pair_scale = self._pair_scale(device_part) if weights or self.ir_factor is not None else None
            if weights:
                w = self._seg(self.w_eff, seg)[chips, part]
                torch.sub(g_t[0], g_t[1], out=w).mul_(pair_scale)  # (G_hold − G_partner)·sign(w)/g_max·IR
            if not std_too:
                continue
            q = self._seg(self.read_q, seg)[:, chips, part]
            if new_q:
                self._fill_read_q(q, state, seg, chips, part)
            sigma = torch.mul(g_t, q).square_()
            # the pair's read noise adds in quadrature: sqrt(σ_hold² + σ_partner²)·|sign/g_max·IR|·time factor
            std = self._seg(self.read_std, seg)[chips, part]
            torch.add(sigma[0], sigma[1], out=std).sqrt_()
            if pair_scale is None:
                std.mul_(factor / (model.g_max_us * self._adc_step))
            else:
                std.mul_(pair_scale.abs().mul_(factor))
        self._realized_t = t
        self.read_var = None
        if std_too or not model.has_read_noise:
            self._read_std_t = t
            if not model.has_read_noise:
                self.read_std = None

    def _fill_read_q(self, q: Tensor, state: DeviceState, seg: Segment, chips: slice, part: slice) -> None:
        """The read-noise coefficients of a chunk: they depend on the programmed state only (once per chip)."""
        coefficient = self.device_model.read_coefficient(state, out=q)
        if coefficient is not q:
            q.copy_(coefficient)
        if self.fault_code is not None:  # a stuck device adds no read noise
            q.masked_fill_(self._seg(self.fault_code, seg)[:, chips, part] != 0, 0.0)

    def _current_read_std(self) -> Tensor | None:
        """read_std at the current time; computed on the first noisy read after programming or drift_to."""
        if self._read_std_t != self._realized_t:
            self._realize(self._realized_t, with_read_std=True, weights=False)
        return self.read_std

    def _probe(self) -> Tensor:
        """The drift-compensation probe read from w_eff (no read noise, no converters): per chip (C,) for
        "global" (Σ |w|: aihwkit's one-hot probes, whose mean |y| is the mean |w|) and "global_ones"
        (Σ_o |Σ_i w_oi| of an all-ones probe), per chip and output (C, out_padded) for "per_column"."""
        mode = self.config.drift_compensation
        if mode == "global_ones":
            sums = [self._seg_tiles(self.w_eff, seg).sum(dim=-1) for seg in self.segments]  # (C, tiles, out_padded)
        else:
            sums = [self._seg_tiles(self.w_eff, seg).abs().sum(dim=-1) for seg in self.segments]
        per_tile = sums[0] if len(sums) == 1 else torch.cat(sums, dim=1)
        y = per_tile.mul_(self.tile_scale).sum(dim=1)  # (C, out_padded)
        if mode == "per_column":
            return y
        return y[:, : self.grid.out_features].abs().sum(dim=1)

    @torch.no_grad()
    def drift_to(self, t_seconds: float) -> Crossbar:
        """Let every chip age to t_seconds after programming (drift, compensation, read-noise level).

        The read-noise level is computed here once the chip has been read (its per-device coefficients
        are then known), else on the next noisy read.
        """
        t = check_time(t_seconds)
        self._require_devices()
        time_matters = self.device_model.has_drift or self.device_model.has_read_noise
        if self._realized_t is None or (t != self._realized_t and time_matters):
            self._realize(t)
        scale = self.tile_scale.expand(self.n_chips, -1, -1)
        if self.reference is not None:
            if self._probe_t != self._realized_t:
                self._probe_now, self._probe_t = self._probe(), self._realized_t
            now = self._probe_now
            alpha = torch.where(now > 0, self.reference / now, torch.ones_like(now))
            scale = scale * (alpha[:, None, :] if alpha.dim() == 2 else alpha[:, None, None])
        self.out_scale = scale.contiguous()  # (C, n_row_tiles, out_padded)
        self.digital_scale = self.out_scale * (self._code_unit * self._adc_step)  # × ADC codes × input full scale
        self.t_seconds = t
        return self

    def conductances(self) -> Tensor:
        """Device conductances (G+, G−) at the current time, stuck devices included, µS: (C, 2, out, in)."""
        self._require_devices()
        g = torch.empty_like(self.g_prog)
        for seg, chips, part in self._walk():
            g_t = self._conductance(self._state(seg, chips, part), seg, chips, part, self.t_seconds)
            self._seg(g, seg)[:, chips, part] = g_t
        negative = torch.signbit(self.w_normalized).repeat(self.n_chips) if len(self.segments) == 1 else \
            torch.cat([torch.signbit(self.w_normalized[seg.offset: seg.offset + seg.size]).repeat(self.n_chips)
                       for seg in self.segments])
        g = torch.where(negative, g.flip(0), g)  # orient back: index 0 is G+
        return self._to_matrix(g).transpose(0, 1)

    # --- reading: the checks and the chips' state here, the converters and GEMMs in readout.py --------

    def forward(self, x: Tensor, bias: Tensor | None = None) -> Tensor:
        """y (C·B, out) for inputs x (C·B, in), chip-major; DAC, read noise, ADC, digital accumulation, + bias."""
        return self._rows(x, bias, False)[0]

    def forward_saturation(self, x: Tensor, bias: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """forward, and the mask (C, n_row_tiles, B, out) of the tile partial sums the ADC saturated (None if none):
        what the straight-through backward stops (hwa.py)."""
        return self._rows(x, bias, True)

    def _rows(self, x: Tensor, bias: Tensor | None, saturation: bool) -> tuple[Tensor, Tensor | None]:
        gr = self.grid
        if x.dim() != 2 or x.shape[1] != gr.in_features:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (batch, {gr.in_features})")
        self.readout.check_bias(bias)
        if torch.is_grad_enabled():  # no gradients through the converters (hwa.py gives the straight-through backward)
            with torch.no_grad():
                return self._read_rows(x, bias, saturation)
        return self._read_rows(x, bias, saturation)

    def forward_columns(self, x: Tensor, row_dims: int = 1, bias: Tensor | None = None,
                        vector_amax: Tensor | None = None) -> Tensor:
        """y (C, out, *vectors) for x (C, *rows, *vectors): every chip's input vectors stored as columns.

        The first row_dims axes after the chip axis hold the in_features inputs of a vector (e.g. C_in, k_h,
        k_w of a convolution window) and the rest index the vectors (e.g. batch, H_out, W_out); x may be
        any strided view, such as the overlapping windows of a padded image, and is read in place. On a
        layer of one row tile the result is stored with the first vector axis outermost after the chips,
        so y.transpose(1, 2) is contiguous. vector_amax (C, *vectors), max |x| over each vector, may be
        given when the caller has it cheaper (a convolution: a windowed max of the channel max); the DAC
        then clamps it in place. Same arithmetic as forward; a layer of several row tiles goes through the
        row layout.
        """
        return self._columns(x, row_dims, bias, vector_amax, False)[0]

    def forward_columns_saturation(self, x: Tensor, row_dims: int = 1, bias: Tensor | None = None,
                                   vector_amax: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """forward_columns, and the mask (C, n_row_tiles, out, *vectors) of the tile partial sums the ADC saturated
        (None if none)."""
        return self._columns(x, row_dims, bias, vector_amax, True)

    def _columns(self, x: Tensor, row_dims: int, bias: Tensor | None, vector_amax: Tensor | None,
                 saturation: bool) -> tuple[Tensor, Tensor | None]:
        gr = self.grid
        vectors = tuple(x.shape[1 + row_dims:])
        if row_dims < 1 or x.dim() < 2 + row_dims or math.prod(x.shape[1: 1 + row_dims]) != gr.in_features:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (chips, rows, vectors...) with "
                             f"{row_dims} row axes holding {gr.in_features} inputs")
        self._require_programmed()
        chips = self.n_chips
        if x.shape[0] != chips:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected n_chips={chips} in its first axis")
        self.readout.check_bias(bias)
        if math.prod(vectors) == 0:  # an empty batch: nothing to read (and no noise drawn)
            return x.new_zeros((chips, gr.out_features, *vectors)), None
        with torch.no_grad():
            if gr.n_row_tiles > 1:  # every vector a row, then back to (C, out, *vectors)
                order = (0, *range(1 + row_dims, x.dim()), *range(1, 1 + row_dims))
                y, saturated = self._read_rows(x.permute(order).reshape(-1, gr.in_features), bias, saturation)
                y = y.view(chips, *vectors, gr.out_features)
                if saturated is not None:  # (C, tiles, M, out) -> (C, tiles, out, *vectors)
                    saturated = saturated.view(chips, gr.n_row_tiles, *vectors, gr.out_features).movedim(-1, 2)
                return y.permute(0, y.dim() - 1, *range(1, y.dim() - 1)), saturated
            return self.readout.read_columns(x, row_dims, bias, vector_amax, self._read_state(x.device), saturation)

    def _read_rows(self, x: Tensor, bias: Tensor | None, saturation: bool = False) -> tuple[Tensor, Tensor | None]:
        self.chip_batch(x.shape[0])
        state = self._read_state(x.device)
        if saturation:
            return self.readout.read_rows_saturation(x, bias, state)
        return self.readout.read_rows(x, bias, state), None

    def chip_batch(self, n_rows: int) -> int:
        """Inputs per chip in a chip-major batch of n_rows (a one-line error if not programmed or not a multiple)."""
        self._require_programmed()
        if n_rows % self.n_chips:
            raise ValueError(
                f"batch of {n_rows} rows is not a multiple of n_chips={self.n_chips}: give each chip its block (chip_inputs)"
            )
        return n_rows // self.n_chips

    @property
    def uses_vector_amax(self) -> bool:
        """True when forward_columns can use a caller's max |x| per vector (readout.CrossbarReadout.uses_vector_amax)."""
        return self.readout.uses_vector_amax

    def set_converter(self, converter: ConverterConfig) -> None:
        """Read with another converter configuration of the same resolution (e.g. a calibrated input range)."""
        self.readout.set_converter(converter)
        self.config = self.config.replace(converter=converter)

    def _read_state(self, device: torch.device) -> ReadState:
        """What this read sees of the chips now: the weights read, per-input variance, generators, digital scale."""
        # the read generators draw per_call and per_input read noise and the ADC noise (per_time has its own streams)
        fresh_noise = self.device_model.has_read_noise and self.config.read_noise != "per_time" and not self._sampled
        generators = self._generators(device) if fresh_noise or self.config.converter.adc_noise > 0 else None
        per_input = self._per_input_noise()
        weights = self._read_weights(generators)
        variance = self._read_variance() if per_input else None
        columns = self.grid.out_features if self._sampled else None  # a drawn chip's unused columns are empty
        return ReadState(self.n_chips, weights, variance, generators, self.digital_scale, columns)

    def _per_input_noise(self) -> bool:
        """True when a read draws per-input read noise (its variance in ReadState)."""
        return self.config.read_noise == "per_input" and self._current_read_std() is not None

    def fuses_column_read(self, x: Tensor, row_dims: int = 1) -> bool:
        """True when forward_columns of x runs the compiled kernels (readout.CrossbarReadout.fuses_columns), which
        measure every vector's max |x| themselves (a caller's vector_amax is not needed)."""
        return self.n_chips > 0 and self.readout.fuses_columns(x, row_dims, self._per_input_noise())

    def _require_programmed(self) -> None:
        if self.n_chips == 0:
            raise ValueError("the CIM layer is not programmed: call program(seed) first")

    def _require_devices(self) -> None:
        self._require_programmed()
        if self._sampled:
            raise ValueError(f"these chips were drawn weight by weight at t={self.t_seconds:g} s and hold no device "
                             "state to age or measure: program them (program_model) instead")

    def _generators(self, device: torch.device) -> tuple[torch.Generator, torch.Generator]:
        """The read-noise generator of these chips and its companion stream (readout.CrossbarReadout.randn)."""
        gen, second = self._read_generator, self._read_generator_2
        if gen is None or second is None or gen.device != device:
            seed, layer_id, first_chip = self._chip_keys
            read_seed = derive_seed(seed, layer_id, first_chip, self.n_chips, _READ_STREAM)
            gen = torch.Generator(device=device)
            gen.manual_seed(read_seed)
            second = torch.Generator(device=device)
            second.manual_seed(derive_seed(read_seed, 2))
            self._read_generator, self._read_generator_2 = gen, second
        return gen, second

    def _read_weights(self, generators: tuple[torch.Generator, torch.Generator] | None) -> Tensor:
        """The weights this call reads (C·N): w_eff plus the read noise of per_time (kept) or per_call (fresh)."""
        if self._sampled:
            return self.w_read
        if not self.device_model.has_read_noise or self.config.read_noise == "per_input":
            return self.w_eff
        if self.config.read_noise == "per_time":
            return self._time_read_weights()
        std = self._current_read_std()
        assert generators is not None and std is not None  # read noise makes the read noisy: _read_state drew the generators
        noise = self.readout.randn("noisy_weights", tuple(self.w_eff.shape), self.w_eff, generators)
        return torch.addcmul(self.w_eff, std, noise, out=noise)  # one pass: w + σ·ε

    @property
    def _clipped_time_noise(self) -> bool:
        """per_time read noise clipped at zero conductance: w_read comes from the conductances (no read_std)."""
        return (self.config.read_noise == "per_time" and self.device_model.has_read_noise
                and getattr(self.device_model.config, "clip_read_noise", False))

    def _time_generators(self, t: float) -> list[torch.Generator]:
        """One generator per chip for the per_time read noise at t, seeded by (chip, t)."""
        if not self._chip_read_seeds:
            seed, layer_id, first_chip = self._chip_keys
            self._chip_read_seeds = [derive_seed(seed, layer_id, first_chip + k, _READ_STREAM)
                                     for k in range(self.n_chips)]
        t_key = int.from_bytes(struct.pack("<d", t), "little")  # the exact time, as 64 bits
        gens = []
        for chip_seed in self._chip_read_seeds:
            gen = torch.Generator(device=self.g_prog.device)
            gen.manual_seed(derive_seed(chip_seed, t_key))
            gens.append(gen)
        return gens

    def _time_read_weights(self) -> Tensor:
        """w_eff + σ·ε with ε drawn once per chip and time t from a generator seeded by (chip, t)."""
        t = self._realized_t
        assert t is not None  # programmed chips are realized
        if self.w_read is not None and self._w_read_t == t:
            return self.w_read
        if self.w_read is None:
            self.w_read = self._empty_per_chip("w_read")
        if self._clipped_time_noise:
            return self._clipped_read_weights(t)
        std = self._current_read_std()
        assert std is not None  # the device has read noise
        for k, gen in enumerate(self._time_generators(t)):
            for seg in self.segments:
                noise = self._seg(self.w_read, seg)[k]
                torch.randn(noise.shape, generator=gen, out=noise, dtype=noise.dtype)
        self.w_read.mul_(std).add_(self.w_eff)
        self._w_read_t = t
        return self.w_read

    def _clipped_read_weights(self, t: float) -> Tensor:
        """w_read for time t with every device read as max(g(t) + σ_read·ε, 0) (aihwkit clips at zero), ε drawn
        per device from a generator seeded by (chip, t), chunk by chunk; the read-noise coefficients are
        computed in the same pass on the first read after programming."""
        model = self.device_model
        factor = model.read_time_factor(t)
        gens = self._time_generators(t)
        new_q = self.read_q is None
        if new_q:
            self.read_q = self._array("read_q", tuple(self.g_prog.shape), self.g_prog.dtype, self.g_prog.device)
        for seg, chips, part in self._walk():
            state = self._state(seg, chips, part)
            g_t = self._conductance(state, seg, chips, part, t)  # (2, chips, n)
            q = self._seg(self.read_q, seg)[:, chips, part]
            if new_q:
                self._fill_read_q(q, state, seg, chips, part)
            sigma = torch.mul(g_t, q, out=self._scratch("sigma", tuple(g_t.shape))).mul_(factor)
            n_chips, n = g_t.shape[1], g_t.shape[2]
            noise = self._scratch("noise", (n_chips, 2, n))  # contiguous per chip: the
            for j, k in enumerate(range(chips.start, chips.stop)):  # values do not depend on the chips in the pass
                torch.randn((2, n), generator=gens[k], out=noise[j], dtype=noise.dtype)
            g_read = noise.transpose(0, 1).mul_(sigma).add_(g_t).clamp_(min=0.0)
            w = self._seg(self.w_read, seg)[chips, part]
            torch.sub(g_read[0], g_read[1], out=w).mul_(self._pair_scale(_shift(part, seg.offset)))
        self._w_read_t = t
        return self.w_read

    def _read_variance(self) -> Tensor:
        """read_std² (C·N), kept until the next drift_to (per_input read noise)."""
        if self.read_var is None:
            self.read_var = self._current_read_std().square()
        return self.read_var

    def read_realization(self) -> Tensor:
        """The weights (C, out, in) the last read saw, for the straight-through backward (hwa.py): a drawn chip's own
        (as sample() wrote them), else realized_weights with the per_time read-noise draw."""
        if self._sampled and self._sampled_matrix is not None:
            return self._sampled_matrix
        return self.realized_weights(read_noise=self.config.read_noise == "per_time")

    @torch.no_grad()
    def realized_weights(self, read_noise: bool = False) -> Tensor:
        """The weights each chip realizes now, in weight units (C, out, in); converters not included. Chips drawn
        weight by weight (sample) have one realization, read noise included, whatever read_noise asks."""
        self._require_programmed()
        if self._sampled:
            assert self._sampled_matrix is not None  # sample() writes it with w_read
            return self._sampled_matrix[:, : self.grid.out_features]
        w = self.w_eff
        if read_noise and self.device_model.has_read_noise:
            if self.config.read_noise == "per_time":
                w = self._time_read_weights()  # the realization every read at this time sees
            else:
                std = self._current_read_std()
                assert std is not None  # the device has read noise
                gen, _ = self._generators(w.device)
                w = torch.addcmul(w, std, torch.randn(w.shape, generator=gen, device=w.device, dtype=w.dtype))
        gr, chips = self.grid, self.n_chips
        m = torch.empty((chips, gr.out_padded, gr.in_features), dtype=w.dtype, device=w.device)
        for seg in self.segments:  # each segment's tiles scaled straight into their columns of the matrix
            first_tile = seg.first_input // gr.rows
            out_scale = self.out_scale[:, first_tile: first_tile + seg.tiles].unsqueeze(-1) * self._adc_step
            columns = m[:, :, seg.first_input: seg.first_input + seg.tiles * seg.rows]
            target = columns.view(chips, gr.out_padded, seg.tiles, seg.rows).transpose(1, 2)
            torch.mul(self._seg_tiles(w, seg), out_scale, out=target)
        return m[:, : gr.out_features]
