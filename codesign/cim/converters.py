"""DAC and ADC of a crossbar tile: signed, symmetric, uniform converters.

A b-bit converter here has the 2^b − 1 levels k·Δ, k = −K..K with K = 2^(b−1) − 1 (zero is
a level; one code of the 2^b is left unused, as in aihwkit's ``inp_res``/``out_res``
convention). Values are rounded to the nearest level (ties to even) and saturate at ±K·Δ.

- DAC: inputs scaled to [−1, 1] (per input vector, or by a fixed range), Δ = 1/K; the
  crossbar keeps the integer codes k and re-applies Δ and the scale digitally.
- ADC: partial sums in units of one full-scale input on one full-scale weight, full scale
  ``adc_range``: Δ = adc_range/K; optional Gaussian noise before conversion.

The arithmetic lives in :meth:`codesign.cim.crossbar.Crossbar.forward`; this module defines
the levels.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["max_code", "converter_levels"]


def max_code(bits: int) -> int:
    """K = 2^(bits−1) − 1, the largest code of a signed symmetric converter."""
    if not isinstance(bits, int) or bits < 2:
        raise ValueError(f"bits={bits!r}: need an integer >= 2")
    return 2 ** (bits - 1) - 1


def converter_levels(bits: int, full_scale: float, dtype: torch.dtype = torch.float64) -> Tensor:
    """All 2^bits − 1 output levels of a converter with the given full scale."""
    k = max_code(bits)
    return torch.arange(-k, k + 1, dtype=dtype) * (full_scale / k)
