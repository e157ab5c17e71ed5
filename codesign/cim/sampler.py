"""Chips drawn weight by weight: the distribution of every realized weight, one random number per weight.

A chip's realized weight (normalized to its tile's largest |w|, the differential pair read at time t:
programming noise, drift exponents, drift, clipped read noise, stuck devices) depends on its own target
|w| only, and weights are independent of each other. So instead of simulating both devices of every pair
(six normal numbers per weight: 1.4 M for the MNIST MLP, about three plain training steps of CPU on
their own), :class:`WeightSampler` draws each weight from its inverse distribution function: one uniform
per weight, through a table of quantiles of the exact chip's own realizations.

The table is measured once per chip config and time: a :class:`~codesign.cim.crossbar.Crossbar` of
the same device model, faults and read-noise mode (no IR drop, no compensation) is programmed with
``LEVELS`` target magnitudes a_k = (k/(LEVELS − 1))² (dense near zero, where clipping at zero conductance
and the drift exponent's log dependence change the distribution fastest), ``SAMPLES_PER_LEVEL`` pairs
each, aged to t and read; the table holds ``QUANTILES`` quantiles per level at p_j = (j + ½)/QUANTILES.
A weight of magnitude a is drawn at u ~ U(0, 1) by linear interpolation in p and in a (between the
quantile functions of the two nearest levels), and given its weight's sign. What this leaves out,
against programming every device:

- tails beyond the outermost quantiles (p < 1/(2·QUANTILES) = 4.9e-4): they are clamped to them (for a
  Gaussian, 3.3σ: 0.1 % of the variance);
- the per-chip scatter of the drift-compensation factor: the probe ratio r0/r(t) is its expectation,
  from the levels' mean probe values (a degree-8 polynomial in a); on one chip it scatters around it by
  O(1/√pairs);
- ``per_input`` read noise (a draw per input vector): refused.

IR drop multiplies a drawn weight as it multiplies a programmed pair's. ``tests/cim/test_sampler.py``
checks the draws against programmed chips magnitude by magnitude. Uniforms come from a counter-based
generator (splitmix64 of (seed, layer, chip, segment, index)), so a draw is a function of the seed and the
weight's position only.
"""

from __future__ import annotations

import math
import threading

import numba
import numpy as np
import torch
from torch import Tensor

from codesign.cim.config import CIMConfig, TileConfig
from codesign.cim.crossbar import Crossbar
from codesign.cim.tile_storage import cpu_float32

__all__ = ["LEVELS", "QUANTILES", "SAMPLES_PER_LEVEL", "WeightSampler", "chip_sampler"]

LEVELS = 64  # target magnitudes tabulated, (k/63)² (every 64 inputs of the table's rows hold each once)
QUANTILES = 1024  # quantiles per level (the table, 256 KB, stays in a core's L2 cache)
SAMPLES_PER_LEVEL = 1 << 16  # devices simulated per level to measure the table
_TABLE_INPUTS = 256  # the table crossbar's rows: 4 × LEVELS, one tile high

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@numba.njit(cache=True, nogil=True, fastmath=True)
def _uniforms(seed, first, u):  # pragma: no cover - compiled  # noqa: ANN001
    """u[i] = U[0, 1) of 24 bits from splitmix64(seed, first + i): a pass of its own, which the compiler vectorizes."""
    for i in range(u.shape[0]):
        z = seed + np.uint64(first + i + 1) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
        u[i] = np.float32(np.int64(z >> np.uint64(40))) * np.float32(1.0 / 16777216.0)


