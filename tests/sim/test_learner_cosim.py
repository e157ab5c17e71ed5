"""The KAN and MLP learner RTL in Verilator, streamed by the cocotb bench, equals the Python reference.

Each case emits the RTL of a spec, builds it, streams a task (fitted to the spec's widths)
plus the corner block, with resets while samples are in flight and gaps in the input, and
checks every prediction and the final state integer for integer, and the measured II and
latencies against what the RTL manifest promises.
"""

from __future__ import annotations

import dataclasses

import pytest

from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.cosim import COSIM_FIELDS, run_cosim
from codesign.fpga.placement import Pipeline
from codesign.fpga.search import choose_pipeline
from codesign.fpga.stimulus import CORNER_SAMPLES
from codesign.kan.run import fit_widths
from codesign.kan.spec import KANSpec, MLPSpec, default_type
from codesign.tasks import make_stream

pytest.importorskip("cocotb")


def _fitted(spec, task: str):
    stream = make_stream(task, n_samples=10, seed=0)
    return fit_widths(spec, stream.n_inputs, stream.n_outputs)


def _deep_kan() -> KANSpec:
    """Three layers, k = 2 (an unused bank), a 32-cell grid and every rounding and overflow family."""
    return KANSpec(
        widths=(4, 5, 3, 1), grid_size=32, spline_order=2, grid_range=(-2.0, 2.0), lut_bits=5,
        act_t=FixedType.parse("ap_fixed<14,5,AP_RND,AP_SAT>"),
        coef_t=FixedType.parse("ap_fixed<18,6,AP_RND_ZERO,AP_SAT_SYM>"),
        basis_t=FixedType.parse("ap_ufixed<16,1,AP_RND_MIN_INF,AP_SAT>"),
        dbasis_t=FixedType.parse("ap_fixed<16,2,AP_TRN_ZERO,AP_SAT>"),
        dphi_t=FixedType.parse("ap_fixed<16,5,AP_RND_INF,AP_SAT_ZERO>"),
        err_t=FixedType.parse("ap_fixed<12,4,AP_TRN,AP_SAT>"),
        grad_t=FixedType.parse("ap_fixed<14,4,AP_RND_CONV,AP_WRAP>"),
        lr_shift=3,
    )


def _folded_kan() -> KANSpec:
    """Folded grid offset (AP_SAT_SYM act_t, cells of a power of two) and a fused error two fraction bits finer."""
    t = FixedType.parse
    return KANSpec(widths=(2, 3, 1), grid_size=8, grid_range=(-2.0, 2.0), lut_bits=5,
                   act_t=t("ap_fixed<14,5,AP_RND_INF,AP_SAT_SYM>"), err_t=t("ap_fixed<16,5,AP_RND,AP_SAT>"))


def _mixed_modes_kan() -> KANSpec:
    """tests/fpga's mixed_modes.toml: two outputs, quartic splines, every quantization and overflow family, 300 MHz."""
    t = FixedType.parse
    return KANSpec(
        widths=(3, 5, 2), grid_size=7, spline_order=4, grid_range=(-1.5, 1.5), lut_bits=5, lr_shift=3,
        act_t=t("ap_fixed<12,4,AP_RND,AP_SAT>"), coef_t=t("ap_fixed<14,5,AP_TRN,AP_WRAP>"),
        err_t=t("ap_fixed<10,4,AP_RND_ZERO,AP_SAT_SYM>"), grad_t=t("ap_fixed<12,3,AP_RND_INF,AP_SAT_ZERO>"),
        basis_t=t("ap_ufixed<16,1,AP_RND_MIN_INF,AP_SAT>"), dbasis_t=t("ap_fixed<14,3,AP_TRN_ZERO,AP_SAT>"),
        dphi_t=t("ap_fixed<16,5,AP_RND_CONV,AP_WRAP>"), clock_mhz=300,
    )


