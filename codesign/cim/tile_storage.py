"""A weight in the crossbar's storage order, normalized tile by tile, in one pass (the CPU path of programming).

``tile_storage`` gives the values of ``crossbar.tile_weights`` followed by ``Crossbar._device_flat`` for a
CPU float32 weight without IR drop: what the crossbar programs and what the weight-by-weight sampler
draws from. It imports nothing of the crossbar or the sampler, so both can use it.
"""

from __future__ import annotations

import numba
import numpy as np
import torch
from torch import Tensor

from codesign.cim.tiles import TileGrid

__all__ = ["tile_storage", "cpu_float32"]


# Only reassociation (the tile maxima and the NaN probe vectorize): no reciprocal for the division, which stays
# IEEE's as torch's in tile_weights, so the two give the same normalized weights; no no-NaN assumption either.
@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _tile_flat(weight, rows, cols, flat, scale):  # pragma: no cover - compiled  # noqa: ANN001
    """crossbar.tile_weights and Crossbar._device_flat in one pass: flat (the used rows of every tile, storage order:
    tile t, output o, row r at t·out_padded·rows + o·rows_t + r) holds weight / its tile's largest |w| (1 for an
    all-zero tile; NaN when the tile holds a NaN or an inf, which the caller refuses), scale (n_row_tiles,
    out_padded) each output's tile scale. Unsigned indices into the flat weight (out·in): a signed one would be
    checked for wraparound at every read, which keeps the loops from vectorizing."""
    outputs, inputs = weight.shape
    n_row_tiles, out_padded = scale.shape
    w = weight.ravel()
    for t in range(n_row_tiles):
        first = t * rows
        rows_t = min(rows, inputs - first)
        base = t * out_padded * rows
        for c in range(0, out_padded, cols):
            top = np.float32(0.0)
            poison = np.float32(0.0)  # x·0 is NaN for a NaN or an inf x, 0 otherwise
            for o in range(c, min(c + cols, outputs)):
                start = np.uint64(o * inputs + first)
                for r in range(np.uint64(rows_t)):
                    x = w[start + r]
                    a = abs(x)
                    top = a if a > top else top
                    poison += x * np.float32(0.0)
            if poison != poison:
                top = np.float32(np.nan)
            elif top == np.float32(0.0):
                top = np.float32(1.0)
            for o in range(c, min(c + cols, out_padded)):
                scale[t, o] = top
                at = np.uint64(base + o * rows_t)
                start = np.uint64(o * inputs + first)
                if o < outputs:
                    for r in range(np.uint64(rows_t)):
                        flat[at + r] = w[start + r] / top
                else:
                    for r in range(np.uint64(rows_t)):
                        flat[at + r] = np.float32(0.0)



def tile_storage(weight: Tensor, grid: TileGrid) -> tuple[Tensor, Tensor]:
    """(normalized weights in storage order, used rows only; tile scales (n_row_tiles, out_padded)) of a CPU float32
    weight (out, in): the values of crossbar.tile_weights followed by Crossbar._device_flat, in one pass."""
    flat = torch.empty(grid.out_padded * grid.in_features, dtype=torch.float32)  # the used rows of every tile
    scale = torch.empty((grid.n_row_tiles, grid.out_padded), dtype=torch.float32)
    _tile_flat(cpu_float32(weight.contiguous()), grid.rows, grid.cols, flat.numpy(), scale.numpy())
    return flat, scale


def cpu_float32(x: Tensor) -> np.ndarray:
    """The numpy view of a CPU float32 tensor (the kernels' arrays), or a one-line error."""
    if x.dtype != torch.float32 or x.device.type != "cpu":
        raise ValueError("chips drawn weight by weight need float32 weights on the CPU; program the chips instead")
    return x.numpy()
