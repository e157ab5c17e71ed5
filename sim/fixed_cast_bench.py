"""Bench of rtl/fixed_cast.sv: every rounding and overflow mode against codesign.fixed.fixed_cast.

Drives ``fixed_cast_harness`` (one fixed_cast per shape and mode) with random inputs and the
corner values of each shape (the extremes, zero, and exact ties of the dropped bits), and
compares every output with the Python cast, integer for integer.
"""

from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.triggers import Timer

from codesign.fixed.kernel import fixed_cast_array

N_QMODES, N_OMODES = 7, 4


def _load_config() -> dict:
    return json.loads(open(os.environ["CODESIGN_BENCH_CONFIG"]).read())


def _stimulus(w_in: int, shift: int, n_random: int, rng: np.random.Generator) -> np.ndarray:
    """Corner values and random values of a W_IN-bit signed input, ties of the dropped bits included."""
    lo, hi = -(1 << (w_in - 1)), (1 << (w_in - 1)) - 1
    corners = [lo, lo + 1, -1, 0, 1, hi - 1, hi]
    values = rng.integers(lo, hi, size=n_random, endpoint=True, dtype=np.int64)
    if shift > 0:
        # force the dropped bits to exactly half, half +- 1 and zero on a third of the values
        drop = min(shift, w_in)
        half = 1 << (drop - 1)
        patterns = np.array([half, half - 1, half + 1 if drop > 1 else half, 0], dtype=np.int64)
        idx = rng.integers(0, 3, size=n_random) == 0
        low = patterns[rng.integers(0, len(patterns), size=n_random)] & ((1 << drop) - 1)
        values[idx] = ((values[idx] >> drop) << drop) | low[idx]
        values = np.clip(values, lo, hi)
        corners += [half, -half, half * 3, -half * 3]
    return np.concatenate([np.clip(np.array(corners, dtype=np.int64), lo, hi), values])


def _expected(values: np.ndarray, shape: dict) -> np.ndarray:
    """Raw bit patterns (n, 7, 4) that fixed_cast gives for every mode, the overflow flag at bit 31."""
    out = np.empty((values.size, N_QMODES, N_OMODES), dtype=np.int64)
    for qm in range(N_QMODES):
        wide = fixed_cast_array(values, shape["shift"], 62, True, qm, 0)  # AP_SAT into 62 bits: never overflows
        for om in range(N_OMODES):
            r = fixed_cast_array(values, shape["shift"], shape["w_out"], bool(shape["signed"]), qm, om)
            out[:, qm, om] = (r & ((1 << shape["w_out"]) - 1)) | (r != wide).astype(np.int64) << 31
    return out


@cocotb.test()
async def fixed_cast_sv_matches_python(dut):
    """Every mode of every shape equals fixed_cast on corner and random inputs."""
    config = _load_config()
    shapes = config["shapes"]
    rng = np.random.default_rng(config.get("seed", 0))
    stimuli = [_stimulus(s["w_in"], s["shift"], config["n_random"], rng) for s in shapes]
    expected = [_expected(v, s) for v, s in zip(stimuli, shapes)]
    n = max(v.size for v in stimuli)
    n_slots = len(shapes) * N_QMODES * N_OMODES
    got = np.empty((n, n_slots), dtype=np.uint32)
    for t in range(n):
        word = 0
        for s, values in enumerate(stimuli):
            word |= (int(values[t % values.size]) & ((1 << 64) - 1)) << (64 * s)
        dut.v_all.value = word
        await Timer(1, unit="ns")
        got[t] = np.frombuffer(dut.q_all.value.to_unsigned().to_bytes(4 * n_slots, "little"), dtype="<u4")
    got = got.reshape(n, len(shapes), N_QMODES, N_OMODES)
    mismatches = []
    for s, shape in enumerate(shapes):
        rows = np.arange(n) % stimuli[s].size
        exp = expected[s][rows]
        bad = np.argwhere(got[:, s].astype(np.int64) != exp)
        for t, qm, om in bad[:5]:
            v = int(stimuli[s][rows[t]])
            mismatches.append(f"shape {shape} qmode {qm} omode {om} v={v}: rtl {int(got[t, s, qm, om])} python {int(exp[t, qm, om])}")
    with open(os.environ["CODESIGN_BENCH_RESULT"], "w") as f:
        json.dump({"checked": int(got.size), "mismatches": mismatches}, f)
    assert not mismatches, f"{len(mismatches)} mismatching shapes/modes, first: {mismatches[0]}"
