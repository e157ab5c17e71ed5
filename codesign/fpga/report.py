"""The build report: ``report.json`` in the output folder and a readable summary for the terminal."""

from __future__ import annotations

from pathlib import Path

from codesign import __version__
from codesign.fpga.boards import Board
from codesign.fpga.csim import CsimResult
from codesign.fpga.estimate import format_sharing
from codesign.fpga.sections import BuildReport, StreamSection
from codesign.fpga.stimulus import Reference, Stimulus
from codesign.fpga.timing import Timing, TimingBasis
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["build_report", "format_report", "format_boards"]

_SCHEDULE_WORDS = {TimingBasis.RTL_SCHEDULE: "the RTL pipeline", TimingBasis.ANALYTIC: "analytic count"}


def build_report(
    learner: str, target: str, board: Board, spec: KANSpec | MLPSpec, stimulus: Stimulus,
    reference: Reference, csim: CsimResult, timing: Timing, out: Path, steps: dict[str, float],
) -> BuildReport:
    """What a build established once it C-simulated: the sections that later steps add are still empty."""
    return BuildReport(
        generator=f"codesign {__version__}", learner=learner, target=target, board=board.board or None, part=board.part,
        family=board.series, device_resources=board.to_dict()["resources"], clock_mhz=spec.clock_mhz,
        spec=spec.to_dict(), parameters=spec.num_parameters, stream=StreamSection.of(stimulus), csim=csim,
        reference_seconds=round(reference.seconds, 3), timing=timing, output=str(out),
        step_seconds={k: round(v, 3) for k, v in steps.items()},
    )


def format_report(report: dict) -> str:
    """report.json's data (BuildReport.to_dict, or the file read back) as a few aligned lines for the terminal."""
    spec = report["spec"]
    types = ", ".join(f"{k} {v}" for k, v in spec.items() if k.endswith("_t"))
    fields = ", ".join(f"{k} {tuple(v) if isinstance(v, list) else v}" for k, v in spec.items() if not k.endswith("_t"))
    c, s = report["csim"], report["stream"]
    verdict = "bit-exact" if c["bit_exact"] else "NOT bit-exact"
    board = f" ({report['board']})" if report["board"] else ""
    lines = [
        f"{report['learner']} for {report['target']}{board}: part {report['part']}, {report['clock_mhz']:g} MHz",
        f"  spec        {fields}",
        f"  types       {types}",
        f"  parameters  {report['parameters']:,}",
        f"  C-sim       {c['samples']:,} samples ({s['task_samples']:,} of {s['task']} + {s['corner_samples']} corner): "
        f"{verdict}, {c['prediction_mismatches']} prediction and {c['state_mismatches']} of "
        f"{c['state_values']:,} final-state mismatches ({c['seconds']:.2f} s)",
        f"  timing      expected latency {report['latency_cycles_expected']} cycles "
        f"({report['latency_ns_expected']:g} ns), prediction after {report['prediction_latency_cycles_expected']}; "
        f"II target {report['ii_target']}, expected {report['ii_expected']} "
        f"(HLS schedule: {_SCHEDULE_WORDS[TimingBasis(report['timing']['basis_kind'])]})",
        f"  project     {report['output']}  (run: vitis_hls -f build_prj.tcl)",
    ]
    if "rtl" in report:
        p = report["rtl"]["pipeline"]
        lines.append(f"  RTL         {report['rtl']['folder']}: {report['rtl']['top']}, pipeline {p.get('choice', p['mask'])} "
                     f"({p.get('text', p['mask'])}), II {p['ii']}, prediction after {p['prediction_latency_cycles']} and "
                     f"update after {p['update_latency_cycles']} cycles (expected)")
        if "clock_mhz_estimate" in p:
            lines.append(f"  clock       target {p['clock_mhz']:g} MHz, ~{p['clock_mhz_estimate']:g} MHz estimated: prediction "
                         f"~{p['prediction_latency_ns']:g} ns, prediction + update ~{p['update_latency_ns']:g} ns, "
                         f"{p['ii_ns']:g} ns per sample{_estimate_verdict(p, 'pnr' in report)}")
    if "estimate" in report:
        e = report["estimate"]
        lines.append(f"  analytic    {e['lut']:,} LUT, {e['lutram']:,} LUTRAM, {e['ff']:,} FF, {e['dsp']:,} DSP, "
                     f"{e.get('bram', 0):g} BRAM, ~{e['clock_mhz_estimate']:g} MHz, prediction + update ~{e['latency_ns']:g} ns "
                     "(analytic model, instant; --synth runs Yosys)")
        if e.get("sharing"):
            lines.append(format_sharing(e))
    if "cosim" in report:
        from codesign.fpga.cosim import format_cosim  # noqa: PLC0415 - the sim extra is optional

        lines.append(format_cosim(report["cosim"]))
    if "synth" in report:
        from codesign.fpga.synth import format_synth  # noqa: PLC0415

        lines.append(format_synth(report["synth"]))
    if "pnr" in report:
        from codesign.fpga.pnr import format_pnr  # noqa: PLC0415

        lines.append(format_pnr(report["pnr"]))
    return "\n".join(lines)


def _estimate_verdict(pipeline: dict, routed: bool) -> str:
    """What the estimates say of the clock target; with a routed design, only that they are estimates (its line decides)."""
    if routed:
        return " (estimates; the routed result is below)"
    return "" if pipeline.get("clock_met", True) else " (target NOT met by the estimate)"


def format_boards(boards: dict[str, Board]) -> str:
    """The board files as a table for `codesign boards`."""
    w_name = max([len("target")] + [len(b.name) for b in boards.values()])
    w_board = max([len("board")] + [len(b.board or "-") for b in boards.values()])
    w_part = max([len("part")] + [len(b.part) for b in boards.values()])
    head = (f"{'target':{w_name}s} {'board':{w_board}s} {'part':{w_part}s} {'LUT':>10s} {'FF':>10s} {'DSP':>7s} "
            f"{'BRAM36':>7s} {'URAM':>6s} {'clock':>8s}")
    rows = [head]
    for b in boards.values():
        rows.append(
            f"{b.name:{w_name}s} {b.board or '-':{w_board}s} {b.part:{w_part}s} {b.lut:>10,} {b.ff:>10,} {b.dsp:>7,} "
            f"{b.bram_36k:>7,} {b.uram:>6,} {b.clock_mhz:>4g} MHz"
        )
    return "\n".join(rows)
