"""The KAN core's cycles: bank geometry, folded casts, arrival cycles, the stage structure and the HLS stage count.

The one place the KAN RTL's stages are counted (rtl/kan_online.sv takes them as parameters and
checks them at elaboration).
"""

from __future__ import annotations

import math

from codesign.fixed import OMode
from codesign.fpga.placement import Pipeline, StageStructure, tree_regs
from codesign.fpga.timing import CAST, MULTIPLY, READ, WRITE, Timing, adder_tree_clocks
from codesign.kan.spec import KANSpec

__all__ = ["LUTRAM_MAX_DEPTH", "kan_bank_geometry", "kan_bank_memory", "kan_bram_out", "kan_folds", "kan_arrivals", "kan_stage_structure",
           "kan_front_stages", "kan_read_in_front", "kan_timing"]


def kan_bank_geometry(spec: KANSpec) -> tuple[int, int]:
    """(P, DEPTH) of the KAN RTL's coefficient banks: banks per input (the power of two >= k+1) and words per bank."""
    banks = 1 << math.ceil(math.log2(spec.spline_order + 1))
    return banks, math.ceil(spec.n_coef / banks)


# Deepest bank kept in distributed RAM, the depth of the deepest LUTRAM primitive (UltraScale+ RAM512X1S);
# a deeper bank (G + k above 2,048 coefficients at k + 1 <= 4 banks) goes to block RAM. The RTL asks
# for each by name (kan_bank.sv RAM_STYLE): left to choose, Yosys took block RAM for banks of 257 words
# (2-4-1 at G = 1,024) without the bram_out register the placement gives block RAM only.
LUTRAM_MAX_DEPTH = 512


def kan_bank_memory(spec: KANSpec) -> str:
    """Where the KAN's coefficient banks live: ``lutram`` (asynchronous read) or ``bram`` (the read register is the RAM's own)."""
    return "lutram" if kan_bank_geometry(spec)[1] <= LUTRAM_MAX_DEPTH else "bram"


def kan_bram_out(spec: KANSpec, pipe: Pipeline) -> int:
    """1 when the placement's bram_out register is built: block-RAM banks only (rtl/kan_layer.sv; LUTRAM banks ignore the bit)."""
    return pipe.cut("bram_out") if kan_bank_memory(spec) == "bram" else 0


def _grid_coordinate(spec: KANSpec, raw: int) -> int:
    """The unclamped grid coordinate u of an act_t raw value (rtl/kan_grid.sv, power-of-two cells)."""
    g = spec.grid_constants()
    offset = (raw - g.lo_raw) * g.inv_h_raw
    return offset >> g.u_shift if g.u_shift >= 0 else offset << -g.u_shift


def kan_folds(spec: KANSpec) -> dict[str, bool]:
    """Which casts the KAN RTL folds into its neighbours (rtl/kan_online.sv FOLD_GRID, FUSE_ERROR).

    ``grid``: a layer after the first takes its grid offset x - lo from the previous layer's
    rounding chain before saturation, with no scale step. The same cell, address and clamp
    follow only when act_t saturates (AP_SAT, AP_SAT_SYM) to values the grid clamps on both
    sides, and 1/h is a power of two (no multiply). ``error``: the error is formed in the last
    layer's forward cast, when act_t is signed and saturating and err_t keeps every fraction
    bit of act_t (so y - target is not rounded again).
    """
    act = spec.act_t
    saturating = act.omode in (OMode.AP_SAT, OMode.AP_SAT_SYM)
    low = act.min_raw + (1 if act.omode == OMode.AP_SAT_SYM and act.signed and act.width > 1 else 0)
    g = spec.grid_constants()
    grid = (len(spec.layer_shapes) > 1 and g.power_of_two and saturating
            and _grid_coordinate(spec, low) < 0 and _grid_coordinate(spec, act.max_raw) > g.u_max)
    error = (act.signed and act.omode in (OMode.AP_SAT, OMode.AP_SAT_ZERO, OMode.AP_SAT_SYM)
             and spec.err_t.frac >= act.frac)
    return {"grid": grid, "error": error}


