"""Every register placement of the KAN RTL against the clock target: is `auto` the least latency that meets it?

    python benchmarks/pipeline_search.py [--clock 250] [--out docs/pipeline_search.md]
    python benchmarks/pipeline_search.py --below 2 --synth --out docs/pipeline_search.md   # + 3 Yosys runs

For the default spec (2-4-1, G = 8) and the 1-1 spec (G = 5, k = 3, ap_fixed<16,6>) on xcvu9p, all
placements PHASES:CUTS:SPLIT (every phase mask, every set of the cut kinds that build a register for
the spec, adder-tree split 0-3; without the opt-in FORWARD bit) are scored by the analytic estimator (codesign.fpga.cost.period_ns,
the model `auto` chooses with) and pipeline_timing. Among those whose estimated period meets the
clock, the table lists the least prediction + update latency (update latency cycles x period) and
the placements that reach it, beside what `auto` chose. Estimates, not routed timing.

Where a spec's latency target needs fewer cycles than any placement that meets the clock, ``--below N`` lists,
for each of the N cycle counts under that fewest (and the fewest itself), the placement the estimator
clocks fastest and the operations on its slowest stage; with ``--synth`` each of those placements is built
and synthesized by Yosys (``codesign build ... --pipeline P --synth``), and its logic-depth clock and the
cells on its critical path are listed beside the estimate.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
import tempfile
import time
from pathlib import Path

from clock_error_bars import ROUTED_LINK, analytic_clock_error, yosys_clock_error

from codesign.fpga.boards import find_board
from codesign.fpga.build import build
from codesign.fpga.cost import period_ns
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.kinds import fpga_kind
from codesign.fpga.pipeline import pipeline_timing
from codesign.fpga.placement import CUT_BITS, Pipeline
from codesign.fpga.search import choose_pipeline
from codesign.kan.spec import KANSpec

# spec, and its prediction + update target (ns) in docs/rtl_results.md
SPECS = {"default 2-4-1 G=8": (KANSpec(), 60.0), "1-1 G=5 k=3": (KANSpec(widths=(1, 1), grid_size=5, spline_order=3), 25.0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clock", type=float, default=250.0, help="target clock, MHz")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--below", type=int, default=0, help="also the fastest placement at each of N cycle counts "
                        "under the fewest that meets the clock")
    parser.add_argument("--synth", action="store_true", help="Yosys synthesis of those placements (needs --below)")
    args = parser.parse_args()
    if args.synth and not args.below:
        parser.error("--synth needs --below N")
    board = find_board("xcvu9p")
    target = 1000.0 / args.clock
    flags = f" --below {args.below}" * bool(args.below) + " --synth" * args.synth
    lines = [f"Command: `python benchmarks/pipeline_search.py --clock {args.clock:g}{flags}` (xcvu9p, analytic ESTIMATE"
             f"{'; Yosys where named' if args.synth else ''})", "",
             "The *est.* clock columns are the analytic estimate, the *Yosys* ones the Yosys logic-depth estimate. "
             f"Error bars: {analytic_clock_error()}; {yosys_clock_error()} ({ROUTED_LINK}).", "",
             "| spec | placements searched | meeting the clock | least pred. + update | cycles | II | est. clock (MHz) "
             "| placements at the least | auto's choice | auto's pred. + update |", "|---|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    notes = []
    below: list[tuple[str, KANSpec, list[int], dict[int, tuple[float, Pipeline]]]] = []
    for name, (spec, target_ns) in SPECS.items():
        spec = dataclasses.replace(spec, clock_mhz=args.clock)
        start = time.perf_counter()
        meeting, searched = [], 0
        fastest: dict[int, tuple[float, Pipeline]] = {}  # update cycles -> the fastest placement with as many
        idle = fpga_kind(spec).idle_cuts(spec)  # bits that build nothing for this spec (bram_out behind LUTRAM)
        bits = [b for b in CUT_BITS.values() if not idle >> b & 1]
        cut_sets = [sum(1 << b for k, b in enumerate(bits) if m >> k & 1) for m in range(1 << len(bits))]
        for phases in range(1 << (2 * len(spec.layer_shapes) - 1)):
            for cuts in cut_sets:
                for split in range(4):
                    pipe = Pipeline(phases, cuts, split)
                    searched += 1
                    period = period_ns(spec, pipe, board)
                    timing = pipeline_timing(spec, pipe)
                    cycles = timing["update_latency_cycles"]
                    if period < fastest.get(cycles, (float("inf"),))[0]:
                        fastest[cycles] = (period, pipe)
                    if period <= target + 1e-9:
                        meeting.append((period * cycles, timing, period, pipe.text))
        meeting.sort(key=lambda m: m[0])
        auto = choose_pipeline(spec, board).placement
        auto_cycles = pipeline_timing(spec, auto)["update_latency_cycles"]
        auto_ns = period_ns(spec, auto, board) * auto_cycles
        if auto_ns <= fastest[auto_cycles][0] * auto_cycles * 1.0001:  # of equals, the placement a build would use
            fastest[auto_cycles] = (auto_ns / auto_cycles, auto)
        if meeting:
            best_ns, timing, period, _ = meeting[0]
            at_best = [m[3] for m in meeting if m[0] <= best_ns * 1.0001]
            lines.append(f"| {name} | {searched:,} | {len(meeting):,} | {best_ns:.1f} ns | {timing['update_latency_cycles']} "
                         f"| {timing['ii']} | {1000 / period:.1f} | {', '.join(at_best[:6])}"
                         f"{' …' if len(at_best) > 6 else ''} ({len(at_best)}) | {auto.text} | {auto_ns:.1f} ns |")
        else:
            lines.append(f"| {name} | {searched:,} | 0 | — | — | — | — | — | {auto.text} | {auto_ns:.1f} ns |")
        print(lines[-1], f"({time.perf_counter() - start:.0f} s)", flush=True)
        fewest = min((m[1]["update_latency_cycles"] for m in meeting), default=None)
        notes.append(f"- {name}: prediction + update <= {target_ns:g} ns at >= {args.clock:g} MHz needs at most "
                     f"{int(target_ns // target)} cycles; the fewest of any placement that meets the clock is {fewest} "
                     f"({'met' if meeting and meeting[0][0] <= target_ns else 'missed'}). auto's choice is "
                     f"{'the least latency' if meeting and auto_ns <= meeting[0][0] * 1.0001 else 'not the least latency'}.")
        if args.below and fewest is not None and meeting[0][0] > target_ns:  # only where the latency target is missed
            below.append((name, spec, [c for c in range(fewest - args.below, fewest + 1) if c in fastest], fastest))
    lines += ["", *notes, "", "A latency target that no placement reaches needs a loop with fewer, fuller stages (new RTL), not "
              "another placement of these registers."]
    if below:
        lines += ["", *fewer_cycles(below, board, args.clock, args.synth)]
    text = "# Register placements of the KAN RTL, searched exhaustively\n\n" + "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


def slowest_stage(spec: KANSpec, pipe: Pipeline) -> str:
    """The operations on the estimator's slowest register-to-register path of a placement, e.g. 'memory + multiply'."""
    coefficients = COEFFICIENTS["period_ns"]
    ends = fpga_kind(spec).stage_features(spec, pipe, coefficients)
    worst = max(ends, key=lambda e: sum(coefficients.get(k, 0.0) * v for k, v in e.items()))
    return " + ".join(f"{v:g} x {k.removeprefix('kan_')}" if v != 1 else k.removeprefix("kan_")
                      for k, v in worst.items() if v)


