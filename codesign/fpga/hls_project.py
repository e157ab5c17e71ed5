"""Write a complete Vitis HLS project for a learner spec: firmware, library copy, testbench,
testbench data, ``build_prj.tcl``, README and ``manifest.json``.

Every file comes from a template under ``hls/templates/`` with named slots; the
learner-specific firmware comes from the kind's package: :mod:`codesign.fpga.kan.firmware` or
:mod:`codesign.fpga.mlp.firmware`.
"""

from __future__ import annotations

import json
from pathlib import Path

from codesign import __version__
from codesign.fpga.axi import stream_layout
from codesign.fpga.boards import Board
from codesign.fpga.kind import Firmware
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.manifest import interface_table, manifest
from codesign.fpga.stimulus import Reference, Stimulus, write_tb_data
from codesign.fpga.templates import library_headers, render
from codesign.fpga.timing import Timing
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["GENERATED", "firmware_module", "write_project", "project_name"]

# What a build writes at the top of its folder; --force replaces these and nothing else.
GENERATED = ("firmware", "tb", "tb_data", "csim", "rtl", "build_prj.tcl", "README.md", "manifest.json", "report.json")


def firmware_module(spec: KANSpec | MLPSpec) -> Firmware:
    """The firmware renderer of a spec's learner."""
    return fpga_kind(spec).firmware


def project_name(learner: str) -> str:
    """The Vitis HLS project folder that build_prj.tcl creates."""
    return f"{learner}_prj"


def _spec_text(spec: KANSpec | MLPSpec) -> str:
    return "\n    ".join(f"{k} = {v}" for k, v in spec.to_dict().items())


def _timing_text(timing: Timing, clock_mhz: float) -> str:
    t = timing.to_dict(clock_mhz)
    stages = ", ".join(f"{k} {v}" for k, v in timing.stages.items())
    return (
        f"Analytic stage count (to be measured by co-simulation): prediction after "
        f"{t['prediction_latency_cycles_expected']} cycles, the whole sample (ap_done) after "
        f"{t['latency_cycles_expected']} cycles ({t['latency_ns_expected']} ns at {clock_mhz:g} MHz); "
        f"stages: {stages}.\n\nII: the pipeline's target is {t['ii_target']}. Exact online SGD makes "
        f"sample t+1 read the state that sample t writes, so the expected II is the read-to-write "
        f"distance, {t['ii_expected']} cycles, unless that chain closes in one clock. "
        f"`csynth_design` reports the achieved II."
    ) + (
        f"\n\nSchedule: {t['basis']}. The top's `PIPELINE II={t['ii_target']}` and `LATENCY "
        f"max={t['latency_cycles_expected']}` are the RTL's: it writes a sample's coefficients "
        f"{t['latency_cycles_expected']} cycles after the sample is accepted; the next sample's grid "
        f"coordinate and basis ROM read ({t['latency_cycles_expected'] - t['ii_expected']} cycles) need "
        "no coefficient and overlap that, but its coefficient read must see the write, so at this clock "
        f"Vitis should reach II = {t['ii_expected']}, not less (a smaller II would need the write before "
        "the read)." if timing.schedule else ""
    )


def write_project(
    out: Path, spec: KANSpec | MLPSpec, board: Board, target: str, stimulus: Stimulus,
    reference: Reference, timing: Timing,
) -> dict:
    """Write every project file into ``out`` (the partial folder of :class:`codesign.outputs.OutputFolder`); returns the manifest."""
    fw = firmware_module(spec)
    learner = fw.LEARNER
    files = dict(fw.render_firmware(spec, reference.initial_state, stimulus.seed, timing))
    files[f"firmware/{learner}.h"] = render(
        "common/top.h", version=__version__, learner=learner, top=f"{learner}_top",
        guard=f"{learner.upper()}_H_", state_what=fw.STATE_WHAT,
    )
    for name, text in library_headers().items():
        files[f"firmware/codesign/{name}"] = text
    files[f"tb/{learner}_test.cpp"] = render(
        "common/testbench.cpp", version=__version__, learner=learner, top=f"{learner}_top", top_header=f"{learner}.h",
    )
    # the AXI top (INTERFACE axis / s_axilite) with the stream words of the RTL's AXI top, and its testbench
    layout = stream_layout(spec.n_inputs, spec.n_outputs, spec.act_t.width)
    axi_slots = {"version": __version__, "learner": learner, "top": f"{learner}_top"}
    files[f"firmware/{learner}_axi.h"] = render(
        "common/top_axi.h", **axi_slots, guard=f"{learner.upper()}_AXI_H_", s_width=str(layout.s_width),
        m_width=str(layout.m_width), train_bit=str(layout.train_bit),
    )
    files[f"firmware/{learner}_axi.cpp"] = render("common/top_axi.cpp", **axi_slots)
    files[f"tb/{learner}_axi_test.cpp"] = render("common/testbench_axi.cpp", **axi_slots)
    target_label = board.label
    clock = spec.clock_mhz
    files["build_prj.tcl"] = render(
        "common/build_prj.tcl", version=__version__, learner=learner, top=f"{learner}_top",
        target_label=target_label, part=board.part, clock_mhz=f"{clock:g}",
        clock_period_ns=f"{1000.0 / clock:.4g}", project_name=project_name(learner),
    )
    data = manifest(learner, spec, board, timing)
    files["README.md"] = render(
        "common/README.md", version=__version__, learner=learner, learner_title=fw.TITLE, target=target,
        target_label=target_label, part=board.part, clock_mhz=f"{clock:g}", top=f"{learner}_top",
        project_name=project_name(learner),
        firmware_rows="\n".join(f"| `{path}` | {what} |" for path, what in fw.FIRMWARE_ROWS.items()),
        interface_text=interface_table(data), spec_text=_spec_text(spec), timing_text=_timing_text(timing, clock),
    )
    files["manifest.json"] = json.dumps(data, indent=2) + "\n"
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    write_tb_data(out / "tb_data", stimulus, reference)
    return data
