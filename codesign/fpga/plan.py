"""A build resolved once: :class:`BuildPlan`, the frozen value every step of ``codesign build`` receives.

:func:`make_plan` takes what the command line gives (names, paths, numbers) and resolves each
decision once, at the edge: the board from ``--target``, the spec from the learner, config or
data file, the pipeline by one search (:func:`~codesign.fpga.search.choose_pipeline`), the
initial state, the stream. A bad value is refused here, before anything is written; below this
module nothing parses a name or searches again.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codesign.config import LEARNERS, load_config_spec
from codesign.fpga.boards import Board, find_board
from codesign.fpga.placement import Pipeline, PipelineChoice
from codesign.fpga.pnr import check_pnr_target
from codesign.fpga.routers import Router
from codesign.fpga.search import choose_pipeline
from codesign.kan.data_run import data_spec
from codesign.kan.kinds import kind_of
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import DataStream, check_stream_size, task_options

if TYPE_CHECKING:
    from codesign.kan.initial_state import InitialState

__all__ = ["BuildPlan", "make_plan", "load_build_spec", "MIN_SAMPLES"]

MIN_SAMPLES = 1


@dataclass(frozen=True)
class BuildPlan:
    """What one build makes, every decision resolved: learner, board, spec, pipeline, stream and steps."""

    learner: str
    target: str  # the --target as given (the report names it)
    board: Board
    spec: KANSpec | MLPSpec
    choice: PipelineChoice
    samples: int
    task: str
    seed: int
    data: DataStream | None = None  # a user's stream instead of `samples` of `task`
    initial: InitialState | None = None  # --init: the learner starts from these coefficients
    cosim: bool = False
    synth: bool = False
    pnr: bool = False
    strict: bool = False
    router: Router | None = None  # with pnr: the board's place-and-route flow

    @property
    def steps(self) -> int:
        """Progress steps: reference, render, rtl, compile, csim, report, and one per tool run."""
        return 6 + self.cosim + self.synth + self.pnr


def load_build_spec(learner: str, config: str | Path | None, board: Board) -> KANSpec | MLPSpec:
    """The learner's built-in spec with the config's fields on top; the board's clock unless the config sets one."""
    return load_config_spec(learner, config, board.clock_mhz)[0]


def make_plan(
    learner: str,
    target: str = "xcvu9p",
    config: str | Path | None = None,
    samples: int = 10_000,
    task: str = "function_tracking",
    seed: int = 0,
    cosim: bool = False,
    synth: bool = False,
    pipeline: str | int | Pipeline = "auto",
    strict: bool = False,
    pnr: bool = False,
    init: str | Path | None = None,
    data: DataStream | None = None,
) -> BuildPlan:
    """Resolve a build request into a :class:`BuildPlan`; a bad value is one ValueError line, before anything is written."""
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    board = find_board(target)
    if data is not None:
        spec = data_spec(learner, config, data, board.clock_mhz)[0]
        samples = len(data)
    else:
        spec = load_build_spec(learner, config, board)
    if samples < MIN_SAMPLES:
        raise ValueError(f"--samples={samples}: need at least {MIN_SAMPLES} sample")
    if seed < 0:
        raise ValueError(f"--seed={seed}: must be >= 0")
    initial = None
    if init is not None:
        if not kind_of(spec).takes_initial_coefficients:
            raise ValueError(f"--init: {learner} has no B-spline coefficients to start from (--init is for kan_online)")
        from codesign.kan.initial_state import load_initial_state  # noqa: PLC0415 (torch)

        assert isinstance(spec, KANSpec)  # the only kind that takes initial coefficients
        initial = load_initial_state(init, spec, strict=strict)  # a bad file is refused here, before anything is written
        for line in initial.warnings(spec):
            print(f"codesign: warning: {line} (--strict makes this an error)", file=sys.stderr)
    if data is None:
        task_options(task)  # an unknown task is refused here, before anything is written
        check_stream_size(task, samples)
    choice = choose_pipeline(spec, board, pipeline)  # a bad pipeline is refused here; auto is resolved once
    router = check_pnr_target(board) if pnr else None  # a family without an open router is refused here
    return BuildPlan(learner=learner, target=target, board=board, spec=spec, choice=choice, samples=samples, task=task,
                     seed=seed, data=data, initial=initial, cosim=cosim, synth=synth or pnr, pnr=pnr, strict=strict,
                     router=router)
