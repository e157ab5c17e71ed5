"""Crossbar mapping: a weight matrix on tiles of differential pairs, C simulated chips at once.

Mapping (docs/cim.md, "Mapping"):

- The (out, in) weight is zero-padded to whole tiles of ``rows × cols`` and cut into
  ``n_row_tiles × n_col_tiles`` tiles; tile (i, j) holds inputs i·rows.. and outputs j·cols...
- Each tile is scaled by its own largest |w| (per-tile scaling), so its weights lie in
  [−1, 1], and stored on pairs G+ = g_max·max(w, 0), G− = g_max·max(−w, 0).
- A tile reads (G+ − G−)/g_max times the DAC-converted inputs; each column's partial sum
  goes through the ADC; partial sums of the row tiles are rescaled (tile scale, input
  scale, drift-compensation factor) and accumulated digitally.
- Read noise: by default one draw per device per forward call (the array is read once for the
  call's inputs); with ``read_noise="per_input"`` every input vector gets an independent draw,
  computed exactly as Gaussian noise of variance Σ_i x_i²·(σ+_i² + σ−_i²)/g_max² on each
  partial sum (a second matmul).
- IR drop (optional) scales each device by 1 − ir_drop·load·d(row), a static, input-independent
  first-order approximation (docs/cim.md, "IR drop").
- Global drift compensation: at programming, a probe read (all-ones input on every real row,
  no read noise, no converters) gives r0 = Σ_o |y_o|; at time t the same probe gives r(t),
  and the digital output scale is multiplied by r0 / r(t).

Chips: ``program(weight, seed, n_chips=C)`` programs C chips, chip k drawn from its own
generator seeded by (seed, layer_id, first_chip + k), so a chip is the same whatever C it is
programmed with. The forward pass takes C·B rows, chip-major (rows k·B..(k+1)·B−1 go to chip k),
and evaluates all chips in one batched matmul.

Storage: weights are kept per tile as (n_row_tiles, out_padded, rows), flattened to N
(a layer smaller than a tile is stored in the part of the tile it uses)
elements; device arrays are (2, C, N) (the sign-oriented pair, see devices/base.py).
Programming and aging walk these arrays in cache-sized chunks, which keeps every
temporary small (a 4096×4096 layer is 33 M devices per chip).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from codesign.cim.config import CIMConfig
from codesign.cim.converters import max_code
from codesign.cim.devices import DeviceState, apply_faults, draw_faults, make_device

__all__ = ["TileGrid", "Crossbar", "tile_weights", "ir_drop_factor", "derive_seed", "check_seed", "check_time"]

_READ_STREAM = 0x5EAD  # seed key of the read-noise generator (apart from the chips' keys)
_PARAM_STREAM = 0xD81F  # seed key of a chip's time-behaviour parameters (PCM drift exponents)
_CHUNK = 1 << 20  # elements per chunk when programming and aging: temporaries stay small


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


@dataclass(frozen=True)
class TileGrid:
    """How an (out_features, in_features) weight is cut into rows × cols tiles.

    ``rows``/``cols`` are the stored part of a tile: the configured tile size, clipped to the
    layer (a 64×10 layer on a 256×256 tile occupies 64 rows and 10 columns of it).
    """

    in_features: int
    out_features: int
    rows: int
    cols: int

    @property
    def n_row_tiles(self) -> int:
        """Tiles along the inputs (their partial sums are accumulated digitally)."""
        return -(-self.in_features // self.rows)

    @property
    def n_col_tiles(self) -> int:
        """Tiles along the outputs."""
        return -(-self.out_features // self.cols)

    @property
    def in_padded(self) -> int:
        """Inputs rounded up to whole tiles."""
        return self.n_row_tiles * self.rows

    @property
    def out_padded(self) -> int:
        """Outputs rounded up to whole tiles."""
        return self.n_col_tiles * self.cols

    @property
    def n_tiles(self) -> int:
        """Tiles per chip for this layer."""
        return self.n_row_tiles * self.n_col_tiles

    @property
    def tile_shape(self) -> tuple[int, int, int]:
        """Storage shape (n_row_tiles, out_padded, rows) of one chip's weights."""
        return self.n_row_tiles, self.out_padded, self.rows


