"""rtl/fixed_cast.sv through Verilator equals codesign.fixed.fixed_cast in all 7 x 4 modes."""

from __future__ import annotations

import pytest

from codesign.fpga.simulator import bench_dir, build_simulation, rtl_dir, run_bench

pytest.importorskip("cocotb")

# (w_in, shift, w_out, signed): typical drops, an unsigned target, a left shift, a drop wider than
# the input, the coefficient-update cast, a 1-bit target, no shift, and a 40-bit input.
SHAPES = [
    (24, 7, 10, 1), (24, 7, 10, 0), (12, -3, 10, 1), (10, 13, 6, 1),
    (34, 21, 16, 1), (5, 1, 1, 1), (20, 0, 8, 1), (40, 31, 16, 1),
]


def _packed(values: list[int]) -> str:
    word = 0
    for i, v in enumerate(values):
        word |= (v & 0xFFFFFFFF) << (32 * i)
    return f"{32 * len(values)}'h{word:x}"


def test_fixed_cast_all_modes(tmp_path_factory):
    build = tmp_path_factory.getbasetemp() / "fixed_cast_build"
    params = {
        "N_SHAPES": len(SHAPES),
        "W_IN_TABLE": _packed([s[0] for s in SHAPES]),
        "SHIFT_TABLE": _packed([s[1] for s in SHAPES]),
        "W_OUT_TABLE": _packed([s[2] for s in SHAPES]),
        "SIGNED_TABLE": _packed([s[3] for s in SHAPES]),
    }
    build_simulation(
        [rtl_dir() / "pipe_reg.sv", rtl_dir() / "fixed_cast.sv", bench_dir() / "fixed_cast_harness.sv"], "fixed_cast_harness", build, params
    )
    shapes = [dict(w_in=a, shift=b, w_out=c, signed=d) for a, b, c, d in SHAPES]
    result = run_bench(build, "fixed_cast_harness", "fixed_cast_bench", {"shapes": shapes, "n_random": 1500, "seed": 1})
    assert result["passed"], result["failures"]
    assert result["checked"] >= 1500 * len(SHAPES) * 28
    assert result["mismatches"] == []
