"""The sections of a build's report.json, each a frozen value made once by the step that establishes it.

A build holds a :class:`BuildReport` and replaces a section when a later step knows more (the
synthesis' clock, the routed attempt that won); ``to_dict`` renders the whole for report.json, and
codesign.fpga.report.format_report renders that for the terminal.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from codesign.fpga.csim import CsimResult
from codesign.fpga.fit import FitVerdict
from codesign.fpga.timing import Timing

if TYPE_CHECKING:  # the tools' own modules: optional extras, imported by the steps that run them
    from codesign.fpga.estimate import AnalyticEstimate
    from codesign.fpga.placement import PipelineChoice
    from codesign.fpga.pnr import PnrResult
    from codesign.fpga.stimulus import Stimulus
    from codesign.fpga.synth import SynthResult
    from codesign.kan.initial_state import InitialState

__all__ = ["StreamSection", "InitSection", "ClockVerdict", "RtlSection", "CosimSection", "PnrAttempt", "PnrSection",
           "BuildReport"]


def _without_none(data: dict[str, Any], optional: tuple[str, ...]) -> dict[str, Any]:
    """``data`` less the optional keys whose value is None (report.json leaves out what a build did not establish)."""
    return {k: v for k, v in data.items() if v is not None or k not in optional}


@dataclass(frozen=True)
class StreamSection:
    """The stream the C-simulation and co-simulation ran: a task's samples or a user's file, plus the corner samples."""

    task: str
    seed: int
    task_samples: int
    corner_samples: int
    samples: int
    data: dict[str, Any] | None = None  # the user's file: path and sha256

    @classmethod
    def of(cls, stimulus: Stimulus) -> StreamSection:
        """The section of a stimulus."""
        return cls(task=stimulus.task, seed=stimulus.seed, task_samples=stimulus.task_samples,
                   corner_samples=stimulus.corner_samples, samples=stimulus.samples, data=stimulus.data)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return _without_none(asdict(self), ("data",))


@dataclass(frozen=True)
class InitSection:
    """The initial model of ``--init``: its file, what was clipped, and how far the fixed-point start is from the float one."""

    file: str
    sha256: str
    coefficients: int
    saturated: int
    grid: str
    rule: str
    float_vs_fixed: dict[str, Any]

    @classmethod
    def of(cls, initial: InitialState, float_vs_fixed: dict[str, Any]) -> InitSection:
        """The section of a loaded initial state and its measured float-vs-fixed error."""
        return cls(**initial.summary(), float_vs_fixed=float_vs_fixed)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return asdict(self)


@dataclass(frozen=True)
class ClockVerdict:
    """The chosen pipeline's clock: the target, the estimates, and whether it is met (and if not, the line that says why)."""

    choice: str
    clock_mhz: float
    clock_mhz_estimate: float  # the analytic estimate
    clock_met: bool
    prediction_latency_ns: float
    update_latency_ns: float
    ii_ns: float
    clock_basis: str
    clock_note: str | None = None
    clock_mhz_synth_estimate: float | None = None  # Yosys's logic-depth estimate, once synthesized

    @classmethod
    def of(cls, estimate: AnalyticEstimate, choice: PipelineChoice) -> ClockVerdict:
        """The verdict of the analytic estimate of a pipeline choice (what the RTL manifest records)."""
        return cls(choice=choice.request, clock_mhz=estimate.clock_mhz, clock_mhz_estimate=estimate.clock_mhz_estimate,
                   clock_met=estimate.clock_met, prediction_latency_ns=estimate.prediction_latency_ns,
                   update_latency_ns=estimate.latency_ns, ii_ns=estimate.ii_ns,
                   clock_basis="analytic estimate (codesign.fpga.estimate); --synth adds the Yosys-netlist estimate",
                   clock_note=None if choice.clock_met else choice.note)

    def with_synthesis(self, synth_mhz: float, text: str, hint: str) -> ClockVerdict:
        """The verdict once Yosys estimated the clock: a miss the analytic model did not see becomes the note."""
        verdict = dataclasses.replace(self, clock_mhz_synth_estimate=synth_mhz)
        if synth_mhz >= self.clock_mhz or not self.clock_met:
            return verdict
        return dataclasses.replace(
            verdict, clock_met=False,
            clock_note=(f"clock target {self.clock_mhz:g} MHz not met by the Yosys-netlist estimate: {synth_mhz:g} MHz "
                        f"(analytic {self.clock_mhz_estimate:g} MHz, pipeline {text}); {hint}"))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json and the RTL manifest."""
        return _without_none(asdict(self), ("clock_note", "clock_mhz_synth_estimate"))


@dataclass(frozen=True)
class RtlSection:
    """The emitted RTL: its folder and top, the manifest's pipeline record, and the clock verdict on it."""

    folder: str
    top: str
    record: dict[str, Any]  # the manifest's pipeline: placement, stages, cycles (and the clock fields it was emitted with)
    clock: ClockVerdict  # what the build knows now; it supersedes the clock fields recorded at emission

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return {"folder": self.folder, "top": self.top, "pipeline": {**self.record, **self.clock.to_dict()}}


