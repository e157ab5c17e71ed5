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

__all__ = ["clog2", "dsp_tiles", "lutram_luts", "bram36_tiles", "bram_mux_levels",
           "lutram_mux_levels", "mux_levels", "select_luts", "split_adder_bits", "cast_is_wiring", "add_cast",
           "tree_register_bits", "common_registers"]


def clog2(n: int) -> int:
    """SystemVerilog $clog2: bits to count 0..n-1 (0 for n <= 1)."""
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


def _slices(width: int, most: int, family: Family) -> tuple[int, int]:
    """(slices on DSPs, slices in LUTs) of one operand of ``width`` bits, split as Yosys's mul2dsp splits it."""
    if width <= most:
        return (1, 0) if width >= family.dsp_min_width else (0, 1)
    step = most - (1 if family.dsp_signed_only else 0)  # a signed-only DSP keeps a bit of each lower slice for the sign
    n = (width - (most - step) - 1) // step
    last = width - n * step
    return (n + 1, 0) if last >= family.dsp_min_width else (n, 1)


def _tiling(width_a: int, width_b: int, family: Family) -> tuple[int, int]:
    """(DSP tiles, partial products in all) of one signed width_a x width_b multiply."""
    big, small = family.dsp_widths
    a, b = max(width_a, width_b), min(width_a, width_b)
    if a <= big and b <= small:
        return 1, 1
    a_dsp, a_lut = _slices(a, big, family)
    b_dsp, b_lut = _slices(b, small, family)
    return a_dsp * b_dsp, (a_dsp + a_lut) * (b_dsp + b_lut)


def dsp_tiles(width_a: int, width_b: int, family: Family) -> int:
    """DSP slices of one signed width_a x width_b multiply (split into tiles when it exceeds one DSP).

    A multiply wider than one DSP is cut into slices of the DSP's widths (one bit less where the
    family's DSPs take signed slices only); a top slice narrower than the family's minimum stays
    in LUTs (a row of AND gates and an adder), as Yosys's mul2dsp leaves it.
    """
    return _tiling(width_a, width_b, family)[0]


def lutram_luts(word_bits: int, depth: int, dual_port: bool, family: Family) -> int:
    """LUTs of one LUTRAM of ``depth`` words of ``word_bits``: Yosys's choice of distributed-RAM primitive.

    Single port (read and write at one address) or simple dual port (one write port and an
    independent read port, which costs one LUT column of each primitive). UltraScale(+):
    RAM32M16 (8 LUTs, 16 bits / 14 dual port), RAM64M8 (8 LUTs, 8 / 7 bits); 7-series: RAM32M
    (4 LUTs, 8 / 6 bits), RAM64M (4 LUTs, 4 / 3 bits); deeper: RAM128X1S/D and RAM256X1S/D, per bit.
    A family whose primitive is shallower (ECP5: TRELLIS_DPR16X4, 16 x 4 bits, always a separate write
    port, six LUT sites) tiles it in depth and width.
    """
    if family.lutram_depth < 64:
        tiles = math.ceil(depth / family.lutram_depth) * math.ceil(word_bits / family.lutram_bits)
        return family.lutram_luts * tiles
    if depth <= 64:
        luts, bits = family.lutram_luts, family.lutram_bits  # a primitive of `luts` LUTs, `bits` bits at depth 64
        if depth <= 32:
            bits *= 2
        return luts * math.ceil(word_bits / (bits - (bits // luts if dual_port else 0)))
    per_bit = (2 if depth <= 128 else 4) * (2 if dual_port else 1) * math.ceil(depth / 256)
    return per_bit * word_bits


# (depth, width) of a block RAM's simple-dual-port shapes: 36 Kb (RAMB36E2), then 18 Kb (RAMB18E2, half a tile)
_BRAM36_SHAPES = ((512, 72), (1024, 36), (2048, 18), (4096, 9), (8192, 4), (16384, 2), (32768, 1))
_BRAM18_SHAPES = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))


def bram36_tiles(word_bits: int, depth: int) -> float:
    """36 Kb block RAMs (an 18 Kb half counts 0.5) of one simple-dual-port memory of ``depth`` words of ``word_bits``.

    The cheapest single shape tiled in depth and width, as a mapper that does not mix shapes chooses.
    """
    whole = min(math.ceil(depth / d) * math.ceil(word_bits / w) for d, w in _BRAM36_SHAPES)
    half = min(math.ceil(depth / d) * math.ceil(word_bits / w) for d, w in _BRAM18_SHAPES)
    return min(float(whole), 0.5 * half)


def bram_mux_levels(word_bits: int, depth: int) -> int:
    """LUT levels of the mux over the RAMs of a block-RAM memory that is deeper than one RAM (a LUT6 selects one of 4).

    The RAMs in depth of the shape bram36_tiles counts (the cheapest 36 Kb one).
    """
    deep = min(_BRAM36_SHAPES, key=lambda shape: (math.ceil(depth / shape[0]) * math.ceil(word_bits / shape[1]), shape[0]))
    return mux_levels(math.ceil(depth / deep[0]))


# The deepest single LUTRAM read the period model is fitted to: the UltraScale+ RAM64M8 (Yosys' choice for
# a read-after-write bank); a deeper LUTRAM is several in depth with a mux after them.
_LUTRAM_READ_DEPTH = 64


def lutram_mux_levels(depth: int) -> int:
    """LUT levels of the mux over the LUTRAMs of a distributed-RAM bank deeper than one (a LUT6 selects one of 4)."""
    return mux_levels(math.ceil(depth / _LUTRAM_READ_DEPTH))


def mux_levels(inputs: int) -> int:
    """LUT6 levels of a mux that selects one of ``inputs`` values (one of 4 per level): RAM outputs, shared operands."""
    return math.ceil(math.log(inputs, 4) - 1e-9) if inputs > 1 else 0


def select_luts(inputs: int) -> int:
    """LUT6s per bit of a mux of ``inputs`` values: one selects one of 4, MUXF7/F8 join them (0 for one input)."""
    return math.ceil(inputs / 4) if inputs > 1 else 0


def split_adder_bits(width_a: int, width_b: int, family: Family) -> int:
    """Bits of the LUT adders that sum the partial products of a multiply split over several DSPs (or LUT rows)."""
    return (_tiling(width_a, width_b, family)[1] - 1) * (width_a + width_b)


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
