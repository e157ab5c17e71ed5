"""``codesign build``: spec -> Vitis HLS project -> g++ C-simulation against the Python reference -> report.

Every input is checked before any work starts (learner, target, config, compiler, output
folder), so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, TextIO

from codesign.config import LEARNERS, load_config
from codesign.fpga.boards import Board, find_board
from codesign.fpga.csim import compile_csim, find_ap_types, find_compiler, run_csim
from codesign.fpga.hls_project import firmware_module, prepare_output, write_project
from codesign.fpga.report import build_report, format_report
from codesign.fpga.stimulus import make_stimulus, run_reference
from codesign.fpga.timing import expected_timing
from codesign.kan.spec import KANSpec, MLPSpec, spec_from_mapping
from codesign.tasks import task_options

__all__ = ["build", "load_build_spec", "default_output"]

MIN_SAMPLES = 1


class _Progress:
    """Numbered step lines with their wall time: ``[2/5] compiling ... 9.8 s``."""

    def __init__(self, total: int, stream: TextIO):
        self.total, self.index, self.stream = total, 0, stream
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, key: str, text: str) -> Iterator[None]:
        self.index += 1
        print(f"[{self.index}/{self.total}] {text} ...", end="", file=self.stream, flush=True)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            print(" failed", file=self.stream, flush=True)
            raise
        self.seconds[key] = time.perf_counter() - start
        print(f" {self.seconds[key]:.1f} s", file=self.stream, flush=True)


def _config_fields(config: str | Path | None) -> dict[str, Any]:
    """The spec fields a config file sets (top level, or under a [spec] table)."""
    if config is None:
        return {}
    data = load_config(config)
    data = data.get("spec", data)
    if not isinstance(data, dict):
        raise ValueError(f"config file {config}: the spec table must map field names to values")
    return data


def _name_bad_field(kind: str, fields: dict[str, Any], exc: Exception) -> str:
    """The spec's error, prefixed with the config field that causes it when the message does not name one."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if any(name in message for name in fields):
        return message
    for name, value in fields.items():
        try:
            spec_from_mapping(kind, {name: value})
        except (TypeError, ValueError) as single:
            return f"config field {name}={value!r}: {str(single).strip() or type(single).__name__}"
    return message


def load_build_spec(learner: str, config: str | Path | None, board: Board) -> KANSpec | MLPSpec:
    """The learner's built-in spec with the config's fields on top; the board's clock unless the config sets one."""
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    kind = LEARNERS[learner]
    fields = _config_fields(config)
    try:
        spec = spec_from_mapping(kind, fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(_name_bad_field(kind, fields, exc)) from None
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
    prepare_output(out_dir, learner, force)
    fw = firmware_module(spec)
    timing = expected_timing(spec)

    progress = _Progress(5, stream)
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
