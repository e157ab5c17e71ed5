"""Throughput of the bit-exact reference learners (samples per second) on a 100,000-sample stream.

    python benchmarks/reference_speed.py            # prints a table; --out FILE also writes it as markdown
    PYTHONPATH=OTHER_TREE python benchmarks/reference_speed.py --repeat 5   # the same runs on another checkout

The first call of each kernel compiles it (numba, cached on disk); the timed runs come after it. With
--repeat N each learner runs N times and the table gives the best wall time and the best CPU time of
the process (time.process_time): on a shared machine the CPU time is the steadier of the two, and
the best of N the least disturbed. The table's header names the codesign checkout it ran, so an A/B
of two commits is this script run alternately with PYTHONPATH set to each.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import codesign
from codesign.kan.run import fit_widths, make_learner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import make_stream


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--task", default="function_tracking")
    ap.add_argument("--repeat", type=int, default=1, help="runs per learner; the best time is reported")
    ap.add_argument("--out", type=Path, help="write the table as markdown here")
    args = ap.parse_args(argv)
    stream = make_stream(args.task, n_samples=args.samples, seed=0)
    lines = [
        "| learner | widths | parameters | samples | seconds | CPU seconds | samples/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for spec in (KANSpec(), KANSpec(widths=(2, 8, 8, 1), grid_size=16), MLPSpec(widths=(2, 33, 1))):
        spec = fit_widths(spec, stream.n_inputs, stream.n_outputs)
        make_learner(spec).run(stream.x[:10], stream.y[:10])  # compile (or load the cached kernel)
        dt = cpu = float("inf")
        for _ in range(args.repeat):
            learner = make_learner(spec)
            start, cpu_start = time.perf_counter(), time.process_time()
            learner.run(stream.x, stream.y)
            dt, cpu = min(dt, time.perf_counter() - start), min(cpu, time.process_time() - cpu_start)
        kind = "KAN" if isinstance(spec, KANSpec) else "MLP"
        extra = f" G={spec.grid_size} k={spec.spline_order}" if kind == "KAN" else ""
        lines.append(f"| {kind}{extra} | {spec.widths} | {spec.num_parameters} | {len(stream):,} | {dt:.3f} | {cpu:.3f} "
                     f"| {len(stream) / dt:,.0f} |")
    header = (
        f"Measured by `python benchmarks/reference_speed.py` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; task `{args.task}`, predict-then-update with training "
        f"on every sample; best of {args.repeat} run(s); codesign from `{Path(codesign.__file__).parent.parent}`."
    )
    text = header + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
