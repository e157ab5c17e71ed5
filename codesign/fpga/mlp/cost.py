"""The MLP RTL's cost: weight registers, multipliers, adders and casts as feature counts, and its phase delays."""

from __future__ import annotations

from codesign.fpga.cost_parts import add_cast, clog2, common_registers, dsp_tiles, split_adder_bits
from codesign.fpga.family import Family
from codesign.fpga.mlp.cycles import mlp_stage_structure
from codesign.fpga.placement import Pipeline
from codesign.kan.spec import MLPSpec

__all__ = ["mlp_features", "mlp_stage_features"]


def mlp_features(spec: MLPSpec, pipe: Pipeline, family: Family) -> dict[str, dict[str, float]]:
    """Per resource, the component sizes of the MLP RTL (weight registers, multipliers, adders, casts)."""
    wa, fa = spec.act_t.width, spec.act_t.frac
    wc, fc = spec.coef_t.width, spec.coef_t.frac
    n_layers = len(spec.layer_shapes)
    lut = dict.fromkeys(("mlp_control", "mlp_mux", "cast_out", "cast_drop", "adders", "split"), 0.0)
    ff = {"registers": 0.0}
    dsp = 0
    lut["mlp_control"] = 1.0
    mask = pipe.phases
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        last = layer == n_layers - 1
        wg, fg = (spec.err_t.width, spec.err_t.frac) if last else (spec.grad_t.width, spec.grad_t.frac)
        w_acc = wa + wc + clog2(n_in + 1) + 2
        lut["adders"] += n_out * n_in * w_acc  # n_in products and the bias
        add_cast(lut, n_out, w_acc, spec.act_t)
        if not last:  # activation on the output, its derivative masks the incoming gradient
            lut["mlp_mux"] += n_out * ((wa if spec.activation == "relu" else 4 * wa) + wg)
        dsp += n_out * n_in * dsp_tiles(wc, wa, family)
        lut["split"] += n_out * n_in * split_adder_bits(wc, wa, family)
        if layer > 0:
            w_s = wg + wc + clog2(n_out) + 1
            lut["adders"] += n_in * (n_out - 1) * w_s
            add_cast(lut, n_in, w_s, spec.grad_t)
            dsp += n_in * n_out * dsp_tiles(wg, wc, family)
            lut["split"] += n_in * n_out * split_adder_bits(wg, wc, family)
        f_delta = fg + fa + spec.lr_shift
        f_full = max(fc, f_delta)
        w_x1 = wa if wa > fa + 1 else fa + 2
        w_full = max(wc + f_full - fc, wg + w_x1 + 1 + f_full - f_delta) + 2
        lut["adders"] += n_out * (n_in + 1) * w_full
        add_cast(lut, n_out * (n_in + 1), w_full, spec.coef_t)
        dsp += n_out * n_in * dsp_tiles(wg, w_x1, family)
        lut["split"] += n_out * n_in * split_adder_bits(wg, w_x1, family)
        # the weights and biases live in registers
        ff["registers"] += n_out * (n_in + 1) * wc
        if mask >> layer & 1:
            ff["registers"] += 2 * n_out * wa + n_in * wa
        if layer > 0 and mask >> (2 * n_layers - 1 - layer) & 1:
            ff["registers"] += n_in * spec.grad_t.width
    add_cast(lut, spec.n_outputs, wa + 1, spec.err_t)
    ff["registers"] += common_registers(spec, mlp_stage_structure(spec, pipe))
    return {"lut": lut, "lutram": {}, "ff": ff, "dsp": {"multipliers": float(dsp)}}


def _mlp_phase_delays(spec: MLPSpec) -> list[dict[str, float]]:
    """Timing features of the MLP's phases F_0..F_{L-1}, B_{L-1}..B_1, U, in loop order (the error joins the last F)."""
    shapes = spec.layer_shapes
    n_layers = len(shapes)
    phases = []
    for layer, (n_in, _) in enumerate(shapes):
        phases.append({"multiply": 1.0, "adder_levels": float(clog2(n_in + 1)), "cast": 1.0 + (layer == n_layers - 1)})
    for layer in range(n_layers - 1, 0, -1):
        phases.append({"multiply": 1.0, "adder_levels": float(clog2(shapes[layer][1])), "cast": 1.0})
    phases.append({"multiply": 1.0, "adder_levels": 1.0, "cast": 1.0})
    return phases


def mlp_stage_features(spec: MLPSpec, pipe: Pipeline) -> list[dict[str, float]]:
    """The MLP RTL's phase delays summed between the phase registers, as features."""
    stages: list[dict[str, float]] = [{}]
    for p, phase in enumerate(_mlp_phase_delays(spec)):
        for key, value in phase.items():
            stages[-1]["mlp_" + key] = stages[-1].get("mlp_" + key, 0.0) + value
        if pipe.phases >> p & 1:
            stages.append({})
    return stages
