"""The parts of the analytic cost model every learner kind shares: DSP tiles, LUTRAM primitives, casts, adder trees.

Each kind's cost (codesign.fpga.kan.cost, codesign.fpga.mlp.cost) counts its RTL's components
(docs/rtl.md) with these; codesign.fpga.cost turns the counts into resources and a clock period.
"""

from __future__ import annotations

import math

from codesign.fixed import FixedType, OMode, QMode
from codesign.fpga.family import Family
from codesign.fpga.placement import StageStructure
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["clog2", "dsp_tiles", "lutram_luts", "split_adder_bits", "cast_is_wiring", "add_cast", "tree_register_bits",
           "common_registers"]


def clog2(n: int) -> int:
    """SystemVerilog $clog2: bits to count 0..n-1 (0 for n <= 1)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def dsp_tiles(width_a: int, width_b: int, family: Family) -> int:
    """DSP slices of one signed width_a x width_b multiply (split into tiles when it exceeds one DSP)."""
    big, small = family.dsp_widths
    a, b = max(width_a, width_b), min(width_a, width_b)
    if a <= big and b <= small:
        return 1
    # a partial product per (big - 1) x (small - 1) unsigned slice; the top slices keep the sign bit
    return math.ceil((a - 1) / (big - 1)) * math.ceil((b - 1) / (small - 1))


def lutram_luts(word_bits: int, depth: int, dual_port: bool, family: Family) -> int:
    """LUTs of one LUTRAM of ``depth`` words of ``word_bits``: Yosys's choice of distributed-RAM primitive.

    Single port (read and write at one address) or simple dual port (one write port and an
    independent read port, which costs one LUT column of each primitive). UltraScale(+):
    RAM32M16 (8 LUTs, 16 bits / 14 dual port), RAM64M8 (8 LUTs, 8 / 7 bits); 7-series: RAM32M
    (4 LUTs, 8 / 6 bits), RAM64M (4 LUTs, 4 / 3 bits); deeper: RAM128X1S/D and RAM256X1S/D, per bit.
    """
    if depth <= 64:
        luts, bits = family.lutram_luts, family.lutram_bits  # a primitive of `luts` LUTs, `bits` bits at depth 64
        if depth <= 32:
            bits *= 2
        return luts * math.ceil(word_bits / (bits - (bits // luts if dual_port else 0)))
    per_bit = (2 if depth <= 128 else 4) * (2 if dual_port else 1) * math.ceil(depth / 256)
    return per_bit * word_bits


def split_adder_bits(width_a: int, width_b: int, family: Family) -> int:
    """Bits of the LUT adders that sum the partial products of a multiply split over several DSPs."""
    tiles = dsp_tiles(width_a, width_b, family)
    return (tiles - 1) * (width_a + width_b)


def cast_is_wiring(t: FixedType) -> bool:
    """True when a cast to ``t`` is wires in rtl/fixed_cast.sv: AP_TRN drops the low bits, AP_WRAP the high ones."""
    return t.qmode == QMode.AP_TRN and t.omode == OMode.AP_WRAP


def add_cast(lut: dict[str, float], count: int, w_in: int, t: FixedType) -> None:
    """Add ``count`` fixed_casts to ``t``: a rounding adder and saturation mux per output bit, tie and overflow
    reductions of the rest (none for a cast that is wiring)."""
    if cast_is_wiring(t):
        return
    lut["cast_out"] += count * t.width
    lut["cast_drop"] += count * max(0, w_in - t.width)


def tree_register_bits(terms: int, w_sum: int, split: int) -> int:
    """Bits of the registers inside rtl/adder_tree.sv (after levels split, 2 split, ... below the last)."""
    levels = clog2(terms)
    if split <= 0:
        return 0
    return sum(math.ceil(terms / 2 ** j) * w_sum for j in range(split, levels, split))


def common_registers(spec: KANSpec | MLPSpec, structure: StageStructure) -> float:
    """The prediction register; with more stages the inputs and the stage counter; with an overlap the second sample's."""
    stages = structure.n_stages
    bits = spec.n_outputs * spec.act_t.width + 1
    if stages > 1:
        bits += (spec.n_inputs + spec.n_outputs) * spec.act_t.width + 1 + stages
    if structure.n_front:
        bits += spec.n_outputs * spec.act_t.width + 1 + 1 + clog2(stages)  # target and train held, pending, its stage
    return float(bits)