def tile_weights(weight: Tensor, grid: TileGrid) -> tuple[Tensor, Tensor]:
    """Weights divided by their tile's largest |w|, in tile storage order (n_row_tiles, out_padded, rows),
    and the tile scales (n_row_tiles, out_padded)."""
    pad_in, pad_out = grid.in_padded - grid.in_features, grid.out_padded - grid.out_features
    w = F.pad(weight, (0, pad_in, 0, pad_out)) if pad_in or pad_out else weight
    w = w.view(grid.out_padded, grid.n_row_tiles, grid.rows).transpose(0, 1)
    normalized = w.contiguous() if grid.n_row_tiles > 1 else w.clone()  # a block copy, then in place
    tiles = normalized.view(grid.n_row_tiles, grid.n_col_tiles, grid.cols, grid.rows)
    amax = torch.maximum(tiles.amax(dim=(2, 3)), tiles.amin(dim=(2, 3)).neg())
    amax = torch.where(amax > 0, amax, torch.ones_like(amax))  # an all-zero tile maps to zero conductances
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


class Crossbar(nn.Module):
    """The analog part of one layer on C simulated chips: program, drift, read (no bias)."""

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
        self.device_model = make_device(config.device)
        self.n_chips = 0
        self.t_seconds = 0.0
        self._read_seed = 0
        self._read_generator: torch.Generator | None = None
        self._realized_t: float | None = None  # the time w_eff and read_std were computed for
        self._param_seeds: list[int] = []
        self._scratch: dict[str, Tensor] = {}  # workspaces of the forward pass, reused between calls
        for name in ("tile_scale", "w_normalized", "row_mask", "g_prog", "fault_code", "ir_factor", "reference",
                     "w_eff", "read_std", "out_scale", *(f"param_{p}" for p in self.device_model.param_names)):
            self.register_buffer(name, None, persistent=False)

    def extra_repr(self) -> str:
        g, t = self.grid, self.config.tile
        return (f"in={g.in_features}, out={g.out_features}, tiles={g.n_row_tiles}x{g.n_col_tiles} of "
                f"{t.rows}x{t.cols}, device={self.config.device_name}, chips={self.n_chips}, t={self.t_seconds:g}s")

    # --- programming -------------------------------------------------------------------

    @torch.no_grad()
    def program(self, weight: Tensor, seed: int, n_chips: int = 1, first_chip: int = 0, layer_id: int = 0) -> "Crossbar":
        """Program C chips with this weight: draw every per-device random value once, then drift_to(0)."""
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
        dev, dtype = weight.device, weight.dtype
        model, faults = self.device_model, self.config.faults
        normalized, scale = tile_weights(weight, gr)
        flat = normalized.view(-1)
        n = flat.numel()
        g_prog = torch.empty((2, n_chips, n), dtype=dtype, device=dev)
        code = torch.empty((2, n_chips, n), dtype=torch.int8, device=dev) if faults.active else None
        for k in range(n_chips):
            gen = torch.Generator(device=dev)
            gen.manual_seed(derive_seed(seed, layer_id, first_chip + k))
            for part in _parts(n):
                model.program(flat[part].abs(), gen, out=g_prog[:, k, part])
                if code is not None:
                    code[:, k, part] = draw_faults((2, part.stop - part.start), faults, gen, dev)
        self.g_prog, self.fault_code, self.w_normalized = g_prog, code, flat
        for p in model.param_names:
            setattr(self, f"param_{p}", None)  # drawn on the first drift_to(t > 0)
        self._param_seeds = [derive_seed(seed, layer_id, first_chip + k, _PARAM_STREAM) for k in range(n_chips)]
        self.tile_scale = scale
        row_index = torch.arange(gr.in_padded, device=dev).view(gr.n_row_tiles, gr.rows, 1)
        self.row_mask = (row_index < gr.in_features).to(dtype)
        ir = self.config.tile.ir_drop
        self.ir_factor = ir_drop_factor(normalized, ir, self.config.tile.rows).view(-1) if ir > 0 else None
        self.n_chips = n_chips
        self._read_seed = derive_seed(seed, layer_id, first_chip, n_chips, _READ_STREAM)
        self._read_generator = None
        self.w_eff = self.read_std = self.reference = self.out_scale = None
        self._realized_t = None
        self._realize(0.0)
        if self.config.drift_compensation:
            self.reference = self._probe()
        return self.drift_to(0.0)

    def _materialize_params(self) -> None:
        """Draw the time-behaviour parameters (e.g. PCM drift exponents) of every chip, once."""
        model = self.device_model
        if not model.param_names or getattr(self, f"param_{model.param_names[0]}") is not None:
            return
        n_chips, n = self.g_prog.shape[1], self.g_prog.shape[2]
        params = {p: torch.empty_like(self.g_prog) for p in model.param_names}
        for k in range(n_chips):
            gen = torch.Generator(device=self.g_prog.device)
            gen.manual_seed(self._param_seeds[k])
            for part in _parts(n):
                model.draw_params(self.w_normalized[part].abs(), gen, {p: v[:, k, part] for p, v in params.items()})
        for p, value in params.items():
            setattr(self, f"param_{p}", value)

    def _state(self, chips: slice, part: slice) -> DeviceState:
        params = {}
        for p in self.device_model.param_names:
            value = getattr(self, f"param_{p}")
            if value is not None:
                params[p] = value[:, chips, part]
        return DeviceState(g=self.g_prog[:, chips, part], params=params)

    def _conductance(self, state: DeviceState, chips: slice, part: slice, t: float) -> Tensor:
        g = self.device_model.conductance(state, t)
        if self.fault_code is not None:
            g = apply_faults(g, self.fault_code[:, chips, part], self.device_model.g_max_us)
        return g

    def _realize(self, t: float) -> None:
        """Fill w_eff (C, N) and read_std (C, N) (normalized units) for time t, block by block."""
        model = self.device_model
        if t > 0 and model.has_drift:
            self._materialize_params()
        n_chips, n = self.g_prog.shape[1], self.g_prog.shape[2]
        dev, dtype = self.g_prog.device, self.g_prog.dtype
        if self.w_eff is None or self.w_eff.shape != (n_chips, n):
            self.w_eff = torch.empty((n_chips, n), dtype=dtype, device=dev)
        want_std = model.has_read_noise
        if not want_std:
            self.read_std = None
        elif self.read_std is None or self.read_std.shape != (n_chips, n):
            self.read_std = torch.empty((n_chips, n), dtype=dtype, device=dev)
        inv_g_max = 1.0 / model.g_max_us
        one_over_g_max = torch.tensor(inv_g_max, dtype=dtype, device=dev)
        for chips, part in _blocks(n_chips, n):
            state = self._state(chips, part)
            g_t = self._conductance(state, chips, part, t)
            w = self.w_eff[chips, part]
            # (G_hold − G_partner)·sign(w)/g_max; copysign keeps a sign for w = ±0 (a pair still reads its noise)
            torch.sub(g_t[0], g_t[1], out=w).mul_(torch.copysign(one_over_g_max, self.w_normalized[part]))
            if self.ir_factor is not None:
                w.mul_(self.ir_factor[part])
            if want_std:
                std = model.read_std(state, g_t, t)
                if self.fault_code is not None:
                    std = std.masked_fill_(self.fault_code[:, chips, part] != 0, 0.0)
                # the pair's read noise adds in quadrature: sqrt(σ_hold² + σ_partner²)/g_max
                pair = self.read_std[chips, part]
                torch.hypot(std[0], std[1], out=pair).mul_(inv_g_max)
                if self.ir_factor is not None:
                    pair.mul_(self.ir_factor[part])
        self._realized_t = t

    def _tiles(self, flat: Tensor) -> Tensor:
        """(C, N) -> (C, n_row_tiles, out_padded, rows) view."""
        return flat.view(flat.shape[0], *self.grid.tile_shape)

    def _probe(self) -> Tensor:
        """Σ_o |y_o| of an all-ones probe on the real rows, per chip (C,), from w_eff."""
        per_tile = torch.matmul(self._tiles(self.w_eff), self.row_mask).squeeze(-1)  # (C, n_row_tiles, out_padded)
        y = per_tile.mul_(self.tile_scale).sum(dim=1)
        return y[:, : self.grid.out_features].abs().sum(dim=1)

    @torch.no_grad()
    def drift_to(self, t_seconds: float) -> "Crossbar":
        """Let every chip age to t_seconds after programming (drift, read-noise level, compensation)."""
        t = check_time(t_seconds)
        self._require_programmed()
        time_matters = self.device_model.has_drift or self.device_model.has_read_noise
        if self._realized_t is None or (t != self._realized_t and time_matters):
            self._realize(t)
        scale = self.tile_scale.expand(self.n_chips, -1, -1)
        if self.reference is not None:
            now = self._probe()
            alpha = torch.where(now > 0, self.reference / now, torch.ones_like(now))
            scale = scale * alpha[:, None, None]
        self.out_scale = scale.contiguous()  # (C, n_row_tiles, out_padded)
        self.t_seconds = t
        return self

    def conductances(self) -> Tensor:
        """Device conductances (G+, G−) at the current time, stuck devices included, µS: (C, 2, out, in)."""
        self._require_programmed()
        gr, n = self.grid, self.g_prog.shape[2]
        full = slice(0, self.n_chips), slice(0, n)
        g = self._conductance(self._state(*full), *full, self.t_seconds)
        negative = torch.signbit(self.w_normalized)
        g = torch.where(negative, g.flip(0), g)  # orient back: index 0 is G+
        g = g.view(2, self.n_chips, *gr.tile_shape).permute(1, 0, 3, 2, 4)
        g = g.reshape(self.n_chips, 2, gr.out_padded, gr.in_padded)
        return g[:, :, : gr.out_features, : gr.in_features]

    # --- reading -------------------------------------------------------------------------

    def _require_programmed(self) -> None:
        if self.n_chips == 0:
            raise ValueError("the CIM layer is not programmed: call program(seed) first")

    def _generator(self, device: torch.device) -> torch.Generator:
        gen = self._read_generator
        if gen is None or gen.device != device:
            gen = torch.Generator(device=device)
            gen.manual_seed(self._read_seed)
            self._read_generator = gen
        return gen

    def forward(self, x: Tensor) -> Tensor:
        """y (C·B, out) for inputs x (C·B, in), chip-major; DAC, read noise, ADC, digital accumulation."""
        gr = self.grid
        if x.dim() != 2 or x.shape[1] != gr.in_features:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (batch, {gr.in_features})")
        return self._read(x, columns=False)

    def forward_columns(self, x: Tensor) -> Tensor:
        """y (C·B, out, L) for L input vectors per sample stored as columns, x (C·B, in, L) (unfolded patches).

        Same arithmetic as forward; a layer of one row tile reads the columns in place (W @ x),
        a layer of several row tiles goes through the row layout.
        """
        gr = self.grid
        if x.dim() != 3 or x.shape[1] != gr.in_features:
            raise ValueError(f"input of shape {tuple(x.shape)}: expected (batch, {gr.in_features}, positions)")
        if gr.n_row_tiles > 1:
            n, _, length = x.shape
            y = self._read(x.transpose(1, 2).reshape(n * length, gr.in_features), columns=False)
            return y.view(n, length, gr.out_features).transpose(1, 2)
        return self._read(x, columns=True)

    def _workspace(self, name: str, shape: tuple[int, ...], like: Tensor) -> Tensor:
        """A scratch tensor kept between calls (fresh large allocations cost page faults on every call)."""
        buf = self._scratch.get(name)
        if buf is None or buf.shape != shape or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._scratch[name] = torch.empty(shape, dtype=like.dtype, device=like.device)
        return buf

    def _noisy_weights(self, gen: torch.Generator) -> Tensor:
        """w_eff plus one read-noise draw per device (C, N), in a scratch tensor rewritten every call."""
        buf = self._workspace("noisy_weights", tuple(self.w_eff.shape), self.w_eff)
        torch.randn(buf.shape, generator=gen, out=buf)
        return buf.mul_(self.read_std).add_(self.w_eff)

    def _read(self, x: Tensor, columns: bool) -> Tensor:
        self._require_programmed()
        gr, conv = self.grid, self.config.converter
        n_rows, chips = x.shape[0], self.n_chips
        if n_rows % chips:
            raise ValueError(
                f"batch of {n_rows} rows is not a multiple of n_chips={chips}: give each chip its block (chip_inputs)"
            )
        batch = n_rows // chips
        out_dtype = x.dtype
        x = x.to(self.w_eff.dtype)
        if columns:  # one row tile: (C, B, rows, L), input vectors along dim -2
            xt, vec_dim = x.view(chips, batch, gr.rows, x.shape[2]), -2
        else:  # (C, B, n_row_tiles, rows), input vectors along dim -1, contiguous
            if gr.in_padded != gr.in_features:
                padded = self._workspace("padded_input", (n_rows, gr.in_padded), x)
                padded[:, : gr.in_features] = x
                padded[:, gr.in_features :] = 0.0
                x = padded
            xt, vec_dim = x.view(chips, batch, gr.n_row_tiles, gr.rows), -1
        # DAC: inputs scaled to [-1, 1] (per vector and row tile, or by the fixed range) and, with a
        # finite resolution, held as integer codes; `factor` collects what is re-applied digitally.
        factor: Tensor | float = 1.0
        code_unit = 1.0  # one unit of xq in full-scale inputs
        if conv.is_ideal:
            xq = xt
        else:
            if conv.input_range is None:
                # max |x| per vector from two reductions (no |x| copy of the input)
                amax = torch.maximum(xt.amax(dim=vec_dim, keepdim=True), xt.amin(dim=vec_dim, keepdim=True).neg_())
                full_scale: Tensor | float = amax.masked_fill_(amax == 0, 1.0)
            else:
                full_scale = conv.input_range
            xq = self._workspace("dac_codes", tuple(xt.shape), xt)
            if conv.dac_bits is not None:
                k = max_code(conv.dac_bits)
                torch.mul(xt, k / full_scale, out=xq).round_()
                code_unit = 1.0 / k
            else:
                torch.div(xt, full_scale, out=xq)
            if conv.input_range is not None:
                xq.clamp_(-1.0 / code_unit, 1.0 / code_unit)
            factor = full_scale * code_unit
        gen = None
        if self.read_std is not None or conv.adc_noise > 0:
            gen = self._generator(x.device)
        w_eff = self.w_eff
        if self.read_std is not None and self.config.read_noise == "per_call":
            # one read of the array for this call: a fresh noise draw per device, shared by its inputs
            w_eff = self._noisy_weights(gen)
        weights = self._tiles(w_eff)  # (C, n_row_tiles, out_padded, rows)
        if columns:
            p_shape = (chips, batch, gr.out_padded, x.shape[2])  # (C, B, out_padded, L)
            operands = (weights, xq)
        else:  # partial sums per row tile: (C, n_row_tiles, B, out_padded)
            xq = xq.transpose(1, 2)
            if isinstance(factor, Tensor):
                factor = factor.transpose(1, 2)
            p_shape = (chips, gr.n_row_tiles, batch, gr.out_padded)
            operands = (xq, weights.transpose(-1, -2))
        p = self._workspace("partial_sums", p_shape, x)
        torch.matmul(*operands, out=p)  # in DAC code units
        if self.read_std is not None and self.config.read_noise == "per_input":
            var = self._tiles(self.read_std).square()
            if columns:
                std = torch.matmul(var, xq * xq).sqrt_()
            else:
                std = torch.matmul(xq * xq, var.transpose(-1, -2)).sqrt_()
            p.addcmul_(std, torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype))
        if conv.adc_noise > 0:
            p.add_(torch.randn(p.shape, generator=gen, device=p.device, dtype=p.dtype), alpha=conv.adc_noise / code_unit)
        if conv.adc_bits is not None:
            k_adc = max_code(conv.adc_bits)
            step = conv.adc_range / k_adc / code_unit  # one ADC level in code units
            p.div_(step).round_().clamp_(-k_adc, k_adc)
            factor = factor * step
        if isinstance(factor, Tensor) or factor != 1.0:
            p.mul_(factor)
        # digital tile scale (and drift compensation); the result is a fresh tensor, p stays scratch
        if columns:
            y = torch.mul(p, self.out_scale[:, 0].view(chips, 1, gr.out_padded, 1))
            if gr.out_padded != gr.out_features:
                y = y[:, :, : gr.out_features]
            return y.reshape(n_rows, gr.out_features, x.shape[2]).to(out_dtype)
        if gr.n_row_tiles > 1:
            y = p.mul_(self.out_scale.unsqueeze(2)).sum(dim=1)
        else:
            y = torch.mul(p[:, 0], self.out_scale[:, 0].unsqueeze(1))
        if gr.out_padded != gr.out_features:
            y = y[..., : gr.out_features]
        return y.reshape(n_rows, gr.out_features).to(out_dtype)

    @torch.no_grad()
    def realized_weights(self, read_noise: bool = False) -> Tensor:
        """The weights each chip realizes now, in weight units (C, out, in); converters not included."""
        self._require_programmed()
        w = self._tiles(self.w_eff)
        if read_noise and self.read_std is not None:
            gen = self._generator(w.device)
            noise = torch.randn(w.shape, generator=gen, device=w.device, dtype=w.dtype)
            w = w + self._tiles(self.read_std) * noise
        w = w * self.out_scale.unsqueeze(-1)
        gr = self.grid
        w = w.permute(0, 2, 1, 3).reshape(self.n_chips, gr.out_padded, gr.in_padded)
        return w[:, : gr.out_features, : gr.in_features]
