"""Bench of the randomized power-up: reads power_up_harness's register, never reset, before and after two edges."""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer


@cocotb.test()
async def power_up_value(dut):
    """Write the register's power-up value (and that it holds) to the result file."""
    await Timer(1, "ns")
    first = int(dut.q.value)
    cocotb.start_soon(Clock(dut.clk, 10, "ns").start())
    await ClockCycles(dut.clk, 2)
    with open(os.environ["CODESIGN_BENCH_RESULT"], "w") as f:
        json.dump({"power_up": first, "held": int(dut.q.value) == first}, f)
