"""Throughput of the bit-exact reference learners (samples per second) on a 100,000-sample stream.

    python benchmarks/reference_speed.py            # prints a table; --out FILE also writes it as markdown

The first call of each kernel compiles it (numba, cached on disk); the timed run is the second.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

from codesign.kan.run import fit_widths, make_learner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import make_stream


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--task", default="function_tracking")
    ap.add_argument("--out", type=Path, help="write the table as markdown here")
    args = ap.parse_args(argv)
    stream = make_stream(args.task, n_samples=args.samples, seed=0)
    lines = [
        "| learner | widths | parameters | samples | seconds | samples/s |",
        "|---|---|---|---|---|---|",
    ]
    for spec in (KANSpec(), KANSpec(widths=(2, 8, 8, 1), grid_size=16), MLPSpec(widths=(2, 33, 1))):
        spec = fit_widths(spec, stream.n_inputs, stream.n_outputs)
        make_learner(spec).run(stream.x[:10], stream.y[:10])  # compile (or load the cached kernel)
        learner = make_learner(spec)
        start = time.perf_counter()
        learner.run(stream.x, stream.y)
        dt = time.perf_counter() - start
        kind = "KAN" if isinstance(spec, KANSpec) else "MLP"
        extra = f" G={spec.grid_size} k={spec.spline_order}" if kind == "KAN" else ""
        lines.append(f"| {kind}{extra} | {spec.widths} | {spec.num_parameters} | {len(stream):,} | {dt:.3f} | {len(stream) / dt:,.0f} |")
    header = (
        f"Measured by `python benchmarks/reference_speed.py` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; task `{args.task}`, predict-then-update with training "
        "on every sample."
    )
    text = header + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
