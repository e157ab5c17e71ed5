"""Profiler overhead: the instrumented bit-exact reference against the plain one, on the same stream.

For the KAN and MLP learners (default specs, widths fitted to the task) and two tasks, time
  plain         learner.run(x, y): quantize, the integer kernel without statistics, back to float
  instrumented  the kernel with every named signal recorded (run_raw(..., stats=...))
  profile       codesign.kan.profiler.profile_stream: the instrumented run plus the inputs,
                targets and initial coefficients, and the online error
in --repeats rounds that run the four in turn (CPU time; compilation is not timed); the
overhead is the median of the per-round ratios. The target of the
profiler is at most 3x the plain reference. Writes docs/profiler_overhead.md.

    python benchmarks/profiler_overhead.py                 # 20,000 samples, 9 rounds
    python benchmarks/profiler_overhead.py --samples 5000  # quicker
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
from pathlib import Path

from codesign.config import load_spec
from codesign.kan.profiler import profile_stream
from codesign.kan.run import fit_widths, make_learner
from codesign.tasks import make_stream

ROOT = Path(__file__).resolve().parents[1]
TARGET = 3.0


def cpu_times(fns: dict, repeats: int) -> dict[str, list[float]]:
    """CPU times (this process's: waiting for a shared core does not count) of ``repeats`` rounds, each calling
    every function once in turn, so that all of them see the same machine conditions; one warm-up round first."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            started = time.process_time()
            fn()
            times[name].append(time.process_time() - started)
    return times


def measure(learner_name: str, task: str, samples: int, repeats: int) -> dict:
    """Plain, instrumented and full-profile times of one learner on one task."""
    stream = make_stream(task, n_samples=samples, seed=0)
    spec = fit_widths(load_spec(learner_name), stream.n_inputs, stream.n_outputs)
    act = spec.act_t
    x_raw, y_raw = act.quantize(stream.x), act.quantize(stream.y)

    def plain():
        make_learner(spec, seed=0).run(stream.x, stream.y)

    def instrumented():
        learner = make_learner(spec, seed=0)
        learner.run_raw(x_raw, y_raw, True, stats=learner.new_stats())

    def profile():
        profile_stream(spec, stream, seed=0)

    kernel_only = make_learner(spec, seed=0)

    def plain_kernel():
        kernel_only.run_raw(x_raw, y_raw, True)

    times = cpu_times({"plain": plain, "plain_kernel": plain_kernel, "instrumented": instrumented, "profile": profile}, repeats)
    ratios = sorted(p / q for p, q in zip(times["profile"], times["plain"]))
    kernel_ratios = sorted(p / q for p, q in zip(times["instrumented"], times["plain_kernel"]))
    return {
        "learner": learner_name, "task": task, "widths": "-".join(map(str, spec.widths)),
        "signals": len(make_learner(spec).signal_names()), "samples": samples,
        **{name: min(t) for name, t in times.items()},
        "overhead": ratios[len(ratios) // 2], "kernel_overhead": kernel_ratios[len(kernel_ratios) // 2],
    }


def render(rows: list[dict], command: str, repeats: int, load: tuple[float, float]) -> str:
    """docs/profiler_overhead.md."""
    worst = max(r["overhead"] for r in rows)
    lines = [
        "# Profiler overhead",
        "",
        f"Made by `{command}` (Python {platform.python_version()}, {platform.machine()}). Times are CPU time of the "
        f"process (`time.process_time`; the kernels are single-threaded), so time spent waiting for a shared core does not "
        f"count: {repeats} rounds after a warm-up round, each round running the four variants in turn; the table gives "
        "each variant's least time and the median over rounds of the per-round ratios. The machine's 2 cores were "
        f"shared with other work (1-minute load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end), so even CPU times carry some noise (shared caches); rerun it on a quiet machine for clean figures.",
        "",
        "*plain*: `learner.run(x, y)` (quantize, the numba kernel without statistics, back to float). *kernel*: the",
        "kernel alone on raw integers. *instrumented*: the kernel recording every named signal's min, max, count,",
        "saturations and first saturation. *profile*: `profile_stream` (instrumented run, plus inputs, targets,",
        "initial coefficients and the online error). Overhead = profile / plain (median of the rounds); the target is at most "
        f"{TARGET:g}x.",
        "",
        "| learner | task | widths | signals | samples | plain (ms) | kernel (ms) | instrumented (ms) | profile (ms) "
        "| instrumented / kernel | profile / plain |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['learner']} | {r['task']} | {r['widths']} | {r['signals']} | {r['samples']:,} | {1e3 * r['plain']:.1f} | "
            f"{1e3 * r['plain_kernel']:.1f} | {1e3 * r['instrumented']:.1f} | {1e3 * r['profile']:.1f} | "
            f"{r['kernel_overhead']:.2f}x | {r['overhead']:.2f}x |"
        )
    lines += ["", f"Worst profile / plain: **{worst:.2f}x** ({'meets' if worst <= TARGET else 'MISSES'} the {TARGET:g}x target).", ""]
    return "\n".join(lines)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out", default=str(ROOT / "docs" / "profiler_overhead.md"))
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    rows = []
    for learner in ("kan_online", "mlp_online"):
        for task in ("function_tracking", "mackey_glass"):
            r = measure(learner, task, args.samples, args.repeats)
            print(f"{learner} {task}: plain {1e3 * r['plain']:.1f} ms, profile {1e3 * r['profile']:.1f} ms "
                  f"({r['overhead']:.2f}x)", file=sys.stderr)
            rows.append(r)
    command = " ".join(["python benchmarks/profiler_overhead.py", *map(shlex.quote, sys.argv[1:])]).strip()
    text = render(rows, command, args.repeats, (load_before, os.getloadavg()[0]))
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
