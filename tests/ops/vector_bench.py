"""cocotb bench of the operation tests: apply vectors to a combinational module's inputs, record its outputs.

The config names the input ports with one list of unsigned integers each (all of one length) and
the output ports to read; the result holds, per output port, the unsigned value after each vector.
With "clock": true a rising edge of clk follows each read, so a registered output read with vector t
holds what the module saw with vector t - 1 (and 0 or its initial value for the first).
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def apply_vectors(dut):
    """Drive every vector, wait for the logic to settle, read every output."""
    with open(os.environ["CODESIGN_BENCH_CONFIG"]) as f:
        config = json.load(f)
    inputs: dict[str, list[int]] = config["inputs"]
    outputs: dict[str, list[int]] = {name: [] for name in config["outputs"]}
    n = len(next(iter(inputs.values())))
    if hasattr(dut, "clk"):
        dut.clk.value = 0
    for t in range(n):
        for name, values in inputs.items():
            getattr(dut, name).value = values[t]
        await Timer(1, unit="ns")
        for name, values in outputs.items():
            values.append(int(getattr(dut, name).value))  # unsigned: LogicArray and Logic alike
        if config.get("clock"):
            dut.clk.value = 1
            await Timer(1, unit="ns")
            dut.clk.value = 0
            await Timer(1, unit="ns")
    with open(os.environ["CODESIGN_BENCH_RESULT"], "w") as f:
        json.dump({"outputs": outputs}, f)
