"""What the rounding and overflow modes of the KAN learner's types cost: latency at the clock against learning error.

The learner's default types round to nearest even and saturate (``ap_fixed<16,6,AP_RND_CONV,AP_SAT>``);
``ap_fixed<16,6>`` as C++ declares it truncates and wraps (AP_TRN, AP_WRAP), which is what hls4ml and
Vitis HLS code uses by default, and its casts in the RTL are wires (rtl/fixed_cast.sv). For the 1-1
G = 5 and the default 2-4-1 G = 8 shapes, this script gives the `--pipeline auto` cycles and the
analytic clock estimate of each choice (codesign.fpga.estimate), and the online learning error of the
bit-exact reference (codesign.kan.fixed_learner) on every task, mean ± std over the seeds, at the
spec's own learning rate. Writes docs/cast_modes.md and docs/cast_modes.json.

    python benchmarks/cast_modes.py                       # 20,000 samples, 5 seeds (minutes)
    python benchmarks/cast_modes.py --samples 2000 --seeds 2 --out /tmp/modes
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

from clock_error_bars import analytic_clock_label

from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.estimate import estimate
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.run import fit_widths
from codesign.kan.spec import KANSpec
from codesign.tasks import list_tasks, make_stream, online_metrics

DATAPATH = ("act_t", "coef_t", "err_t", "grad_t")
MODES = {
    "AP_RND_CONV, AP_SAT (the learner's default)": None,
    "AP_TRN, AP_SAT": "ap_fixed<16,6,AP_TRN,AP_SAT>",
    "AP_TRN, AP_WRAP (ap_fixed<16,6> as declared)": "ap_fixed<16,6>",
}
SHAPES = {"1-1 G=5": KANSpec(widths=(1, 1), grid_size=5), "2-4-1 G=8": KANSpec()}


def typed(spec: KANSpec, text: str | None) -> KANSpec:
    """The spec with every datapath type set to ``text`` (None: unchanged)."""
    return spec if text is None else dataclasses.replace(spec, **{n: FixedType.parse(text) for n in DATAPATH})


def main(argv: list[str] | None = None) -> int:
    """Estimate the latency and measure the learning error of each choice of modes; write the doc."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    latency = []
    for shape, base in SHAPES.items():
        for mode, text in MODES.items():
            e = estimate(typed(base, text), find_board("xcvu9p"), "auto")
            latency.append({"shape": shape, "modes": mode, "placement": e["pipeline_placement"]["text"], "ii": e["ii"],
                            "update_latency_cycles": e["update_latency_cycles"], "clock_mhz": e["clock_mhz_estimate"],
                            "latency_ns": e["latency_ns"]})
    errors = []
    for task in list_tasks():
        probe = make_stream(task, n_samples=10, seed=0)
        base = fit_widths(KANSpec(), probe.n_inputs, probe.n_outputs)
        for mode, text in MODES.items():
            spec = typed(base, text)
            mse = []
            for seed in range(args.seeds):
                stream = make_stream(task, n_samples=args.samples, seed=seed)
                mse.append(float(online_metrics(KANLearner(spec, seed=seed).run(stream.x, stream.y), stream)["mse"]))
            errors.append({"task": task, "modes": mode, "mse": mse})
            print(f"{task:18s} {mode:45s} mse {statistics.mean(mse):.4g} ± {statistics.stdev(mse) if len(mse) > 1 else 0:.2g}",
                  flush=True)
    elapsed = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/cast_modes.py" + ("" if argv is None and len(sys.argv) == 1 else " " + " ".join(sys.argv[1:]))
    (args.out / "cast_modes.json").write_text(json.dumps({"command": command, "samples": args.samples, "seeds": args.seeds,
                                                           "latency": latency, "errors": errors}, indent=1) + "\n")
    (args.out / "cast_modes.md").write_text(_doc(latency, errors, args, command, elapsed))
    return 0


def _doc(latency: list[dict], errors: list[dict], args: argparse.Namespace, command: str, elapsed: float) -> str:
    def spread(v: list[float]) -> str:
        return f"{statistics.mean(v):.4g} ± {statistics.stdev(v):.2g}" if len(v) > 1 else f"{v[0]:.4g}"

    lines = [
        "# Rounding and overflow modes: latency at 250 MHz against learning error",
        "",
        f"Made by `{command}` ({elapsed:.0f} s). The datapath types (`act_t`, `coef_t`, `err_t`, `grad_t`) are",
        "`ap_fixed<16,6>` with the modes of each row; the ROM types keep their defaults. Cycles and clock are the",
        "analytic estimate of `codesign estimate --pipeline auto` for xcvu9p (docs/estimator.md; the Yosys netlist",
        "estimate and the co-simulation of the 1-1 and 2-4-1 rows are in docs/rtl_results.md).",
        analytic_clock_label(),
        "",
        "| shape | modes | auto placement | II | prediction + update (cycles) | clock est. (MHz) | prediction + update (ns) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for r in latency:
        lines.append(f"| {r['shape']} | {r['modes']} | `{r['placement']}` | {r['ii']} | {r['update_latency_cycles']} | "
                     f"{r['clock_mhz']} | {r['latency_ns']:.1f} |")
    lines += [
        "",
        f"Online learning error of the bit-exact reference, KAN of the default shape fitted to each task's widths, "
        f"{args.samples:,} samples, mean ± std over {args.seeds} seeds (predict-then-update, the spec's learning rate "
        "2^-4; mse over the whole stream):",
        "",
        "| task | " + " | ".join(MODES) + " |",
        "|---|" + "---:|" * len(MODES),
    ]
    by_task: dict[str, dict[str, list[float]]] = {}
    for r in errors:
        by_task.setdefault(r["task"], {})[r["modes"]] = r["mse"]
    for task, row in by_task.items():
        lines.append(f"| {task} | " + " | ".join(spread(row[m]) for m in MODES) + " |")
    names = list(MODES)
    same = all(row[names[1]] == row[names[2]] for row in by_task.values())
    if same:
        lines += ["", f"{names[1]} and {names[2]} give the same error on every stream and seed: no cast overflowed, so "
                  "the whole difference from the default is the truncation."]
    lines += [
        "",
        "Truncation floors every rounding, so an update biases the coefficients by half a step on average, and",
        "wrapping turns an overflow into a sign flip; saturation keeps an overflow at the range's edge. Which",
        "error a loop can afford is the user's choice: `codesign estimate --config` shows the latency of any modes.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