@dataclass(frozen=True)
class CosimSection:
    """A co-simulation's verdict: the measured fields first, then the checks behind them."""

    samples: int | None
    bit_exact: bool | None
    latency_cycles: int | None
    update_latency_cycles: int | None
    ii: int | None
    passed: bool | None = None
    predictions_checked: int | None = None
    prediction_mismatches: int | None = None
    state_values: int | None = None
    state_mismatches: int | None = None
    resets: int | None = None
    dropped_samples: int | None = None
    failures: list[Any] | None = None
    expected: dict[str, Any] | None = None
    simulator: str | None = None
    build_seconds: float | None = None
    build_cached: bool | None = None
    seconds: float | None = None
    log: str | None = None

    @classmethod
    def of(cls, result: dict[str, Any]) -> CosimSection:
        """The section of codesign.fpga.cosim.run_cosim's result (the bench's record, read at its edge)."""
        names = [f.name for f in dataclasses.fields(cls)]
        return cls(**{k: result.get(k) for k in names})

    @property
    def cycles(self) -> dict[str, int]:
        """The measured cycles (those the bench gave), which synthesis and routing turn into ns."""
        measured = {"latency_cycles": self.latency_cycles, "update_latency_cycles": self.update_latency_cycles, "ii": self.ii}
        return {k: v for k, v in measured.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json: the five measured fields always, the others where the bench gave them."""
        return _without_none(asdict(self), tuple(f.name for f in dataclasses.fields(self))[5:])


@dataclass(frozen=True)
class PnrAttempt:
    """One routed placement: the placement, its estimated and routed clocks, and the critical path's ends."""

    attempt: int
    choice: str
    placement: str
    clock_mhz_analytic: float
    clock_mhz_synth_estimate: float
    fmax_mhz: float
    meets_target: bool
    critical_path: dict[str, Any]
    log: str

    @classmethod
    def of(cls, index: int, choice: PipelineChoice, synth: SynthResult, routed: PnrResult) -> PnrAttempt:
        """The record of routing a choice that Yosys synthesized."""
        path = routed.critical_path
        return cls(attempt=index, choice=choice.request, placement=choice.placement.text,
                   clock_mhz_analytic=round(1000.0 / choice.period_ns, 1), clock_mhz_synth_estimate=synth.clock_mhz_estimate,
                   fmax_mhz=routed.fmax_mhz, meets_target=routed.meets_target,
                   critical_path={k: path[k] for k in ("start", "end", "path_ns", "logic_ns", "routing_ns") if k in path},
                   log=routed.log)


@dataclass(frozen=True)
class PnrSection:
    """Place and route: the routed design that stands (the best attempt) and every attempt."""

    routed: PnrResult
    attempts: tuple[PnrAttempt, ...]
    best_attempt: int | None = None  # 1-based; set once the attempts are over
    clock_met: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return _without_none({**self.routed.to_dict(), "attempts": [asdict(a) for a in self.attempts],
                              "best_attempt": self.best_attempt, "clock_met": self.clock_met},
                             ("best_attempt", "clock_met"))


@dataclass(frozen=True)
class BuildReport:
    """Everything a build established; report.json is its ``to_dict``."""

    generator: str
    learner: str
    target: str
    board: str | None
    part: str
    family: str
    device_resources: dict[str, int]
    clock_mhz: float
    spec: dict[str, Any]
    parameters: int
    stream: StreamSection
    csim: CsimResult
    reference_seconds: float
    timing: Timing
    output: str
    step_seconds: dict[str, float] = field(default_factory=dict)
    estimate: AnalyticEstimate | None = None
    init: InitSection | None = None
    rtl: RtlSection | None = None
    fit: FitVerdict | None = None
    cosim: CosimSection | None = None
    synth: SynthResult | None = None
    pnr: PnrSection | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for report.json: the header, the stream and C-simulation, the expected timing, then each section."""
        t = self.timing.to_dict(self.clock_mhz)
        out: dict[str, Any] = {
            "generator": self.generator, "learner": self.learner, "target": self.target, "board": self.board,
            "part": self.part, "family": self.family, "device_resources": self.device_resources,
            "clock_mhz": self.clock_mhz, "spec": self.spec, "parameters": self.parameters,
            "stream": self.stream.to_dict(), "csim": self.csim.to_dict(), "reference_seconds": self.reference_seconds,
            **{k: t[k] for k in ("latency_cycles_expected", "prediction_latency_cycles_expected", "latency_ns_expected",
                                 "ii_target", "ii_expected")},
            "timing": t, "output": self.output, "step_seconds": dict(self.step_seconds),
        }
        sections = {"estimate": self.estimate, "init": self.init, "rtl": self.rtl, "fit": self.fit, "cosim": self.cosim,
                    "synth": self.synth, "pnr": self.pnr}
        out.update({name: section.to_dict() for name, section in sections.items() if section is not None})
        return out
