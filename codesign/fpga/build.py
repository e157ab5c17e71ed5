"""``codesign build``: spec -> Vitis HLS project -> g++ C-simulation against the Python reference -> report.

Every input is checked before any work starts (learner, target, config, compiler, output
folder), so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TextIO

from codesign.config import LEARNERS, config_fields, spec_from_fields
from codesign.fpga.boards import Board, find_board
from codesign.fpga.csim import compile_csim, find_ap_types, find_compiler, run_csim
from codesign.fpga.hls_project import firmware_module, generated_entries, write_project
from codesign.outputs import Progress, prepare_output
from codesign.fpga.report import build_report, format_report
from codesign.fpga.stimulus import make_stimulus, run_reference
from codesign.fpga.timing import expected_timing
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import task_options

__all__ = ["build", "load_build_spec", "default_output"]

MIN_SAMPLES = 1


def load_build_spec(learner: str, config: str | Path | None, board: Board) -> KANSpec | MLPSpec:
    """The learner's built-in spec with the config's fields on top; the board's clock unless the config sets one."""
    fields = config_fields(config)
    spec = spec_from_fields(learner, fields)
    if "clock_mhz" not in fields:
        spec = dataclasses.replace(spec, clock_mhz=board.clock_mhz)
    return spec


def default_output(learner: str, board: Board) -> Path:
    """./codesign_out/<learner>_<part>."""
    return Path("codesign_out") / f"{learner}_{board.name}"


def build(
    learner: str,
    target: str = "xcvu9p",
    config: str | Path | None = None,
    out: str | Path | None = None,
    force: bool = False,
    samples: int = 10_000,
    task: str = "function_tracking",
    seed: int = 0,
    stream: TextIO | None = None,
) -> dict:
    """Generate, C-simulate and report one learner for one target; returns the report (also in report.json)."""
    stream = stream if stream is not None else sys.stdout
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    board = find_board(target)
    spec = load_build_spec(learner, config, board)
    if samples < MIN_SAMPLES:
        raise ValueError(f"--samples={samples}: need at least {MIN_SAMPLES} sample")
    if seed < 0:
        raise ValueError(f"--seed={seed}: must be >= 0")
    task_options(task)  # an unknown task is refused here, before anything is written
    compiler = find_compiler()
    ap_types = find_ap_types()
    out_dir = Path(out) if out is not None else default_output(learner, board)
    prepare_output(out_dir, generated_entries(learner), force)
    fw = firmware_module(spec)
    timing = expected_timing(spec)

    progress = Progress(5, stream)
    print(f"codesign build {learner} --target {target}: {board.label}, part {board.part}, {spec.clock_mhz:g} MHz", file=stream)
    with progress.step("reference", f"running the Python reference on {samples:,} samples of {task} + corner samples"):
        stimulus = make_stimulus(spec, task=task, n_samples=samples, seed=seed)
        reference = run_reference(spec, stimulus, fw)
    with progress.step("render", f"writing the HLS project to {out_dir}"):
        write_project(out_dir, spec, board, target, stimulus, reference, timing)
    with progress.step("compile", f"compiling the C-simulation with {Path(compiler).name}"):
        binary = compile_csim(out_dir, fw.LEARNER, compiler, ap_types)
    with progress.step("csim", f"running the C-simulation on {stimulus.samples:,} samples"):
        csim = run_csim(binary, out_dir / "tb_data")
    with progress.step("report", "writing report.json"):
        report = build_report(learner, target, board, spec, stimulus, reference, csim, timing, out_dir, progress.seconds)
        (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(format_report(report), file=stream, flush=True)
    return report
