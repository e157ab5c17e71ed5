"""The online KAN head behind a QKeras-API Keras 3 backbone on the drifting qubit-readout stream, in hls4ml's C-simulation.

The example of examples/hls4ml_keras_head.py (codesign.examples.hls4ml_keras_head), over several seeds: per
seed the backbone is trained offline in Keras (torch backend) and the head offline on the first 2,000
samples; then the whole model, converted by hls4ml's Keras 3 frontend and compiled, runs the rest of the
stream twice, the head learning online (on) and only predicting (frozen). The online accuracy over the first
and the last 2,000 online samples (before and after the drift), mean and standard deviation over the seeds;
every run is checked integer for integer (backbone against Keras, head against the Python reference).
Rewrites the marked section of docs/integration.md.

    python benchmarks/keras_head.py [--seeds 5] [--samples 8000] [--backend Vitis] [--no-doc]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from doc_sections import write_sections

from codesign.examples.hls4ml_keras_head import CALIBRATION, SPEC, WINDOW, Run, pretrained_head, run, stream, trained_backbone

DOC = Path(__file__).resolve().parent.parent / "docs" / "integration.md"


def measure(seeds: int, samples: int, backend: str, folder: Path) -> list[Run]:
    """Both runs (head on, frozen) of every seed; one line per run as it finishes."""
    runs = []
    for seed in range(seeds):
        start = time.perf_counter()
        data = stream(seed, samples)
        backbone = trained_backbone(data, seed)
        coefficients = pretrained_head(backbone, data, seed)
        for train in (True, False):
            runs.append(run(seed, samples, train, folder / f"s{seed}_{train}", backend, backbone, coefficients))
            r = runs[-1]
            print(f"seed {seed} head {'on' if train else 'frozen'}: {r.before:.3f} -> {r.after:.3f} "
                  f"(drift {r.drift_deg:+.0f} deg), {r.mismatches} mismatches, {time.perf_counter() - start:.0f} s", flush=True)
    return runs


def table(runs: list[Run]) -> list[str]:
    """The tables: accuracy before and after the drift, head on and frozen, mean ± std over the seeds; then per seed."""
    rows = ["| head | seeds | accuracy before the drift | accuracy after the drift | mismatches (all runs) |",
            "|---|---|---|---|---|"]
    for train in (True, False):
        sel = [r for r in runs if r.train == train]
        before, after = (np.array([getattr(r, k) for r in sel]) for k in ("before", "after"))
        rows.append(f"| {'online (on)' if train else 'frozen'} | {len(sel)} | {before.mean():.3f} ± {before.std():.3f} | "
                    f"{after.mean():.3f} ± {after.std():.3f} | {sum(r.mismatches for r in sel)} |")
    rows += ["", "| seed | drift (degrees) | head on: before -> after | frozen: before -> after |", "|---|---|---|---|"]
    for seed in sorted({r.seed for r in runs}):
        on, frozen = (next(r for r in runs if r.seed == seed and r.train == t) for t in (True, False))
        rows.append(f"| {seed} | {on.drift_deg:+.0f} | {on.before:.3f} -> {on.after:.3f} | {frozen.before:.3f} -> {frozen.after:.3f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 .. N-1 (stream, training)")
    parser.add_argument("--samples", type=int, default=8000, help=f"stream length (the first {CALIBRATION} train offline)")
    parser.add_argument("--backend", default="Vitis", help="hls4ml backend (Vitis or Vivado)")
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        print(f"keras_head: error: --seeds must be at least 1, got {args.seeds}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runs = measure(args.seeds, args.samples, args.backend, Path(tmp))
    except ValueError as exc:
        print(f"keras_head: error: {exc}", file=sys.stderr)
        return 2
    minutes = (time.perf_counter() - start) / 60
    import hgq  # noqa: PLC0415
    import hls4ml  # noqa: PLC0415
    import keras  # noqa: PLC0415

    widths = "-".join(map(str, SPEC.widths))
    body = (f"Measured by `python benchmarks/keras_head.py --seeds {args.seeds} --samples {args.samples}` (hls4ml "
            f"{hls4ml.__version__}, keras {keras.__version__} on torch, hgq2 {hgq.__version__}, {args.backend}, io_parallel; "
            f"the backbone's output {runs[0].network_t}; the head a {widths} KAN, G = {SPEC.grid_size}, k = {SPEC.spline_order}, "
            f"act_t {SPEC.act_t}, lr 2^-{SPEC.lr_shift}; {runs[0].samples:,} online samples per run, accuracy over the first "
            f"and the last {WINDOW:,}; the drift: how far the |0> -> |1> axis turned from the calibration's middle to the "
            f"stream's end; {minutes:.0f} min on this machine):\n\n" + "\n".join(table(runs)) + "\n")
    print(body)
    if args.no_doc:
        return 0
    write_sections(DOC, {"keras-head": body}, "keras_head")
    return 0


if __name__ == "__main__":
    sys.exit(main())