def kan_arrivals(spec: KANSpec, pipe: Pipeline) -> dict[str, int]:
    """The cycle of the sample in which the prediction and the update's write data are ready (rtl/kan_online.sv)."""
    banks, _ = kan_bank_geometry(spec)
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    c = pipe.cut
    folds = kan_folds(spec)
    word = c("read") + kan_bram_out(spec, pipe)
    ready = 0
    prediction = 0
    for layer, (n_in, _) in enumerate(shapes):
        # the products wait for the later of the bank word (read, and bram_out behind a block RAM's mux) and the
        # basis rows (rows); a folded layer's grid offset comes from the previous layer's cast, without a scale register
        scale = 0 if layer > 0 and folds["grid"] else c("scale")
        forward = (scale + c("grid") + c("decode") + max(word, c("rows")) + pipe.product_cycles("mult")
                   + tree_regs(n_in * banks, pipe.tree_split) + c("sum") + c("round"))
        prediction = ready + forward
        ready = prediction + (pipe.phases >> layer & 1)
    # the fused error's round register is the forward cast's, counted above
    grad = ready + (0 if folds["error"] else c("round")) + c("err")
    for layer in range(n_layers - 1, 0, -1):
        boundary = pipe.phases >> (2 * n_layers - 1 - layer) & 1
        grad += pipe.product_cycles("gmult") + tree_regs(shapes[layer][1], pipe.tree_split) + c("gsum") + c("round") + boundary
    return {"prediction": prediction, "write": grad + pipe.product_cycles("umult") + c("ufull") + c("round")}


def kan_stage_structure(spec: KANSpec, pipe: Pipeline) -> StageStructure:
    """Stages, prediction stage, overlapped front and the front's bank read of a KAN placement (the one place they are counted)."""
    at = kan_arrivals(spec, pipe)
    stages = at["write"] + 1
    regs = _front_registers(pipe)
    front = kan_front_stages(pipe, stages)
    return StageStructure(n_stages=stages, pred_stage=at["prediction"], n_front=front,
                          read_in_front=bool(pipe.cut("read") & pipe.forward) and front == regs)


def kan_front_stages(pipe: Pipeline, stages: int) -> int:
    """Stages of layer 0's front (grid, basis ROM, bank read) that the next sample overlaps (rtl/kan_online.sv N_FRONT).

    The grid and ROM read no learned state, and with FORWARD the bank read forwards the write it
    overlaps, so the next sample is accepted that many cycles before the commit; at most half
    the stages.
    """
    regs = _front_registers(pipe)
    return regs if 2 * regs <= stages else stages - regs


def _front_registers(pipe: Pipeline) -> int:
    """Registers of layer 0's front: scale, grid, decode, and the bank read with FORWARD (rtl/kan_online.sv FRONT_REGS)."""
    return pipe.cut("scale") + pipe.cut("grid") + pipe.cut("decode") + (pipe.cut("read") & pipe.forward)


def kan_read_in_front(spec: KANSpec, pipe: Pipeline) -> bool:
    """Whether the next sample's bank read is registered at this sample's commit edge and forwards it (rtl/kan_online.sv READ_IN_FRONT)."""
    return kan_stage_structure(spec, pipe).read_in_front


def kan_timing(spec: KANSpec) -> Timing:
    """The KAN top's analytic stage count (grid, ROM read, MACs, tree, cast per layer)."""
    k1 = spec.spline_order + 1
    shift_only = spec.grid_constants().power_of_two  # the 1/h multiply is a shift
    grid = (0 if shift_only else MULTIPLY) + 1  # multiply, then shift, clamp, cell and address
    stages: dict[str, int] = {}
    for layer, (n_in, _) in enumerate(spec.layer_shapes):
        stages[f"forward_l{layer}"] = grid + READ + MULTIPLY + adder_tree_clocks(n_in * k1) + CAST
    stages["error"] = CAST
    for layer in range(len(spec.layer_shapes) - 1, 0, -1):
        n_out = spec.layer_shapes[layer][1]
        dphi = MULTIPLY + adder_tree_clocks(k1) + CAST
        stages[f"gradient_l{layer}"] = dphi + MULTIPLY + adder_tree_clocks(n_out) + (0 if shift_only else MULTIPLY) + CAST
    stages["update_l0"] = MULTIPLY + CAST + WRITE
    latency = sum(stages.values())
    prediction = sum(v for k, v in stages.items() if k.startswith("forward"))
    # Layer 0's coefficients are read once the grid coordinate is known and written last.
    return Timing(prediction, latency, latency - grid, stages=stages)
