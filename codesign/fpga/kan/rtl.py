"""The KAN core's RTL side: its SV parameters, its memory files and where its state lives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codesign.fpga.kan.cycles import kan_bank_geometry, kan_bank_memory, kan_folds, kan_stage_structure
from codesign.fpga.placement import Pipeline
from codesign.fpga.rtl_words import hex_words, pack_word, type_parameters
from codesign.kan.fixed_learner import KANLearner, basis_roms, basis_row_bounds
from codesign.kan.spec import KANSpec

__all__ = ["kan_core_parameters", "kan_placement_parameters", "write_kan_memories", "kan_state_description"]

# Family.dsp_instance -> the kan_online parameter that instantiates it (rtl/dsp_mult.svh)
_DSP_PARAMETERS = {"MULT18X18D": "ECP5_DSP"}


def kan_core_parameters(spec: KANSpec) -> dict[str, int | str]:
    """The KAN core's own parameters: grid, banks, ROM and every fixed-point type."""
    banks, depth = kan_bank_geometry(spec)
    g = spec.grid_constants()
    params: dict[str, int | str] = dict(G=spec.grid_size, K=spec.spline_order, A=spec.lut_bits, P=banks, DEPTH=depth,
                                        BANK_BRAM=int(kan_bank_memory(spec) == "bram"))
    params.update(type_parameters("ACT", spec.act_t))
    params.update(type_parameters("COEF", spec.coef_t))
    params.update({"W_B": spec.basis_t.width, "F_B": spec.basis_t.frac})
    params.update({"W_D": spec.dbasis_t.width, "F_D": spec.dbasis_t.frac})
    params["B_ROW_MAX"], params["D_ROW_MAX"] = basis_row_bounds(spec)  # sizes the exact forward sums
    params.update(type_parameters("DPHI", spec.dphi_t))
    params.update(type_parameters("ERR", spec.err_t))
    params.update(type_parameters("GRAD", spec.grad_t))
    params.update(LO_RAW=g.lo_raw, INV_H=g.inv_h_raw, INV_H_FRAC=g.inv_h_frac, U_SHIFT=g.u_shift)
    params["LR_SPAN"] = spec.lr_shift_span  # run-time shifts LR_SHIFT .. LR_SHIFT + LR_SPAN (the AXI shell's LR_SHIFT)
    folds = kan_folds(spec)
    params.update(FOLD_GRID=int(folds["grid"]), FUSE_ERROR=int(folds["error"]))
    return params


def kan_placement_parameters(spec: KANSpec, pipe: Pipeline) -> dict[str, int | str]:
    """CUTS, TREE_SPLIT, the stage structure (N_STAGES, PRED_STAGE, N_FRONT, READ_IN_FRONT), SHARE and ECP5_DSP of a placement."""
    params: dict[str, int | str] = {"CUTS": pipe.cuts, "TREE_SPLIT": pipe.tree_split}
    params.update(kan_stage_structure(spec, pipe).sv_parameters())
    if pipe.share > 1:
        params["SHARE"] = pipe.share  # shared products are fabric products (rtl/shared_mult.sv), never a DSP primitive's
    elif pipe.dsp:
        if pipe.dsp not in _DSP_PARAMETERS:
            raise ValueError(f"the KAN RTL instantiates no DSP primitive {pipe.dsp!r} (it knows {', '.join(_DSP_PARAMETERS)})")
        params[_DSP_PARAMETERS[pipe.dsp]] = 1  # absent otherwise: the tops of the other families stay as they were
    return params


def write_kan_memories(spec: KANSpec, learner: KANLearner, folder: Path) -> list[str]:
    """The KAN's basis ROMs and coefficient banks as .mem files in ``folder``; returns their names."""
    brom, drom = basis_roms(spec)  # (k+1, 2^A)
    (folder / "basis.mem").write_text(
        hex_words([pack_word(brom[:, a], spec.basis_t.width) for a in range(brom.shape[1])], brom.shape[0] * spec.basis_t.width))
    (folder / "dbasis.mem").write_text(
        hex_words([pack_word(drom[:, a], spec.dbasis_t.width) for a in range(drom.shape[1])], drom.shape[0] * spec.dbasis_t.width))
    files = ["basis.mem", "dbasis.mem"]
    banks, depth = kan_bank_geometry(spec)
    w = spec.coef_t.width
    for layer, coef in enumerate(learner.coefficients_raw()):  # (out, in, G+k)
        n_out, n_in, n_coef = coef.shape
        padded = np.zeros((n_out, n_in, banks * depth), dtype=np.int64)
        padded[:, :, :n_coef] = coef
        for i in range(n_in):
            for b in range(banks):
                words = [pack_word(padded[:, i, q * banks + b], w) for q in range(depth)]
                name = f"coef_l{layer:03d}_i{i:03d}_b{b:03d}.mem"
                (folder / name).write_text(hex_words(words, n_out * w))
                files.append(name)
    return files


def kan_state_description(spec: KANSpec) -> dict[str, Any]:
    """Where the bench reads the KAN's coefficients back (hierarchical names below the top)."""
    banks, depth = kan_bank_geometry(spec)
    return {
        "layout": "kan_banks",
        "memory": "u_core.g_layer[{layer}].u_layer.g_input[{i}].g_bank[{b}].u_bank.mem",
        "banks": banks, "depth": depth, "n_coef": spec.n_coef, "word_fields": "output o at bits [o*W +: W]",
        "element_width": spec.coef_t.width,
        "order": "coefficient m of edge (o, i) of a layer is word m div banks of bank m mod banks of input i",
    }