# error_model="numpy": a float division need not check for zero (Python's ZeroDivisionError), so the loop vectorizes
@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _coordinates(values, u, n_levels, n_q, at, fa, fu):  # pragma: no cover - compiled  # noqa: ANN001
    """Where each weight reads the quantile table (QUANTILES, LEVELS), flattened: at[i] the index of its lower
    corner (quantile j, level k with levels (k/(LEVELS − 1))²), fa[i] and fu[i] its position between the levels
    and between the quantiles. No memory read but the inputs': the compiler vectorizes it."""
    top, qf = np.float32(n_levels - 1), np.float32(n_q)
    for i in range(values.shape[0]):
        a = min(abs(values[i]), np.float32(1.0))
        k = min(np.int32(math.sqrt(a) * top), np.int32(n_levels - 2))
        fk = np.float32(k)
        fa[i] = (a * top * top - fk * fk) / (np.float32(2.0) * fk + np.float32(1.0))  # linear in |w| between levels
        pos = min(max(u[i] * qf - np.float32(0.5), np.float32(0.0)), qf - np.float32(1.0))
        j = min(np.int32(pos), np.int32(n_q - 2))
        fu[i] = pos - np.float32(j)
        at[i] = j * np.int32(n_levels) + k


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _interpolate(values, at, fa, fu, flat, n_levels, unit, out):  # pragma: no cover - compiled  # noqa: ANN001
    """out[i] = sign(values[i])·unit·Q(u[i]; |values[i]|), bilinear between the four table entries around
    (_coordinates). Unsigned indices: a signed one would be checked for wraparound at every read. Branch-free:
    the signs are random, and a mispredicted branch per weight would cost as much as the arithmetic."""
    row = np.uint64(n_levels)
    for i in range(values.shape[0]):
        corner = np.uint64(at[i])
        t00, t01 = flat[corner], flat[corner + np.uint64(1)]
        t10, t11 = flat[corner + row], flat[corner + row + np.uint64(1)]
        low = t00 + fa[i] * (t01 - t00)
        high = t10 + fa[i] * (t11 - t10)
        out[i] = (low + fu[i] * (high - low)) * math.copysign(unit, values[i])


_CHUNK = 2048  # weights drawn per pass of _draw_span: its uniforms and coordinates stay in the L1 cache


@numba.njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _draw_span(seed, first, values, flat, n_levels, n_q, unit, out):  # pragma: no cover - compiled  # noqa: ANN001
    """out = the draws of values, the uniforms numbered from `first`: _uniforms, _coordinates and _interpolate
    chunk by chunk, so that the two vectorized passes and the gathers share small buffers instead of streaming
    16 bytes per weight through memory."""
    u = np.empty(_CHUNK, np.float32)
    at = np.empty(_CHUNK, np.int32)
    fa = np.empty(_CHUNK, np.float32)
    fu = np.empty(_CHUNK, np.float32)
    n = values.shape[0]
    for start in range(0, n, _CHUNK):
        m = min(_CHUNK, n - start)
        v = values[start: start + m]
        _uniforms(seed, first + start, u[:m])
        _coordinates(v, u[:m], n_levels, n_q, at[:m], fa[:m], fu[:m])
        _interpolate(v, at[:m], fa[:m], fu[:m], flat, n_levels, unit, out[start: start + m])


@numba.njit(cache=True, nogil=True, fastmath=True)
def _scatter(values, scale, out_padded, matrix):  # pragma: no cover - compiled  # noqa: ANN001
    """matrix[o, t, r] = values[i]·scale[g] for device i = g·rows + r of group g = t·out_padded + o, matrix
    (outputs, tiles, rows), outputs <= out_padded: tile order to the layer's layout, in one streaming pass."""
    outputs, tiles, rows = matrix.shape
    for t in range(tiles):
        for o in range(outputs):
            g = t * out_padded + o
            group_scale = scale[g]
            source = np.uint64(g * rows)  # unsigned: no wraparound check per element
            for r in range(rows):
                matrix[o, t, r] = values[source + np.uint64(r)] * group_scale