def _synthesized(spec: KANSpec, pipe: Pipeline, clock: float, work: Path) -> dict:
    """Yosys' synthesis report of a placement of ``spec``, built by codesign build --synth."""
    a, c = spec.act_t, spec.coef_t
    config = work / f"{pipe.text.replace(':', '_')}.toml"
    config.write_text(f"[spec]\nwidths = {list(spec.widths)}\ngrid_size = {spec.grid_size}\nspline_order = "
                      f"{spec.spline_order}\nact_t = \"{a}\"\ncoef_t = \"{c}\"\nclock_mhz = {clock}\n")
    report = build("kan_online", "xcvu9p", config=config, out=work / config.stem, samples=200, synth=True,
                   pipeline=pipe, stream=io.StringIO())
    return report["synth"]


def fewer_cycles(below: list, board: object, clock: float, synth: bool) -> list[str]:
    """The table of the fastest placement at each cycle count under the fewest that meets the clock."""
    lines = [f"### Fewer cycles than the clock allows (`--below`{' --synth' if synth else ''})", "",
             "For each update-cycle count: the placement the estimator clocks fastest, the operations on its slowest "
             "stage" + (", and Yosys' logic-depth clock and critical path of the same RTL" if synth else "") + ".", "",
             "| spec | cycles | fastest placement | est. clock (MHz) | est. pred. + update | slowest stage (estimator)"
             + (" | Yosys clock (MHz) | Yosys pred. + update | Yosys critical path |" if synth else " |"),
             "|---|---:|---|---:|---:|---" + ("|---:|---:|---|" if synth else "|")]
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec, counts, fastest in below:
            seen: dict[int, tuple[float, Pipeline, dict | None]] = {}
            for cycles in counts:
                period, pipe = fastest[cycles]
                row = (f"| {name} | {cycles} | {pipe.text} | {1000 / period:.1f} | {period * cycles:.1f} ns | "
                       f"{slowest_stage(spec, pipe)} |")
                if synth:
                    start = time.perf_counter()
                    result = _synthesized(spec, pipe, clock, Path(tmp))
                    path = result["critical_path"]
                    cells = ", ".join(f"{n} {k}" for k, n in sorted(path["levels"].items()))
                    row += (f" {result['clock_mhz_estimate']:.1f} | {result['latency_ns']:.1f} ns | {path['path_ns']:.2f} ns:"
                            f" {cells} |")
                    print(row, f"({time.perf_counter() - start:.0f} s)", flush=True)
                lines.append(row)
                seen[cycles] = (period, pipe, result if synth else None)
            fewest = counts[-1]
            faster = [c for c in counts[:-1] if 1000 / seen[c][0] >= clock
                      or (seen[c][2] is not None and seen[c][2]["clock_mhz_estimate"] >= clock)]
            closest = seen[counts[-2]] if len(counts) > 1 else None
            if closest and not faster:
                period, pipe, result = closest
                found = (f"; Yosys {result['clock_mhz_estimate']:.1f} MHz, critical path {result['critical_path']['path_ns']:.2f} ns"
                         if result else "")
                lines += ["", f"- {name} ({spec.act_t}): no placement of fewer than {fewest} cycles meets {clock:g} MHz"
                          f"{' in the estimate or in Yosys' if synth else ' in the estimate'}. At {counts[-2]} cycles the "
                          f"fastest ({pipe.text}) is limited by {slowest_stage(spec, pipe)} ({1000 / period:.1f} MHz "
                          f"estimated{found})."]
    return lines


if __name__ == "__main__":
    sys.exit(main())
