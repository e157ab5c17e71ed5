"""Run integer vectors through one SystemVerilog module (Verilator through cocotb) for the operation tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from codesign.fpga.simulator import build_simulation, rtl_dir, run_bench


def pack(values: np.ndarray, bits: int) -> list[int]:
    """Rows of raw integers (n, k) -> one unsigned word per row, element 0 in the low bits."""
    values = np.atleast_2d(np.asarray(values, dtype=np.int64).T).T
    mask = (1 << bits) - 1
    return [sum((int(v) & mask) << (k * bits) for k, v in enumerate(row)) for row in values]


def unpack(words: Sequence[int], bits: int, count: int, signed: bool) -> np.ndarray:
    """One unsigned word per row -> (n, count) integers of `bits` bits each, sign-extended when signed."""
    mask = (1 << bits) - 1
    out = np.array([[(w >> (k * bits)) & mask for k in range(count)] for w in words], dtype=np.int64)
    if signed:
        out = np.where(out >= 1 << (bits - 1), out - (1 << bits), out)
    return out


def run_module(sources: Sequence[str | Path], top: str, parameters: Mapping[str, object], inputs: Mapping[str, list[int]],
               outputs: Sequence[str], build: Path, clock: bool = False, includes: Sequence[Path] = ()) -> dict[str, list[int]]:
    """Build `top` from its sources (names in rtl/, or paths) with parameters, apply the input words, return the output words.

    clock: a rising edge of clk after each read (vector_bench), for a module with registers.
    includes: folders of the `include files (rtl/ for a module that includes mem_names.svh).
    """
    pytest.importorskip("cocotb")
    build_simulation([rtl_dir() / s if isinstance(s, str) else s for s in sources], top, build, parameters, includes=includes)
    result = run_bench(build, top, "tests.ops.vector_bench", {"inputs": dict(inputs), "outputs": list(outputs), "clock": clock})
    assert result["passed"], result["failures"]
    return result["outputs"]
