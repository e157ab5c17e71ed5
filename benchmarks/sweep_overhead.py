"""Sweep runner overhead and speed-up: Ray against the local process pool, and the sizing note docs/sweeps.md.

Measures, on this machine:
  scheduling    per-point cost of the executor itself: --points trivial points (the point's dict
                copied back) through codesign.sweep's ``map_unordered`` on the local pool and on a
                local Ray (2 CPUs each), after a warm-up, and the start-up (workers started,
                workers checked) of each
  explore       the default 48-point `codesign explore kan_online` (no --synth, --samples per
                point) on the local executor with 1 and 2 workers and on Ray with 2 CPUs: wall time,
                speed-up over one worker, mean seconds per point (the points' own "seconds")
  synth         --synth-points points of the same sweep with --synth (Yosys on each), one worker:
                seconds per point
and writes docs/sweeps.md: the measured seconds per point per kind and the time of the default
sweeps on 1 and 2 cores (measured where it ran, else projected) and 64 cores (projected from
the measured per-point cost: points x seconds per point / cores, plus nothing for scheduling,
so a lower bound; labelled as a projection).

    python benchmarks/sweep_overhead.py                      # full (minutes; --synth points take minutes each)
    python benchmarks/sweep_overhead.py --synth-points 0     # without the Yosys points
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import codesign.kan.run  # noqa: F401 - imported (torch with it) before any timing: the forked pool workers inherit it
from codesign.fpga.explore import explore
from codesign.sweep import make_executor
from codesign.sweep.runner import attempt, check_workers

ROOT = Path(__file__).resolve().parents[1]
CORES = (1, 2, 64)


def scheduling(executor_name: str, points: int) -> dict:
    """Start-up seconds and per-point milliseconds of ``map_unordered`` over trivial points, after a warm-up."""
    items = [{"name": f"p{i}", "x": i} for i in range(points)]
    func = functools.partial(attempt, dict)
    started = time.perf_counter()
    with make_executor(executor_name, workers=2) as executor:
        check_workers(executor, ())
        list(executor.map_unordered(func, items[:4]))  # workers up and warm
        startup = time.perf_counter() - started
        started = time.perf_counter()
        done = sum(1 for _ in executor.map_unordered(func, items))
        elapsed = time.perf_counter() - started
    assert done == points
    return {"executor": executor_name, "startup_s": round(startup, 2), "ms_per_point": round(1000 * elapsed / points, 3)}


def explore_run(scratch: Path, tag: str, samples: int, **options) -> dict:
    """One default explore in a fresh folder: wall seconds, points, mean seconds per point."""
    started = time.perf_counter()
    result = explore("kan_online", out=scratch / tag, samples=samples, **options)
    wall = time.perf_counter() - started
    seconds = [p["seconds"] for p in result["points"] if "seconds" in p]
    return {"run": tag, "points": len(result["points"]), "computed": result["computed"], "wall_s": round(wall, 1),
            "s_per_point": round(statistics.mean(seconds), 3), "points_data": result["points"]}


def synth_points(scratch: Path, count: int, samples: int) -> dict | None:
    """Seconds per point of explore --synth on the first ``count`` points of the default sweep (one worker)."""
    if count < 1:
        return None
    grid, bits, hidden = (4, 8, 16, 32)[:count], (12,), ((2,),)
    started = time.perf_counter()
    result = explore("kan_online", out=scratch / "synth", samples=samples, grid=grid, bits=bits, hidden=hidden,
                     synth=True, workers=1)
    wall = time.perf_counter() - started
    seconds = [p["seconds"] for p in result["points"]]
    return {"points": len(seconds), "names": [p["name"] for p in result["points"]], "wall_s": round(wall, 1),
            "s_per_point": round(statistics.mean(seconds), 1), "yosys_s": [p["synth"]["seconds"] for p in result["points"]]}


def _same_points(a: list[dict], b: list[dict]) -> bool:
    strip = lambda points: {p["name"]: {k: v for k, v in p.items() if k != "seconds"} for p in points}  # noqa: E731
    return strip(a) == strip(b)


def _hms(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def report(command: str, sched: list[dict], runs: list[dict], synth: dict | None, load: tuple, samples: int) -> str:
    """docs/sweeps.md."""
    one = next(r for r in runs if r["run"] == "local, 1 worker")
    lines = [
        "# Sizing sweeps: seconds per point, and how long the default sweeps take",
        "",
        f"Made by `{command}` (Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores). "
        f"1-minute load average {load[0]:.1f} at the start and {load[1]:.1f} at the end: the cores were shared with "
        "other work, so the times are upper bounds for a quiet machine.",
        "",
        "## Scheduling overhead per point",
        "",
        "Trivial points (the point's dict copied back) through the executor's `map_unordered`, 2 workers, after a "
        "warm-up. Start-up: workers started and checked (codesign version, tools) and warmed up.",
        "",
        "| executor | start-up (s) | overhead per point (ms) |",
        "|---|---:|---:|",
    ]
    for s in sched:
        lines.append(f"| {s['executor']} | {s['startup_s']:g} | {s['ms_per_point']:g} |")
    lines += [
        "",
        f"## The default explore: 48 points, no --synth ({samples:,} samples a point)",
        "",
        "`codesign explore kan_online` (grid 4,8,16,32 x bits 12,16,20 x hidden 2,4,8,4-4). Wall time includes "
        "starting the workers (for Ray: starting a local Ray and its workers importing codesign, see the start-up "
        "above); seconds per point are the points' own times (their `seconds` field), averaged.",
        "",
        "| run | points | wall (s) | speed-up over 1 worker | mean seconds per point |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(f"| {r['run']} | {r['points']} | {r['wall_s']:g} | {one['wall_s'] / r['wall_s']:.2f}x | "
                     f"{r['s_per_point']:g} |")
    two_run = next(r for r in runs if r["run"] == "local, 2 workers")
    slower = two_run["s_per_point"] / one["s_per_point"]
    reading = "Every run's points are identical (every field but the timing), whichever executor ran them."
    if one["wall_s"] <= two_run["wall_s"]:
        reading += (f" With 2 workers a point took {slower:.1f}x as long as with one"
                    + (" (the two cores were not free for both workers: see the load average)" if slower > 1.3 else "")
                    + f"; at {one['s_per_point']:g} s a point, starting workers and sharing the cores cost more than "
                    "the second worker gains on this sweep, and Ray's start-up (a local Ray, its workers importing "
                    "codesign) is larger still. The pool and Ray pay off when points take seconds or more (--synth, "
                    "larger --samples) or when a cluster adds cores.")
    lines += ["", reading, ""]
    lines += ["## Seconds per point per kind, and the default sweeps on 1, 2 and 64 cores", "",
              "| kind | seconds per point (measured) | default sweep | 1 core | 2 cores | 64 cores (projected) |",
              "|---|---:|---|---:|---:|---:|"]
    two = next(r for r in runs if r["run"] == "local, 2 workers")
    per = one["s_per_point"]
    lines.append(f"| explore, estimate only | {per:g} | 48 points | {_hms(one['wall_s'])} (measured) | "
                 f"{_hms(two['wall_s'])} (measured) | {_hms(48 * per / 64)} |")
    if synth is not None:
        s = synth["s_per_point"]
        lines.append(f"| explore --synth (Yosys each point) | {s:g} | 48 points | {_hms(48 * s)} (projected) | "
                     f"{_hms(48 * s / 2)} (projected) | {_hms(48 * s / 64)} |")
    lines += [
        "",
        "Projected: points x measured seconds per point / cores, with the points spread evenly and the scheduling "
        "overhead above ignored; ESTIMATES, not measurements. The --synth seconds per point come from "
        + (f"{synth['points']} point(s) ({', '.join(synth['names'])}; Yosys {', '.join(f'{y:g}' for y in synth['yosys_s'])} s) "
           "of the default sweep's smallest shape; larger shapes take longer, so the --synth row is a lower bound."
           if synth else "no measured point (run without --synth-points 0).")
        + " A 64-core run needs a Ray cluster (`--executor ray --ray-address HOST:PORT`) whose workers have "
        "codesign (the same version) and, for --synth, Yosys: each worker is checked before work is sent.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure and write the sizing note."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=400, help="trivial points for the scheduling overhead")
    parser.add_argument("--samples", type=int, default=20_000, help="samples per explore point (explore's default)")
    parser.add_argument("--synth-points", type=int, default=1, help="points measured with --synth (0: none)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "sweeps.md"))
    args = parser.parse_args(argv)
    command = "python benchmarks/sweep_overhead.py" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))
    load_start = os.getloadavg()[0]
    sched = [scheduling("local", args.points), scheduling("ray", args.points)]
    print(json.dumps(sched), flush=True)
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        scratch = Path(tmp)
        runs = [explore_run(scratch, "local, 1 worker", args.samples, workers=1),
                explore_run(scratch, "local, 2 workers", args.samples, workers=2),
                explore_run(scratch, "ray, 2 CPUs", args.samples, executor="ray", workers=2)]
        for r in runs[1:]:
            if not _same_points(runs[0]["points_data"], r["points_data"]):
                raise SystemExit(f"{r['run']}: points differ from one local worker's")
        print(json.dumps([{k: v for k, v in r.items() if k != "points_data"} for r in runs]), flush=True)
        synth = synth_points(scratch, args.synth_points, args.samples)
        print(json.dumps(synth), flush=True)
    text = report(command, sched, runs, synth, (load_start, os.getloadavg()[0]), args.samples)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
