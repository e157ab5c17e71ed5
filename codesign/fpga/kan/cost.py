"""The KAN RTL's cost: its components as feature counts (banks, ROMs, multipliers, trees, casts, registers) and its paths."""

from __future__ import annotations

from collections.abc import Mapping

from codesign.fixed import FixedType
from codesign.fpga.cost_parts import (
    add_cast,
    bram36_tiles,
    bram_mux_levels,
    cast_is_wiring,
    clog2,
    common_registers,
    dsp_tiles,
    lutram_luts,
    lutram_mux_levels,
    mux_levels,
    select_luts,
    split_adder_bits,
    tree_register_bits,
)
from codesign.fpga.family import Family
from codesign.fpga.kan.cycles import (
    kan_bank_geometry,
    kan_bank_memory,
    kan_bram_out,
    kan_folds,
    kan_read_in_front,
    kan_stage_structure,
)
from codesign.fpga.placement import Pipeline
from codesign.kan.spec import KANSpec

__all__ = ["kan_features", "kan_stage_features"]


def kan_features(spec: KANSpec, pipe: Pipeline, family: Family) -> dict[str, dict[str, float]]:
    """Per resource, the component sizes of the KAN RTL (banks, ROMs, multipliers, trees, casts, registers)."""
    k = spec.spline_order
    banks, depth = kan_bank_geometry(spec)
    g = spec.grid_constants()
    wb, fb, wd = spec.basis_t.width, spec.basis_t.frac, spec.dbasis_t.width
    wc, fc = spec.coef_t.width, spec.coef_t.frac
    wa, wdphi, wgrad = spec.act_t.width, spec.dphi_t.width, spec.grad_t.width
    w_inv = clog2(g.inv_h_raw + 1)
    n_layers = len(spec.layer_shapes)
    lut = dict.fromkeys(("control", "rom", "mux", "grid", "cast_out", "cast_drop", "adders", "split"), 0.0)
    lutram = {"banks": 0.0}
    bram = {"banks": 0.0}
    in_bram = kan_bank_memory(spec) == "bram"
    ff = {"registers": 0.0}
    dsp = 0
    lut["control"] = 1.0
    mask = pipe.phases
    cut = pipe.cut
    # A LUT6 per output bit holds 64 ROM entries. Linear bases (k = 1) are affine in the address (no
    # table); quadratic ones need about half the logic of cubic and higher ones, which reach the LUT6 bound.
    rom_scale = max(1.0, 2.0 ** spec.lut_bits / 64) * min(1.0, (k - 1) / 2)
    w_cell = clog2(spec.grid_size) if spec.grid_size > 1 else 1
    w_baddr = clog2(depth) if depth > 1 else 1
    dense_inv_h = bin(g.inv_h_raw).count("1") > 3  # const_mult leaves it to a multiplier
    shift_adds = 0 if dense_inv_h else bin(g.inv_h_raw).count("1") - 1
    folds = kan_folds(spec)
    share = pipe.share

    def products(count: int, width_a: int, width_b: int) -> None:
        """A product site of ``count`` products (rtl/shared_mult.sv): its multipliers, and with sharing their operand muxes."""
        nonlocal dsp
        multipliers = -(-count // share)
        dsp += multipliers * dsp_tiles(width_a, width_b, family)
        lut["split"] += multipliers * split_adder_bits(width_a, width_b, family)
        if share > 1:
            lut["mux"] += multipliers * (width_a + width_b) * select_luts(share) + count  # and a load enable per product
            # the site's slot count, and with the operand register the operands and the slot they belong to
            ff["registers"] += clog2(share) + cut("shared_in") * (multipliers * (width_a + width_b) + clog2(share))

    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        last = layer == n_layers - 1
        folded = layer > 0 and folds["grid"]  # x - lo from the previous layer's cast: no scale step, no scale register
        wg, fg = (spec.err_t.width, spec.err_t.frac) if last else (spec.grad_t.width, spec.grad_t.frac)
        backward = layer > 0
        # decode of every input: grid, ROM rows, rotation into bank order, bank addresses
        lut["rom"] += n_in * (k + 1) * (wb + (wd if backward else 0)) * rom_scale
        lut["mux"] += n_in * banks * ((wb + (wd if backward else 0)) * clog2(banks) + w_baddr + 1)
        lut["grid"] += n_in * (wa + 1 + spec.lut_bits + w_cell + shift_adds * (wa + w_inv))
        if dense_inv_h:
            dsp += n_in * dsp_tiles(wa + 1, w_inv + 1, family)
            lut["split"] += n_in * split_adder_bits(wa + 1, w_inv + 1, family)
        # forward: a product per (input, bank) and output, an exact adder tree, the act_t cast
        # the RTL sizes it by the basis ROM's row sum (rtl/kan_layer.sv, B_ROW_MAX): B-splines sum
        # to one, so about 2^F_B + 1 (rounding) per input; the exact ROM sum would import torch here
        w_acc = min(wb + 1 + wc + clog2(n_in * banks) + 1, clog2(n_in * ((1 << fb) + 1)) + wc)
        lut["adders"] += n_out * (n_in * banks - 1) * w_acc
        add_cast(lut, n_out, w_acc, spec.act_t)
        products(n_out * n_in * banks, wb + 1, wc)
        if backward:
            # derivative products D*c per edge and bank, their sum and the dphi_t cast
            w_dacc = wd + wc + clog2(banks) + 1
            lut["adders"] += n_out * n_in * (banks - 1) * w_dacc
            add_cast(lut, n_out * n_in, w_dacc, spec.dphi_t)
            products(n_out * n_in * banks, wd, wc)
            # input gradient: g * dphi per edge, sum over outputs, times 1/h, the grad_t cast, the clamp
            w_s = wg + wdphi + clog2(n_out) + 1
            w_t = w_s + w_inv + 1
            lut["adders"] += n_in * ((n_out - 1) * w_s + shift_adds * w_t)
            add_cast(lut, n_in, w_t, spec.grad_t)
            lut["mux"] += n_in * wgrad
            products(n_in * n_out, wg, wdphi)
            if dense_inv_h:
                dsp += n_in * dsp_tiles(w_s, w_inv + 1, family)
                lut["split"] += n_in * split_adder_bits(w_s, w_inv + 1, family)
        # update: g * B per (input, bank, output), c - 2^-s g B at full precision (of the largest run-time
        # shift, g B moved up by the shifter when there is a range), the coef_t cast
        span = spec.lr_shift_max - spec.lr_shift
        f_delta = fg + fb + spec.lr_shift_max
        f_full = max(fc, f_delta)
        w_full = max(wc + f_full - fc, wg + wb + 1 + f_full - f_delta + span) + 2
        lut["adders"] += n_in * banks * n_out * w_full
        if span:
            lut["mux"] += n_in * banks * n_out * w_full
        add_cast(lut, n_in * banks * n_out, w_full, spec.coef_t)
        products(n_in * banks * n_out, wg, wb + 1)
        # banks: every (input, bank) holds a word of n_out coefficients, `depth` words deep; with a
        # register after F the write address (held) and the read address (the next decode) differ
        reg_f = bool(mask >> layer & 1)
        if in_bram:  # block RAM: its registered read is the read cut (absorbed, no fabric register)
            bram["banks"] += n_in * banks * bram36_tiles(n_out * wc, depth)
        else:
            lutram["banks"] += n_in * banks * lutram_luts(n_out * wc, depth, reg_f, family)
        # registers after F (what later phases read) and after B
        if reg_f:
            # the forward outputs as the next step reads them: act_t, x - lo before saturation (its exact
            # width: the sum's bits above the dropped ones, one for the rounding and one for the offset), or the error
            held_out = wa
            if not last and folds["grid"]:
                held_out = w_acc - max(0, fb + fc - wa + spec.act_t.int_bits) + 2
            elif last and folds["error"]:
                held_out = spec.err_t.width
            ff["registers"] += n_out * held_out + n_in * banks * (wb + w_baddr + 1 + n_out * wc) + n_in
            if backward:
                ff["registers"] += n_out * n_in * wdphi
        if backward and mask >> (2 * n_layers - 1 - layer) & 1:
            ff["registers"] += n_in * wgrad
        # the registers inside the phases (pipeline.CUT_NAMES)
        w_bprod, w_dprod = wb + 1 + wc, wd + wc
        w_dacc = wd + wc + clog2(banks) + 1
        w_s = wg + wdphi + clog2(n_out) + 1
        cut_bits = {
            "grid": n_in * (w_cell + 1 + (k + 1) * (wb + (wd if backward else 0))),  # cell, clamp, ROM rows
            "scale": 0 if folded else n_in * (wa + 2 + w_inv),
            "round": (n_out * (wa + 2) + (n_out * n_in * (wdphi + 2) + n_in * (wgrad + 2) if backward else 0)
                      + n_in * banks * n_out * (wc + 2)),
            "decode": n_in * (banks * (wb + (wd if backward else 0) + w_baddr + 1) + 1),
            "read": 0 if in_bram else n_in * banks * n_out * wc,
            "bram_out": n_in * banks * n_out * wc if in_bram else 0,  # built behind block RAM only
            "rows": n_in * banks * (wb + (wd if backward else 0)),
            "mult": n_out * n_in * banks * (w_bprod + (w_dprod if backward else 0)),
            "sum": n_out * (w_acc + (n_in * w_dacc if backward else 0)),
            "gmult": n_in * n_out * (wg + wdphi) if backward else 0,
            "gsum": n_in * (w_s + w_inv + 1) if backward else 0,
            "umult": n_in * banks * n_out * (wg + wb + 1),
            "ufull": n_in * banks * n_out * w_full,
        }
        ff["registers"] += sum(bits * pipe.register(name) for name, bits in cut_bits.items())
        if layer == 0 and kan_read_in_front(spec, pipe):
            # the decoded inputs the update reads, held while the next sample's decode runs, and the
            # forwarding's hit and written word per bank (kan_layer READ_IN_FRONT)
            ff["registers"] += n_in * (banks * (wb + w_baddr + 1) + 1) + n_in * banks * (n_out * wc + 1)
        ff["registers"] += n_out * tree_register_bits(n_in * banks, w_acc, pipe.tree_split)
        if backward:
            ff["registers"] += n_out * n_in * tree_register_bits(banks, w_dacc, pipe.tree_split)
            ff["registers"] += n_in * tree_register_bits(n_out, w_s, pipe.tree_split)
    if folds["error"]:  # the error leaves the last forward cast: its register alone
        ff["registers"] += cut("err") * spec.n_outputs * spec.err_t.width
    else:
        ff["registers"] += (cut("err") + cut("round")) * spec.n_outputs * (spec.err_t.width + cut("round"))
    add_cast(lut, spec.n_outputs, wa + 1, spec.err_t)
    ff["registers"] += common_registers(spec, kan_stage_structure(spec, pipe))
    return {"lut": lut, "lutram": lutram, "ff": ff, "dsp": {"multipliers": float(dsp)}, "bram": bram}


class _Paths:
    """Longest combinational paths through the KAN datapath, as feature sums (ns = their dot product with coefficients).

    A value is the feature sum of the longest path that ends at it since the last register;
    ``after(value, cut)`` is what a consumer sees (nothing when a register lies between).
    """

    def __init__(self, coefficients: dict[str, float]):
        self.coefficients = coefficients
        self.ends: list[dict[str, float]] = []

    def ns(self, path: Mapping[str, float]) -> float:
        """The delay of a path by the current coefficients."""
        return sum(self.coefficients.get(k, 0.0) * v for k, v in path.items())

    def node(self, *inputs: dict[str, float], **delay: float) -> dict[str, float]:
        """A cell fed by ``inputs``: the slowest input's path plus the cell's own features."""
        slowest: dict[str, float] = max(inputs, key=self.ns) if inputs else {}
        path = dict(slowest)
        for key, value in delay.items():
            path["kan_" + key] = path.get("kan_" + key, 0.0) + value
        self.ends.append(path)
        return path

    @staticmethod
    def after(path: dict[str, float], cut: int) -> dict[str, float]:
        """The path a consumer continues, {} behind a register."""
        return {} if cut else path


def kan_stage_features(spec: KANSpec, pipe: Pipeline, coefficients: dict[str, float]) -> list[dict[str, float]]:
    """Every register-to-register path end of the KAN RTL (rtl/kan_layer.sv, kan_decode.sv, kan_online.sv) as features."""
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    banks, depth = kan_bank_geometry(spec)
    dense_inv_h = bin(spec.grid_constants().inv_h_raw).count("1") > 3
    # The bank address (kan_decode: word cell div P, plus one below the rotation) is an adder of
    # W_BADDR bits; from 3 bits on Yosys maps it onto a carry chain (two CARRY4 on the path of a
    # 2-4-1 G=64 KAN, 0.7 ns), which the fitted features do not see. It lies on the bank read's
    # stage when no decode register comes first: one adder level there.
    live_address = 1.0 if not pipe.cut("decode") and clog2(depth) > 2 else 0.0
    in_bram = kan_bank_memory(spec) == "bram"
    c = pipe.cut
    paths = _Paths(coefficients)
    after = paths.after

    def tree(value: dict[str, float], terms: int) -> dict[str, float]:
        for level in range(1, clog2(terms) + 1):
            value = paths.node(value, adder_levels=1.0)
            if pipe.tree_split and level % pipe.tree_split == 0 and level < clog2(terms):
                value = {}
        return value

    def multiply(*inputs: dict[str, float]) -> dict[str, float]:
        # a shared multiplier's operands come through a mux of its products' operands (a fitted adder level is about
        # two LUT levels), so never straight from a register
        if pipe.share > 1:
            selected = paths.node(*inputs, adder_levels=mux_levels(pipe.share) / 2)
            if c("shared_in"):  # the operand register, the DSP's own: the multiply starts from registers
                after(selected, 1)
                return paths.node(multiply_registered=1.0)
            return paths.node(selected, multiply=1.0)
        # operands straight from registers: Yosys packs them into the DSP48's input registers
        if all(not i for i in inputs):
            return paths.node(multiply_registered=1.0)
        return paths.node(*inputs, multiply=1.0)

    def cast(value: dict[str, float], t: FixedType, subtract: bool = False) -> dict[str, float]:
        # A cast that is wiring (AP_TRN, AP_WRAP) costs nothing. The error's subtraction, where the error is not
        # formed in the forward cast (kan_folds), is a carry chain of its own before the cast's rounding chain:
        # one adder level, whatever the cast (none of the fitted specs had it with a cast that is not wiring;
        # Yosys on examples/kan_98k.toml: the held target, a 25-bit subtraction and the err_t cast, 4.0 ns).
        # The round register stays where it is placed, after the subtraction and the rounding.
        weight = 0.0 if cast_is_wiring(t) else 1.0
        extra = {"adder_levels": 1.0} if subtract else {}
        if c("round"):  # a register between the rounding and the overflow handling
            return paths.node(after(paths.node(value, cast=0.5 * weight, **extra), 1), cast=0.5 * weight)
        return paths.node(value, cast=weight, **extra)

    folds = kan_folds(spec)
    layer_in: dict[str, float] = {}
    held = []  # per layer: (bb, bank word, dphi) as B and U read them
    error: dict[str, float] = {}
    for layer, (n_in, n_out) in enumerate(shapes):
        f_reg = pipe.phases >> layer & 1
        if layer > 0 and folds["grid"]:
            scaled = layer_in  # x - lo came out of the previous layer's rounding chain: no scale step
        elif dense_inv_h:
            scaled = after(paths.node(layer_in, scale=1.0), c("scale"))
        else:  # a power-of-two cell: the scale is the subtraction of lo alone
            scaled = after(paths.node(layer_in, adder_levels=1.0), c("scale"))
        grid = paths.node(scaled, grid=1.0)
        # The ROM is read at the unclamped address beside the clamp (rtl/kan_decode.sv); the rotation of its rows
        # into bank order is charged one adder level (about two LUT levels with their routes, as Yosys maps it).
        # The grid register holds the rows, so the ROM is in the grid's stage and the rotation and the bank
        # address after it.
        if c("grid"):
            rom = paths.node(after(paths.node(grid, rom=1.0), 1), adder_levels=1.0)
            address: dict[str, float] = {}
        else:
            address = paths.node(grid, rom=1.0)
            rom = paths.node(address, adder_levels=1.0)
        decoded = after(rom, c("decode"))
        # a LUTRAM bank deeper than one primitive reads through a mux over them (a fitted adder level is about two LUT
        # levels), after the address and before the read register
        lutram_mux = 0.0 if in_bram else lutram_mux_levels(depth) / 2
        word = after(paths.node(after(address, c("decode")), memory=1.0, adder_levels=live_address + lutram_mux), c("read"))
        if in_bram:
            # the word leaves the RAM's own register (its clock-to-out charged as a memory read) through the mux
            # over the RAMs of a deep bank (a fitted adder level is about two LUT levels), into bram_out or onwards
            bram_mux = bram_mux_levels(n_out * spec.coef_t.width, depth) / 2
            word = after(paths.node(memory=1.0, adder_levels=bram_mux), kan_bram_out(spec, pipe))
        rows = after(decoded, c("rows"))  # the basis rows the products read
        product = after(multiply(rows, word), pipe.register("mult"))
        total = after(tree(product, n_in * banks), c("sum"))
        y = cast(total, spec.act_t)
        dphi = {}
        if layer > 0:
            dphi = cast(after(tree(product, banks), c("sum")), spec.dphi_t)
        held.append((after(rows, f_reg), after(word, f_reg), after(dphi, f_reg)))
        if layer < n_layers - 1 and folds["grid"]:
            y = paths.node(total, adder_levels=1.0)  # the rounding chain alone, the offset in it
        elif layer == n_layers - 1 and folds["error"]:
            # y - target from the cast's own chain, compared with bounds of the target alone in chains beside it, one
            # select after them (rtl/kan_layer.sv): as deep as the cast itself, by Yosys's netlist
            error = after(paths.node(total, cast=1.0), f_reg)
        layer_in = after(y, f_reg)
    grads: list[dict[str, float]] = [{}] * n_layers
    # the error, fused into the last forward cast or from the last layer's output
    grads[-1] = after(error if folds["error"] else cast(layer_in, spec.err_t, subtract=True), c("err"))
    for layer in range(n_layers - 1, 0, -1):
        product = after(multiply(grads[layer], held[layer][2]), pipe.register("gmult"))
        total = tree(product, shapes[layer][1])
        if dense_inv_h:
            total = paths.node(total, multiply=1.0)
        grads[layer - 1] = after(cast(after(total, c("gsum")), spec.grad_t), pipe.phases >> (2 * n_layers - 1 - layer) & 1)
    for layer in range(n_layers):
        bb, word, _ = held[layer]
        product = after(multiply(grads[layer], bb), pipe.register("umult"))
        difference = after(paths.node(product, word, adder_levels=1.0), c("ufull"))
        cast(difference, spec.coef_t)
    return paths.ends
