"""Tile layout of a crossbar layer: how a weight is cut into tiles and stored segment by segment.

Shared by the programming and aging (crossbar.py) and the read (readout.py), which imports nothing else of
the crossbar: see crossbar.py's module docstring for the storage order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from torch import Tensor

__all__ = ["TileGrid", "Segment", "segments_of", "segment_block"]


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
        """Shape (n_row_tiles, out_padded, rows) of one chip's weights on whole tiles (tile_weights)."""
        return self.n_row_tiles, self.out_padded, self.rows

    @property
    def last_rows(self) -> int:
        """Rows of the last row tile that hold weights (rows when in_features fills whole tiles)."""
        return self.in_features - (self.n_row_tiles - 1) * self.rows


class Segment(NamedTuple):
    """Row tiles of one height: tiles n, rows r, first input, and offset/size in one chip's N devices."""

    tiles: int
    rows: int
    first_input: int
    offset: int
    size: int


def segments_of(grid: TileGrid) -> tuple[Segment, ...]:
    """The full row tiles and, if in_features is not a multiple of rows, the used part of the last one."""
    full = grid.n_row_tiles if grid.last_rows == grid.rows else grid.n_row_tiles - 1
    segments, offset = [], 0
    for tiles, rows, first in ((full, grid.rows, 0), (grid.n_row_tiles - full, grid.last_rows, full * grid.rows)):
        if tiles:
            size = tiles * grid.out_padded * rows
            segments.append(Segment(tiles, rows, first, offset, size))
            offset += size
    return tuple(segments)


def segment_block(flat: Tensor, seg: Segment, n_chips: int, out_padded: int) -> Tensor:
    """One segment of a per-device array (C·N,) of n_chips chips as its contiguous (C, tiles, out_padded, rows) block."""
    return flat[n_chips * seg.offset: n_chips * (seg.offset + seg.size)].view(n_chips, seg.tiles, out_padded, seg.rows)
