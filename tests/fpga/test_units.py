"""The pieces of the FPGA backend: exact intermediate widths, templates, stimulus, timing, manifest."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.csim import CsimError, parse_summary
from codesign.fpga.intermediates import kan_layer_types, mlp_layer_types
from codesign.fpga.kan.firmware import bank_layout, state_names
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.manifest import manifest
from codesign.fpga.stimulus import CORNER_SAMPLES, adapt_columns, make_stimulus
from codesign.fpga.templates import array_initializer, fixed_literal, library_headers, render
from codesign.kan.spec import KANSpec, MLPSpec, default_type


def test_intermediates_are_at_least_the_documented_widths():
    """docs/arithmetic.md §9, with the fractional bits of the terms."""
    spec = KANSpec()
    growth = math.ceil(math.log2(max(spec.widths) * (spec.spline_order + 1))) + 1
    for layer in range(len(spec.layer_shapes)):
        t = kan_layer_types(spec, layer)
        assert t.fwd_acc_t.width >= spec.basis_t.width + spec.coef_t.width + growth
        assert t.fwd_acc_t.frac == spec.basis_t.frac + spec.coef_t.frac
        assert t.dacc_t.frac == spec.dbasis_t.frac + spec.coef_t.frac
        f_delta = t.g_t.frac + spec.basis_t.frac + spec.lr_shift
        assert t.upd_t.frac == max(spec.coef_t.frac, f_delta)
        assert t.upd_t.width >= spec.coef_t.width + max(0, f_delta - spec.coef_t.frac) + 2
    assert kan_layer_types(spec, 1).g_t == spec.err_t and kan_layer_types(spec, 0).g_t == spec.grad_t


def test_update_width_covers_a_step_larger_than_the_coefficient_range():
    """lr_shift 0 with a wide gradient: |2^-s g b| can exceed the coefficient range; the width follows."""
    spec = KANSpec(lr_shift=0, err_t=default_type(16, 10), coef_t=default_type(12, 2))
    t = kan_layer_types(spec, 1)
    assert t.upd_t.int_bits >= spec.err_t.int_bits + spec.basis_t.int_bits + 1


def test_mlp_intermediates():
    spec = MLPSpec()
    t = mlp_layer_types(spec, 0)
    assert t.acc_t.frac == spec.coef_t.frac + spec.act_t.frac and t.g_t == spec.grad_t
    assert mlp_layer_types(spec, 1).g_t == spec.err_t


def test_fixed_literals_are_exact():
    for raw, frac in [(0, 5), (-1234, 10), (131071, 17), (-(2**31), 20), (7, -3)]:
        text = fixed_literal(raw, frac)
        assert float(text) * 2.0**frac == raw and ("." in text or "e" in text)


def test_array_initializer_nests_like_the_array():
    text = array_initializer(np.arange(6).reshape(2, 3), 0)
    assert text.count("{") == 3 and "0.0, 1.0, 2.0" in text and "3.0, 4.0, 5.0" in text


def test_templates_need_every_slot():
    with pytest.raises(KeyError, match="slot"):
        render("kan_online/layer_config.h", layer=0)
    headers = library_headers()
    assert {"kan_online.h", "kan_grid.h", "mlp_online.h", "fixed_bits.h", "online_error.h"} <= set(headers)


def test_bank_layout_puts_consecutive_coefficients_in_distinct_banks():
    coef = np.arange(11)[None, None, :]
    banked = bank_layout(coef, 4)
    assert banked.shape == (1, 1, 4, 3)
    for cell in range(8):  # every window cell..cell+3 touches each bank once
        banks = sorted((cell + j) % 4 for j in range(4))
        assert banks == [0, 1, 2, 3]
        for j in range(4):
            m = cell + j
            assert banked[0, 0, m % 4, m // 4] == m
    assert len(state_names(KANSpec())) == KANSpec().num_parameters


def test_adapt_columns_reuses_and_negates():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(adapt_columns(a, 5), [[1, 2, -1, -2, 1], [3, 4, -3, -4, 3]])
    np.testing.assert_array_equal(adapt_columns(a, 1), [[1], [3]])


def test_stimulus_shape_and_corner_block():
    spec = KANSpec(widths=(3, 4, 2))
    s = make_stimulus(spec, n_samples=1000, seed=0)
    assert s.x.shape == (1000 + CORNER_SAMPLES, 3) and s.y.shape == (1000 + CORNER_SAMPLES, 2)
    assert s.train[:1000].all() and 0 < s.train[1000:].sum() < CORNER_SAMPLES
    act = spec.act_t
    corner = s.x[1000:]
    assert corner.min() == act.min_raw and corner.max() == act.max_raw  # saturating extremes reach the top
    assert (corner == act.quantize([-1.0])[0]).any()  # the grid edge lo
    assert np.array_equal(s.x, make_stimulus(spec, n_samples=1000, seed=0).x)  # seeded
    with pytest.raises(ValueError, match="samples"):
        make_stimulus(spec, n_samples=0)


def test_stimulus_of_a_task_without_n_inputs_fits_the_widths():
    s = make_stimulus(KANSpec(widths=(5, 3, 2)), task="mackey_glass", n_samples=500, seed=1)
    assert s.x.shape[1] == 5 and s.y.shape[1] == 2


def expected_timing(spec):
    return fpga_kind(spec).expected_timing(spec)


def test_expected_timing():
    default = expected_timing(KANSpec())
    multiply = expected_timing(KANSpec(grid_size=5, grid_range=(-2.0, 2.0)))  # 1/h = 1.25
    assert multiply.latency > default.latency  # the grid multiply and the 1/h multiply cost stages
    deeper = expected_timing(KANSpec(widths=(2, 4, 4, 1)))
    assert deeper.latency > default.latency and deeper.prediction_latency > default.prediction_latency
    for t in (default, multiply, deeper, expected_timing(MLPSpec())):
        assert 0 < t.prediction_latency < t.latency and 1 <= t.ii_expected <= t.latency and t.ii_target == 1


def test_manifest_ports_follow_the_spec():
    spec = KANSpec(widths=(3, 5, 2), act_t=default_type(12, 4))
    data = manifest("kan_online", spec, find_board("xcvu9p"), expected_timing(spec))
    ports = {p["name"]: p for p in data["ports"]}
    assert ports["x"]["width"] == 36 and ports["y"]["width"] == 24 and ports["y_hat"]["width"] == 24
    assert ports["train"]["width"] == 1 and ports["x"]["valid"] == "x_ap_vld"
    assert data["types"]["act_t"] == str(spec.act_t)


def test_parse_summary():
    out = "mismatch: ...\ncsim: samples=10 prediction_mismatches=1 state_values=4 state_mismatches=0 result=FAIL\n"
    assert parse_summary(out) == (10, 1, 4, 0, False)
    with pytest.raises(CsimError):
        parse_summary("crashed")


def test_board_clock_unless_the_config_sets_one(tmp_path):
    from codesign.fpga.plan import load_build_spec

    pynq = find_board("pynq-z2")
    assert load_build_spec("kan_online", None, pynq).clock_mhz == pynq.clock_mhz
    config = tmp_path / "c.toml"
    config.write_text("clock_mhz = 125\n")
    assert load_build_spec("kan_online", config, pynq).clock_mhz == 125
    assert dataclasses.replace(load_build_spec("mlp_online", config, pynq), clock_mhz=1.0).widths == MLPSpec().widths


def test_bits_initializer_writes_two_complement_patterns():
    from codesign.fpga.templates import bits_initializer, bits_word_type

    text = bits_initializer(np.array([[0, 1, -1], [5, -6, 131071]]), 18)
    assert text.split() == ["{", "{", "0u,", "1u,", "262143u", "},", "{", "5u,", "262138u,", "131071u", "}", "}"]
    assert [bits_word_type(w) for w in (1, 8, 9, 16, 18, 32)] == ["uint8_t", "uint8_t", "uint16_t", "uint16_t",
                                                                   "uint32_t", "uint32_t"]


def test_the_timing_basis_is_a_value_not_prose():
    from codesign.fpga.report import format_report  # noqa: PLC0415
    from codesign.fpga.timing import Timing, TimingBasis, rtl_schedule  # noqa: PLC0415

    spec = KANSpec()
    analytic = expected_timing(spec)
    scheduled = rtl_schedule(analytic, {"prediction_latency_cycles": 3, "update_latency_cycles": 5, "ii": 4}, "auto 0x1")
    assert analytic.basis is TimingBasis.ANALYTIC and scheduled.basis is TimingBasis.RTL_SCHEDULE
    assert scheduled.to_dict(250.0)["basis_kind"] == "rtl_schedule" and scheduled.stages == analytic.stages
    # the terminal line reads the kind, whatever the prose says
    t = {**Timing(1, 2, 2, schedule="x").to_dict(250.0), "basis": "reworded"}
    report = {"spec": {}, "csim": {"bit_exact": True, "samples": 1, "prediction_mismatches": 0, "state_mismatches": 0,
                                   "state_values": 1, "seconds": 0.0},
              "stream": {"task_samples": 1, "task": "t", "corner_samples": 0}, "board": None, "learner": "kan_online",
              "target": "xcvu9p", "part": "p", "clock_mhz": 250.0, "parameters": 1, "latency_cycles_expected": 2,
              "latency_ns_expected": 8.0, "prediction_latency_cycles_expected": 1, "ii_target": 2, "ii_expected": 2,
              "timing": t, "output": "o"}
    assert "HLS schedule: the RTL pipeline" in format_report(report)
