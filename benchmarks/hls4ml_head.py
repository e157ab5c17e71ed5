"""The online KAN head behind a frozen hls4ml network: hls4ml's C-simulation against the Python reference.

The example of examples/hls4ml_head.py (codesign.examples.hls4ml_head): a 3-16-2 torch MLP trained offline
(300 Adam steps) to give sin(3 x0) and x1 x2, then frozen; a 2-4-1 online KAN behind it learns
y = 0.5 sin(3 x0) + 0.3 x1 x2 from the stream. For each hls4ml backend (and for the last one again with the
head's training off) the model is converted (io_parallel, the network in ap_fixed<20,6>), compiled by hls4ml
and run by hls4ml's predict() over the stream; codesign.fpga.hls4ml_head.check_stream compares every
prediction and the final coefficients with the reference fed hls4ml's own network output (its trace).
Rewrites the marked section of docs/integration.md.

    python benchmarks/hls4ml_head.py [--samples 10000] [--backend Vitis --backend Vivado] [--no-doc]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from doc_sections import write_sections

from codesign.examples.hls4ml_head import NETWORK_PRECISION, SPEC, stream, trained_network

DOC = Path(__file__).resolve().parent.parent / "docs" / "integration.md"


def measure(backend: str, samples: int, folder: Path, train: bool = True) -> str:
    """One backend's table row: samples, mismatches, clamped features, learning, times."""
    from codesign.fpga import hls4ml_head  # noqa: PLC0415 - its import needs hls4ml with the extension API

    model = hls4ml_head.attach_online_head(trained_network(), SPEC, train=train)
    hls_model = hls4ml_head.to_hls4ml(model, (3,), folder / f"{backend}_{train}", backend=backend, default_precision=NETWORK_PRECISION)
    start = time.perf_counter()
    hls_model.compile()
    compile_s = time.perf_counter() - start
    x, y = stream(samples)
    start = time.perf_counter()
    check = hls4ml_head.check_stream(hls_model, x, y)
    check_s = time.perf_counter() - start
    head = hls4ml_head.head_layer(hls_model)
    feature_t = hls4ml_head.fixed_type_of(hls_model.graph[head.inputs[0]].get_output_variable().type.precision)
    err = np.abs(SPEC.act_t.to_float(hls4ml_head.reference_stream(hls_model, check.features_raw, check.targets_raw)[0]) - y)
    first, last = (float(np.sqrt((e ** 2).mean())) for e in (err[:1000], err[-1000:]))
    return (f"| {backend} | {'on' if train else 'off'} | {feature_t} | {check.samples:,} | {check.prediction_mismatches} | "
            f"{check.state_values} | {check.state_mismatches} | {check.trace_mismatches} | {check.features_outside_grid} | "
            f"{first:.3g} -> {last:.3g} | {compile_s:.0f} | {check_s:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000, help="stream length (at least 2,000)")
    parser.add_argument("--backend", action="append", help="hls4ml backend (repeatable; default Vitis and Vivado)")
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    if args.samples < 2000:
        print("hls4ml_head: error: --samples must be at least 2000 (the first and last 1,000 are compared)", file=sys.stderr)
        return 2
    header = ["| backend | train | network output type | samples | prediction mismatches | coefficients | coefficient mismatches "
              "| predict() vs trace() mismatches | features outside the grid | RMS error, first -> last 1,000 | compile (s) | check (s) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            backends = args.backend or ["Vitis", "Vivado"]
            # every backend learning, then the last one with train=False (a head that only predicts)
            for backend, train in [(b, True) for b in backends] + [(backends[-1], False)]:
                rows.append(measure(backend, args.samples, Path(tmp), train))
                print(rows[-1], flush=True)
    except ValueError as exc:
        print(f"hls4ml_head: error: {exc}", file=sys.stderr)
        return 2
    import hls4ml  # noqa: PLC0415

    widths = "-".join(map(str, SPEC.widths))
    body = (f"Measured by `python benchmarks/hls4ml_head.py` (hls4ml {hls4ml.__version__}, io_parallel; the network's "
            f"default precision {NETWORK_PRECISION}, its output type as hls4ml infers it; the head a {widths} KAN, "
            f"G = {SPEC.grid_size}, k = {SPEC.spline_order}, act_t {SPEC.act_t}; times on this machine's g++):\n\n"
            + "\n".join(header + rows) + "\n")
    if args.no_doc:
        return 0
    write_sections(DOC, {"hls4ml-head": body}, "hls4ml_head")
    return 0


if __name__ == "__main__":
    sys.exit(main())
