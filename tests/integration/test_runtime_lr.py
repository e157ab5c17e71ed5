"""The run-time learning-rate shift (the spec's lr_shift_span, the AXI shell's LR_SHIFT): reference and HLS.

At every shift of the range the reference with a per-sample shift equals the reference built with that
fixed lr_shift, integer for integer (the RTL and HLS size the update for the largest shift, which gives
the same exact value and so the same cast: tests/integration/test_axi_cosim.py and the HLS C-simulation
below follow a schedule bit for bit).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.csim import compile_csim, find_ap_types, find_compiler, run_csim
from codesign.fpga.hls_project import write_project
from codesign.fpga.kan import firmware as kan_firmware
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.stimulus import make_stimulus, run_reference
from codesign.fpga.timing import rtl_schedule
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.mlp_learner import MLPLearner
from codesign.kan.spec import KANSpec, MLPSpec

SPEC = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=3, lr_shift_span=2)


def test_each_shift_of_the_range_equals_the_fixed_shift_reference():
    stimulus = make_stimulus(SPEC, n_samples=400, seed=4)
    predictions = []
    for shift in range(SPEC.lr_shift, SPEC.lr_shift_max + 1):
        runtime = KANLearner(SPEC, seed=0)
        got = runtime.run_raw(stimulus.x, stimulus.y, stimulus.train, lr_shifts=shift)
        fixed = KANLearner(dataclasses.replace(SPEC, lr_shift=shift, lr_shift_span=0), seed=0)
        np.testing.assert_array_equal(got, fixed.run_raw(stimulus.x, stimulus.y, stimulus.train))
        np.testing.assert_array_equal(runtime.coef, fixed.coef)
        predictions.append(got)
    assert not np.array_equal(predictions[0], predictions[-1])  # the shift changes the learning


def test_a_shift_outside_the_range_is_refused():
    stimulus = make_stimulus(SPEC, n_samples=20, seed=4)
    shifts = np.full(stimulus.samples, SPEC.lr_shift)
    shifts[7] = SPEC.lr_shift_max + 1
    with pytest.raises(ValueError, match="shift 7 at sample 7 is outside the spec's run-time range 4..6"):
        KANLearner(SPEC).run_raw(stimulus.x, stimulus.y, stimulus.train, lr_shifts=shifts)
    mlp = MLPSpec()
    with pytest.raises(ValueError, match="outside the spec's run-time range 5..5"):
        MLPLearner(mlp).run_raw(np.zeros((2, 2), dtype=np.int64), np.zeros((2, 1), dtype=np.int64), lr_shifts=6)
    with pytest.raises(ValueError, match="lr_shift \\+ lr_shift_span = 25: the largest learning-rate shift is 24"):
        KANSpec(lr_shift=22, lr_shift_span=3)


def test_the_hls_axi_top_follows_a_shift_schedule_in_csim(tmp_path):
    stimulus = make_stimulus(SPEC, n_samples=300, seed=3)
    n = stimulus.samples
    shifts = np.full(n, 4)
    shifts[n // 3:2 * n // 3], shifts[2 * n // 3:] = 6, 5
    stimulus = dataclasses.replace(stimulus, lr_shifts=shifts)
    reference = run_reference(SPEC, stimulus, kan_firmware)
    fixed = run_reference(SPEC, dataclasses.replace(stimulus, lr_shifts=None), kan_firmware)
    assert not np.array_equal(reference.predictions, fixed.predictions)  # the schedule matters
    timing = rtl_schedule(fpga_kind(SPEC).expected_timing(SPEC), pipeline_timing(SPEC, resolve_pipeline(SPEC, "ii1")), "ii1")
    write_project(tmp_path, SPEC, find_board("xcvu9p"), "xcvu9p", stimulus, reference, timing)
    binary = compile_csim(tmp_path, "kan_online", find_compiler(), find_ap_types(), top="_axi")
    result = run_csim(binary, tmp_path / "tb_data", log_name="csim_axi.log")
    assert result.bit_exact and result.mismatches == 0 and result.samples == n
