"""CPU kernels of a read through quantizing converters: the row read of chips drawn weight by weight
(readout.read_rows) and the column read of a convolution's windows (readout.read_columns).

A read of a drawn chip in training runs once per layer and mini-batch on small arrays, where a dozen tensor
operations per row-tile segment (|x|, its maximum, the reciprocal, the codes, the ADC's round and clamp, two
rescales, the sum over tiles) cost more in dispatch than in arithmetic. These kernels do the DAC of every
input vector and the ADC plus digital accumulation of every tile's partial sums in one pass each, with the
same operations as the torch path (so the same rounding of every code and every product), for CPU float32,
converters without ADC noise and without a fixed input range. On a small image the windows' DAC in torch is
worse still: the overlapping windows' innermost axis is an output row of a few positions, so an elementwise
product over them runs a few values per inner loop.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dac_codes", "adc_accumulate", "dac_windows", "adc_scale"]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def dac_codes(x, k, tiny, codes, amax):  # pragma: no cover - compiled  # noqa: ANN001
    """codes = rint(x · (1/m · k)) and amax = m for every vector of x (C, T, B, R) (any strides), m = max(max |x|,
    tiny): readout's DAC with the vector's own full scale."""
    chips, tiles, batch, rows = x.shape
    for c in range(chips):
        for t in range(tiles):
            for b in range(batch):
                top = np.float32(0.0)
                for r in range(rows):
                    a = abs(x[c, t, b, r])
                    top = a if a > top else top
                top = top if top > tiny else tiny
                amax[c, t, b, 0] = top
                to_codes = (np.float32(1.0) / top) * k
                for r in range(rows):
                    codes[c, t, b, r] = np.rint(x[c, t, b, r] * to_codes)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adc_accumulate(p, adc_max, full_scale, column_scale, y, add, saturated, record):  # pragma: no cover - compiled  # noqa: ANN001
    """y (C, B, W) = (y if add else 0) + Σ_t clamp(rint(p), ±adc_max) · full_scale · column_scale over the tiles t of
    p (C, T, B, W), full_scale (C, T, B, 1), column_scale (C, T, 1, W): readout's ADC and digital rescale, the
    tiles summed in order. With `record`, saturated (p's shape, bool) marks every |rint(p)| > adc_max; returns how
    many there were (0 without `record`)."""
    chips, tiles, batch, width = p.shape
    top = np.float32(adc_max)
    count = 0
    for c in range(chips):
        for t in range(tiles):
            for b in range(batch):
                scale = full_scale[c, t, b, 0]
                first = t == 0 and not add
                for w in range(width):
                    q = np.rint(p[c, t, b, w])
                    if record:
                        beyond = q > top or q < -top
                        saturated[c, t, b, w] = beyond
                        count += beyond
                    q = min(max(q, -top), top) * scale * column_scale[c, t, 0, w]
                    y[c, b, w] = q if first else y[c, b, w] + q
    return count


@numba.njit(cache=True, nogil=True, error_model="numpy")
def dac_windows(x, k, tiny, codes, amax, to_codes):  # pragma: no cover - compiled  # noqa: ANN001
    """codes = rint(x · (1/m · k)) and amax = m for every window (b, h, w) of a convolution's windows x (C, in
    channels, kernel rows, kernel columns, B, H, W; any strides, overlapping), m = max(max |x| over the window's
    rows, tiny); codes x's shape, amax and to_codes (C, B, H, W): readout's DAC with the window's own full scale."""
    chips, c_in, kh, kw, batch, h_out, w_out = x.shape
    for c in range(chips):
        for b in range(batch):
            for i in range(h_out):
                for j in range(w_out):
                    top = np.float32(0.0)
                    for a in range(c_in):
                        for p in range(kh):
                            for q in range(kw):
                                v = abs(x[c, a, p, q, b, i, j])
                                top = v if v > top else top
                    top = top if top > tiny else tiny
                    amax[c, b, i, j] = top
                    to_codes[c, b, i, j] = (np.float32(1.0) / top) * k
        for a in range(c_in):
            for p in range(kh):
                for q in range(kw):
                    for b in range(batch):
                        for i in range(h_out):
                            for j in range(w_out):
                                codes[c, a, p, q, b, i, j] = np.rint(x[c, a, p, q, b, i, j] * to_codes[c, b, i, j])


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adc_scale(p, adc_max, full_scale, saturated, record):  # pragma: no cover - compiled  # noqa: ANN001
    """p (C, out, M) = clamp(rint(p), ±adc_max) · full_scale in place, full_scale (C, 1, M) per vector: readout's
    ADC and input rescale of a column read. With `record`, saturated (p's shape, bool) marks every |rint(p)| >
    adc_max; returns how many there were (0 without `record`)."""
    chips, out, m = p.shape
    top = np.float32(adc_max)
    count = 0
    for c in range(chips):
        for o in range(out):
            for v in range(m):
                q = np.rint(p[c, o, v])
                if record:
                    beyond = q > top or q < -top
                    saturated[c, o, v] = beyond
                    count += beyond
                p[c, o, v] = min(max(q, -top), top) * full_scale[c, 0, v]
    return count