CASES = {
    # name: (spec, task, samples, pipeline)
    # the default: registers inside the phases for 250 MHz (II = C, tens of cycles)
    "kan_default_auto": (KANSpec(), "function_tracking", 2_000, "auto"),  # 10,000: benchmarks/rtl_sweep.py
    "kan_default_staged": (KANSpec(), "function_tracking", 1_000, "staged"),
    "kan_1x1_g5": (KANSpec(widths=(1, 1), grid_size=5, spline_order=3), "function_tracking", 10_000, "ii1"),
    # the next sample's scale, decode and bank read overlap this one's back (II 7 of 10 stages): its
    # bank read is registered at this sample's commit edge and must take the forwarded write
    "kan_1x1_g5_forward": (KANSpec(widths=(1, 1), grid_size=5, spline_order=3), "function_tracking", 1_000, Pipeline(1, 0x17FE, 0)),
    # the rows register without the bank read register: the products wait for the basis rows alone
    "kan_1x1_g5_rows": (KANSpec(widths=(1, 1), grid_size=5, spline_order=3), "function_tracking", 1_000, Pipeline(1, 0x27F8, 0)),
    # registers after F_1 and B_2 only (phases F_0 F_1 F_2 B_2 B_1 U): a partial mask, II = 3
    "kan_deep": (_deep_kan(), "mackey_glass", 10_000, 0b01010),
    # the same with a register inside every cast (fixed_cast CUT: the overflow terms are held) in every mode
    "kan_deep_round": (_deep_kan(), "mackey_glass", 1_000, Pipeline(0b01010, 1 << 11, 0)),
    # a hidden layer and two outputs: Verilator once stopped on these (V3DfgBreakCycles, MULS)
    "kan_2x2x2_ii1": (KANSpec(widths=(2, 2, 2), grid_size=4, spline_order=1, lut_bits=3), "function_tracking", 200, "ii1"),
    "kan_mixed_modes_auto": (_mixed_modes_kan(), "function_tracking", 200, "auto"),
    # ap_fixed<16,6> as C++ declares it (AP_TRN, AP_WRAP): wired casts, so auto leaves out the phase register and
    # the difference register (II 6 of 7 stages), and the next sample's front overlaps with the registered port select
    "kan_1x1_g5_trn_wrap_auto": (KANSpec(widths=(1, 1), grid_size=5, **{n: FixedType.parse("ap_fixed<16,6>") for n in (
        "act_t", "coef_t", "err_t", "grad_t")}), "function_tracking", 1_000, "auto"),
    # the folded grid offset and the fused error (codesign.fpga.pipeline.kan_folds) in other modes than the
    # default's: AP_SAT_SYM act_t (the fold) with err_t two fraction bits finer (the error clamp), and a CUT_ROUND
    # register inside every cast; then an AP_SAT_ZERO act_t (fused, not folded) with an AP_WRAP err_t
    "kan_folded_sat_sym_auto": (_folded_kan(), "mackey_glass", 1_000, "auto"),
    "kan_folded_sat_sym_round": (_folded_kan(), "mackey_glass", 500, Pipeline(0b110, 0x235D | 1 << 11, 2)),
    "kan_fused_sat_zero_auto": (KANSpec(widths=(2, 3, 1), grid_size=8, act_t=FixedType.parse("ap_fixed<12,4,AP_TRN_ZERO,AP_SAT_ZERO>"),
                                        err_t=FixedType.parse("ap_fixed<12,4,AP_RND_CONV,AP_WRAP>")), "function_tracking", 1_000, "auto"),
    # shared products (rtl/shared_mult.sv): each multiplier serves SHARE products, one per cycle, and a product site
    # counts SHARE cycles (one more with the operand register, CUTS bit 15); a power of two, a share that leaves
    # slots unused (3 layers, a partial mask), and the overlapped front with forwarding
    "kan_default_shared_2": (KANSpec(), "function_tracking", 500, Pipeline(0b110, 0xA35D, 2, share=2)),
    "kan_deep_shared_5": (_deep_kan(), "mackey_glass", 500, Pipeline(0b01010, 0x8, 0, share=5)),
    "kan_1x1_g5_forward_shared_3": (KANSpec(widths=(1, 1), grid_size=5, spline_order=3), "function_tracking", 500,
                                    Pipeline(1, 0x97FE, 0, share=3)),
    "mlp_default_ii1": (MLPSpec(), "function_tracking", 10_000, "ii1"),
    "mlp_hardtanh_staged": (
        MLPSpec(widths=(3, 8, 6, 1), activation="hardtanh", act_t=default_type(14, 4), coef_t=default_type(18, 5), lr_shift=4),
        "pendulum_id", 1_000, "staged",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_learner_rtl_is_bit_exact(name, tmp_path):
    spec, task, samples, pipeline = CASES[name]
    spec = _fitted(spec, task)
    if pipeline == "auto":  # resolved for a part first, as a build does at its edge
        pipeline = choose_pipeline(spec, find_board("xcvu9p"), "auto").placement
    result = run_cosim(spec, samples=samples, task=task, seed=1, pipeline=pipeline, work_dir=tmp_path, resets=4)
    assert result["passed"], result["failures"]
    assert all(k in result for k in COSIM_FIELDS)
    assert result["bit_exact"] is True
    # every accepted sample is checked; the task block and the 512 corner samples
    assert result["samples"] == samples + CORNER_SAMPLES
    assert result["prediction_mismatches"] == 0 and result["predictions_checked"] >= samples
    assert result["state_checked"] and result["state_mismatches"] == 0 and result["state_values"] == spec.num_parameters
    assert result["resets"] == 4
    expected = result["expected"]
    assert result["ii"] == result["ii_min"] == expected["ii"]
    assert result["latency_cycles"] == result["latency_cycles_min"] == expected["prediction_latency_cycles"]
    assert result["update_latency_cycles"] == expected["update_latency_cycles"]
    if expected["stages"] > 1:
        # a reset while a sample is between acceptance and commit drops it (modelled as train = 0)
        assert result["dropped_samples"] >= 1


def test_pipeline_placements_parse_and_count():
    from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
    from codesign.fpga.placement import Pipeline, parse_pipeline
    from codesign.fpga.search import choose_pipeline

    assert parse_pipeline("0x7:0x3ff:2") == Pipeline(7, 0x3FF, 2) and parse_pipeline("5") == 5
    assert parse_pipeline("0x7:0x3ff:2:4") == Pipeline(7, 0x3FF, 2, share=4)
    assert Pipeline(7, 0x3FF, 2, share=4).text == "0x7:0x3ff:2:4" and Pipeline(7, 0x3FF, 2, share=1).text == "0x7:0x3ff:2"
    for bad in ("fast", "1:2", "1:x:2", "-1:0:0", "1:0:0:1:1"):
        with pytest.raises(ValueError, match="--pipeline="):
            parse_pipeline(bad)
    spec = KANSpec(widths=(1, 1), grid_size=5)
    # every cut on a 1-1 KAN, no phase bit: forward scale, grid, decode, read, mult, sum, round (a 2-level tree
    # split every 2 levels has no register inside); err (the error is formed in the forward cast, whose round
    # register it shares: pipeline.kan_folds); update umult, ufull, round; no backward
    deep = pipeline_timing(spec, Pipeline(0, 0xFFF, 2))
    assert deep["stages"] == deep["update_latency_cycles"] == 1 + 7 + 1 + 3
    # the next sample runs through layer 0's scale, grid and decode registers while this one finishes
    assert deep["overlap_stages"] == 3 and deep["ii"] == 12 - 3
    assert pipeline_timing(spec, resolve_pipeline(spec, "deep"))["ii"] == 13 - 3
    # FORWARD adds the bank read register to that front
    assert pipeline_timing(spec, Pipeline(0, 0x1FFF, 2))["ii"] == 12 - 4
    with pytest.raises(ValueError, match="phase masks only"):
        resolve_pipeline(MLPSpec(), Pipeline(0, 1, 0))
    with pytest.raises(ValueError, match="no SHARE"):
        resolve_pipeline(MLPSpec(), Pipeline(0, 0, 0, share=2))
    for share in (0, 65):
        with pytest.raises(ValueError, match="SHARE .products per multiplier. takes 1..64"):
            resolve_pipeline(spec, Pipeline(0, 0, 0, share=share))
    # a shared product site is `share` cycles deep where its cut is one: forward and update products here (no backward)
    for share in (2, 3, 7):
        shared = pipeline_timing(spec, Pipeline(0, 0xFFF, 2, share=share))
        assert shared["stages"] == deep["stages"] + 2 * (share - 1) and shared["ii"] == deep["ii"] + 2 * (share - 1)
        # the operand register: one more per site
        registered = pipeline_timing(spec, Pipeline(0, 0xFFF | 1 << 15, 2, share=share))
        assert registered["stages"] == shared["stages"] + 2
    # without sharing it builds nothing and counts nothing
    assert pipeline_timing(spec, Pipeline(0, 0xFFF | 1 << 15, 2)) == deep
    with pytest.raises(ValueError, match="FORWARD and the rows register"):
        resolve_pipeline(spec, Pipeline(0, 0x1000 | 0x2000, 0))
    # the rows register beside the bank read costs no cycle; in its place, the same count
    assert pipeline_timing(spec, Pipeline(0, 0x2FFF, 2)) == deep
    assert pipeline_timing(spec, Pipeline(0, 0x2FFB, 2)) == deep
    met = choose_pipeline(spec, find_board("xcvu9p"), "auto")
    assert met.clock_met and pipeline_timing(spec, met.placement)["ii"] > 1
    missed = choose_pipeline(dataclasses.replace(spec, clock_mhz=2000), find_board("xcvu9p"), "auto")
    assert not missed.clock_met and "2000 MHz not met" in missed.note and "\n" not in missed.note


def test_staged_pipeline_timing_is_what_the_mask_says():
    from codesign.fpga.pipeline import pipeline_mask, pipeline_timing

    spec = KANSpec()
    assert pipeline_timing(spec, pipeline_mask(spec, "ii1")) == {
        "stages": 1, "ii": 1, "overlap_stages": 0, "prediction_latency_cycles": 1, "update_latency_cycles": 1,
    }
    assert pipeline_timing(spec, pipeline_mask(spec, "staged")) == {
        "stages": 4, "ii": 4, "overlap_stages": 0, "prediction_latency_cycles": 2, "update_latency_cycles": 4,
    }
    deep = dataclasses.replace(spec, widths=(2, 3, 3, 1))
    timing = pipeline_timing(deep, pipeline_mask(deep, 0b01010))
    assert timing["ii"] == 3 and timing["update_latency_cycles"] == 3
    assert timing["prediction_latency_cycles"] == 2  # F_2 runs in stage 1
    with pytest.raises(ValueError, match="register mask"):
        pipeline_mask(deep, 1 << 5)
    with pytest.raises(ValueError, match="pipeline='fast'"):
        pipeline_mask(deep, "fast")


@pytest.mark.slow
def test_a_stalled_design_fails_the_bench_by_name(tmp_path, monkeypatch):
    """A design that never raises ap_done: the bench stops after its stall limit and names the last handshake."""
    import shutil

    import codesign.fpga.rtl_emit as rtl_emit
    from codesign.fpga.simulator import rtl_dir

    broken = tmp_path / "lib"
    shutil.copytree(rtl_dir(), broken)
    control = (broken / "online_control.sv").read_text()
    assert "done <= last;" in control
    (broken / "online_control.sv").write_text(control.replace("done <= last;", "done <= 1'b0;"))
    monkeypatch.setattr(rtl_emit, "rtl_dir", lambda: broken)
    spec = KANSpec(widths=(1, 1), grid_size=4, spline_order=1, lut_bits=3)
    result = run_cosim(spec, samples=50, work_dir=tmp_path / "work", resets=0)
    assert not result["passed"] and not result["bit_exact"]
    assert any("no handshake for 1000 cycles" in f and "last handshake seen: prediction of sample" in f for f in result["failures"])