@numba.njit(cache=True, nogil=True, fastmath=True)
def _probe_sums(values, c, signed, rows, sums):  # pragma: no cover - compiled  # noqa: ANN001
    """The expected probe per group of `rows` consecutive devices (an output of a tile): Σ m(|v|), or
    Σ sign(v)·m(|v|) if signed, m the degree-8 polynomials c (2, 9), highest power first, of the levels' mean
    probe value at programming and at t. Written out so that the compiler keeps it in registers (a table
    lookup per weight would cost three times as much)."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = c[0, 0], c[0, 1], c[0, 2], c[0, 3], c[0, 4], c[0, 5], c[0, 6], c[0, 7], c[0, 8]
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = c[1, 0], c[1, 1], c[1, 2], c[1, 3], c[1, 4], c[1, 5], c[1, 6], c[1, 7], c[1, 8]
    for g in range(values.shape[0] // rows):
        s0 = np.float32(0.0)
        st = np.float32(0.0)
        first = np.uint64(g * rows)
        for i in range(np.uint64(rows)):
            v = values[first + i]
            a = min(abs(v), np.float32(1.0))
            sign = math.copysign(np.float32(1.0), v) if signed else np.float32(1.0)
            s0 += sign * ((((((((a0 * a + a1) * a + a2) * a + a3) * a + a4) * a + a5) * a + a6) * a + a7) * a + a8)
            st += sign * ((((((((b0 * a + b1) * a + b2) * a + b3) * a + b4) * a + b5) * a + b6) * a + b7) * a + b8)
        sums[0, g] = s0
        sums[1, g] = st


def _mix(*keys: int) -> int:
    """A 64-bit seed from non-negative integer keys (splitmix64 chained; cheaper than a SeedSequence per chip)."""
    golden, mix1, mix2, mask = int(_GOLDEN), int(_MIX1), int(_MIX2), (1 << 64) - 1
    z = 0
    for key in keys:
        z = (z + golden + key) & mask
        z = ((z ^ (z >> 30)) * mix1) & mask
        z = ((z ^ (z >> 27)) * mix2) & mask
        z ^= z >> 31
    return z


def level_magnitudes() -> Tensor:
    """The table's target magnitudes (k/(LEVELS − 1))², k = 0..LEVELS − 1: dense near zero, where a pair's
    distribution changes fastest with |w| (clipping at zero conductance, the drift exponent's log dependence)."""
    return (torch.arange(LEVELS, dtype=torch.float64) / (LEVELS - 1)) ** 2


PROBE_DEGREE = 8  # of the polynomials of the levels' mean probe value in |w| (_probe_sums is written for 8)


def _fit_probe(mean_0: Tensor, mean_t: Tensor) -> Tensor:
    """Least-squares polynomials (2, PROBE_DEGREE + 1), highest power first, through the levels' mean probe values
    at programming and at t (their linear interpolation, sampled finely)."""
    fine = np.linspace(0.0, 1.0, 1025)
    levels = level_magnitudes().numpy()
    powers = torch.from_numpy(fine[:, None] ** np.arange(PROBE_DEGREE, -1, -1))
    targets = torch.from_numpy(np.stack([np.interp(fine, levels, m.numpy()) for m in (mean_0, mean_t)], axis=1))
    return torch.linalg.lstsq(powers, targets).solution.T.contiguous()


def _table_config(config: CIMConfig) -> CIMConfig:
    """The chip that measures the table: the same devices, faults and read-noise mode, one tile high, no IR drop,
    no compensation (the sampler applies both itself)."""
    return config.replace(tile=TileConfig(rows=_TABLE_INPUTS, cols=256), drift_compensation="none")


class WeightSampler:
    """Realized weights of one chip config at time t, drawn from measured quantiles (see the module docstring)."""

    def __init__(self, config: CIMConfig, t_seconds: float, seed: int = 0) -> None:
        if config.read_noise == "per_input":
            raise ValueError("read_noise='per_input' gives every input vector its own read noise: chips drawn weight "
                             "by weight read one realization; program the chips instead (program_model)")
        self.config, self.t_seconds = config, float(t_seconds)
        outputs = LEVELS * SAMPLES_PER_LEVEL // _TABLE_INPUTS
        levels = level_magnitudes().to(torch.float32)
        weight = levels.repeat(_TABLE_INPUTS // LEVELS).expand(outputs, _TABLE_INPUTS).contiguous()  # each row: max 1
        chip = Crossbar(_TABLE_INPUTS, outputs, _table_config(config))
        chip.program(weight, seed)
        by_level = (LEVELS, SAMPLES_PER_LEVEL)

        def per_level(w: Tensor) -> Tensor:  # (1, outputs, inputs) -> (LEVELS, samples): column c holds level c % LEVELS
            return w[0].reshape(outputs, _TABLE_INPUTS // LEVELS, LEVELS).permute(2, 0, 1).reshape(by_level)

        probe_0 = per_level(chip.realized_weights(read_noise=False)).double()
        chip.drift_to(self.t_seconds)
        probe_t = per_level(chip.realized_weights(read_noise=False)).double()
        read = per_level(chip.realized_weights(read_noise=True))
        p = (torch.arange(QUANTILES, dtype=torch.float64) + 0.5) / QUANTILES
        self.table = torch.quantile(read.double(), p, dim=1).to(torch.float32).contiguous()  # (QUANTILES, LEVELS)
        signed = config.drift_compensation == "global_ones"
        self.signed_probe = signed
        self.mean_probe_0 = (probe_0 if signed else probe_0.abs()).mean(dim=1)
        self.mean_probe_t = (probe_t if signed else probe_t.abs()).mean(dim=1)
        self._flat_np = self.table.numpy().ravel()
        self.probe_polynomial = _fit_probe(self.mean_probe_0, self.mean_probe_t)
        self._probe_np = self.probe_polynomial.float().numpy()

    def probe(self, values: Tensor, rows: int) -> Tensor:
        """The expected drift-compensation probe (2, groups) per group of `rows` devices (an output of a tile) of the
        normalized weights `values` (contiguous CPU float32): at programming, at t."""
        sums = np.empty((2, values.shape[0] // rows), dtype=np.float32)
        _probe_sums(cpu_float32(values), self._probe_np, self.signed_probe, rows, sums)
        return torch.from_numpy(sums)

    def draw(self, values: Tensor, keys: tuple[int, ...], unit: float, out: Tensor, scale: Tensor | None = None,
             matrix: Tensor | None = None, out_padded: int | None = None) -> Tensor:
        """out = one realization of every weight of `values` (normalized, signed) × unit, the uniforms seeded by the
        integer keys (e.g. seed, layer, chip, segment) and the weight's index; CPU float32 tensors.

        With scale (groups,) and matrix (outputs, tiles, rows), values is in tile order (tiles, out_padded, rows),
        out_padded >= outputs (default outputs): only the first `outputs` of every tile are drawn (the others, a
        tile's unused columns, are left as they are in `out`), and each group's weights × its scale go into the
        matrix (_scatter)."""
        n = values.shape[0]
        v, seed = cpu_float32(values), np.uint64(_mix(*keys))
        w = out.numpy()  # out, scale and matrix are of values' dtype and device (Crossbar.sample)
        spans = [(0, n)]
        if matrix is not None:
            outputs, tiles, rows = matrix.shape
            out_padded = outputs if out_padded is None else out_padded
            if outputs < out_padded:  # a tile's used columns come first: one span per tile
                spans = [(t * out_padded * rows, (t * out_padded + outputs) * rows) for t in range(tiles)]
        for first, end in spans:
            _draw_span(seed, first, v[first:end], self._flat_np, LEVELS, QUANTILES, np.float32(unit), w[first:end])
        if scale is not None and matrix is not None:
            _scatter(w, scale.numpy(), out_padded, matrix.numpy())
        return out


_CACHE: dict[tuple, WeightSampler] = {}
_LOCK = threading.Lock()


def chip_sampler(config: CIMConfig, t_seconds: float) -> WeightSampler:
    """The sampler of a chip config read at t_seconds (measured on first use, about a second; then kept)."""
    key = (config, float(t_seconds))  # not the table's config: making one per call costs its checks
    with _LOCK:
        sampler = _CACHE.get(key)
        if sampler is None:
            sampler = _CACHE[key] = WeightSampler(config, t_seconds)
        return sampler
