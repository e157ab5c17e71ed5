"""Every register placement of the KAN RTL against the clock target: is `auto` the least latency that meets it?

    python benchmarks/pipeline_search.py [--clock 250] [--out docs/pipeline_search.md]

For the default spec (2-4-1, G = 8) and the 1-1 spec (G = 5, k = 3, ap_fixed<16,6>) on xcvu9p, all
placements PHASES:CUTS:SPLIT (every phase mask, every set of the 13 cut kinds, adder-tree split 0-3;
without the opt-in FORWARD bit) are scored by the analytic estimator (codesign.fpga.cost.period_ns,
the model `auto` chooses with) and pipeline_timing. Among those whose estimated period meets the
clock, the table lists the least prediction + update latency (update latency cycles x period) and
the placements that reach it, beside what `auto` chose. Estimates, not routed timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from codesign.fpga.boards import find_board
from codesign.fpga.cost import period_ns
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
    args = parser.parse_args()
    board = find_board("xcvu9p")
    target = 1000.0 / args.clock
    lines = [f"Command: `python benchmarks/pipeline_search.py --clock {args.clock:g}` (xcvu9p, analytic ESTIMATE)", "",
             "| spec | placements searched | meeting the clock | least pred. + update | cycles | II | est. clock (MHz) "
             "| placements at the least | auto's choice | auto's pred. + update |", "|---|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    notes = []
    for name, (spec, target_ns) in SPECS.items():
        spec = dataclasses.replace(spec, clock_mhz=args.clock)
        start = time.perf_counter()
        meeting, searched = [], 0
        bits = list(CUT_BITS.values())
        cut_sets = [sum(1 << b for k, b in enumerate(bits) if m >> k & 1) for m in range(1 << len(bits))]
        for phases in range(1 << (2 * len(spec.layer_shapes) - 1)):
            for cuts in cut_sets:
                for split in range(4):
                    pipe = Pipeline(phases, cuts, split)
                    searched += 1
                    period = period_ns(spec, pipe, board)
                    if period <= target + 1e-9:
                        timing = pipeline_timing(spec, pipe)
                        meeting.append((period * timing["update_latency_cycles"], timing, period, pipe.text))
        meeting.sort(key=lambda m: m[0])
        auto = choose_pipeline(spec, board).placement
        auto_ns = period_ns(spec, auto, board) * pipeline_timing(spec, auto)["update_latency_cycles"]
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
    lines += ["", *notes, "", "A latency target that no placement reaches needs a loop with fewer, fuller stages (new RTL), not "
              "another placement of these registers."]
    text = "# Register placements of the KAN RTL, searched exhaustively\n\n" + "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
