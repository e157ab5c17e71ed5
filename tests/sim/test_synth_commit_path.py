"""The commit (online_control's `last`) starts at one register and the reset, not at the stage counter.

Every coefficient bank's write enable reads it, so on a large learner it is a net across the part: on the
routed default spec at deep (ECP5) the path from the stage counter's comparator through `last` and `commit`
to the banks' write enables was the critical one (11.7 ns, 83 % routing). Checked on Yosys's netlist of
online_control alone: the cone of `last` reaches the reset port and a single flip-flop. The same for the
hold registers' clock enable (`hold_load`): once the products sat in their DSPs and the commit started at a
register, the path from the reset through the stage tests to those enables was the critical one (11.96 ns,
90 % routing); its cone is now one flip-flop alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from codesign.fpga.simulator import rtl_dir
from codesign.fpga.synth import find_yosys


def _sources_of(tmp_path, n_stages: int, output: str = "last") -> set[str]:
    """The register outputs and input ports whose values reach an output of online_control (N_STAGES, N_FRONT 3)."""
    try:
        yosys = find_yosys()
    except FileNotFoundError:
        pytest.skip("no Yosys")
    # run in tmp_path with relative names: the WebAssembly Yosys sees the folder it runs in
    shutil.copyfile(rtl_dir() / "online_control.sv", tmp_path / "online_control.sv")
    script = (f"read_slang --threads 1 -G N_STAGES={n_stages} -G PRED_STAGE=10 -G N_FRONT=3 --top online_control "
              "online_control.sv; synth -flatten -noabc -top online_control; write_json control.json")
    subprocess.run([*yosys, "-q", "-p", script], check=True, capture_output=True, timeout=600, cwd=tmp_path)
    module = json.loads((tmp_path / "control.json").read_text())["modules"]["online_control"]
    driver: dict[int, tuple[str, dict]] = {}
    for name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] == "output":
                for b in bits:
                    driver[b] = (name, cell)
    ports = {b: name for name, p in module["ports"].items() if p["direction"] == "input" for b in p["bits"]}
    sources, todo, seen = set(), list(module["ports"][output]["bits"]), set()
    while todo:
        bit = todo.pop()
        if bit in seen or isinstance(bit, str):
            continue
        seen.add(bit)
        if bit in ports:
            sources.add(ports[bit])
        elif bit in driver:
            name, cell = driver[bit]
            if "DFF" in cell["type"].upper():
                sources.add(f"ff:{name}")
            else:
                todo += [b for p, bits in cell["connections"].items() if cell["port_directions"][p] == "input" for b in bits]
    return sources


@pytest.mark.slow
def test_the_commit_starts_at_one_register_and_the_reset(tmp_path):
    sources = _sources_of(tmp_path, 23)  # the default spec's stages at deep
    assert "rst" in sources
    registers = [s for s in sources if s.startswith("ff:")]
    assert len(registers) == 1, sorted(sources)  # before: busy and every bit of the stage counter


@pytest.mark.slow
def test_the_hold_enable_is_one_register(tmp_path):
    """hold_load, the clock enable of every hold register, is a register: neither the reset nor the stage tests on its path."""
    sources = _sources_of(tmp_path, 26, "hold_load")  # the default spec's stages at deep (0x7:0x6fff:2)
    assert "rst" not in sources, sorted(sources)  # before: the reset, busy, pending and both stage counters
    assert len(sources) == 1 and next(iter(sources)).startswith("ff:"), sorted(sources)
