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
  cim grid      the default `codesign cim eval --sweep grid` (20 chips x 5 times x 4 mismatch levels,
                400 points) of a digits MLP on the local executor with 1 and 2 workers and on Ray
                with 2 CPUs, and a few points of an MNIST-5k CNN (the larger network): seconds per point
  training      one training seed of benchmarks/cim_dwp.py's seeds part (digits, 3 methods x mlp/cnn,
                30 epochs, scored at 3 mismatch levels on 20 chips: 6 points) on 1 and 2 local workers
and writes docs/sweeps.md: the measured seconds per point per kind and the time of the default
sweeps on 1 and 2 cores (measured where it ran, else projected) and 64 cores (projected from
the measured per-point cost: points x seconds per point / cores, plus nothing for scheduling,
so a lower bound; labelled as a projection).

    python benchmarks/sweep_overhead.py                      # full (minutes; --synth points take minutes each)
    python benchmarks/sweep_overhead.py --synth-points 0     # without the Yosys points
    python benchmarks/sweep_overhead.py --no-cim             # without the CIM grid and training points
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
from codesign.cim.dwp.cli import train_to_folder
from codesign.cim.dwp.data import load_dataset
from codesign.cim.dwp.grid import grid_sweep
from codesign.cim.dwp.sweep_points import training_point
from codesign.cim.dwp.training import METHODS, TrainConfig
from codesign.fpga.explore import explore
from codesign.sweep import make_executor, run_sweep
from codesign.sweep.resume import named_point
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


def cim_grid(scratch: Path) -> dict:
    """The default grid of a digits MLP under three executors (wall, seconds per point), and MNIST-5k CNN points."""
    load_dataset("digits")  # loaded before timing, as for explore: the forked workers inherit it
    # one epoch: a point's cost depends on the network's shape, not on how well it is trained
    digits, _ = train_to_folder(TrainConfig(method="standard", epochs=1), scratch / "digits_mlp")
    runs = []
    for tag, options in (("local, 1 worker", {"workers": 1}), ("local, 2 workers", {"workers": 2}),
                         ("ray, 2 CPUs", {"executor": "ray", "workers": 2})):
        started = time.perf_counter()
        result = grid_sweep(digits, out=scratch / f"grid {tag}", **options)
        wall = time.perf_counter() - started
        runs.append({"run": tag, "points": result["points"], "wall_s": round(wall, 1),
                     "s_per_point": round(statistics.mean(r["seconds"] for r in result["records"].values()), 4),
                     "points_data": list(result["records"].values())})
    for r in runs[1:]:
        if not _same_points(runs[0]["points_data"], r["points_data"]):
            raise SystemExit(f"cim grid, {r['run']}: points differ from one local worker's")
    load_dataset("mnist5k")
    cnn, _ = train_to_folder(TrainConfig(method="standard", dataset="mnist5k", model="cnn", epochs=1), scratch / "mnist_cnn")
    result = grid_sweep(cnn, out=scratch / "grid cnn", chips=2, times=(1.0, 31557600.0), mismatch=(0.0, 0.7), workers=1)
    big = {"points": result["points"],
           "s_per_point": round(statistics.mean(r["seconds"] for r in result["records"].values()), 3)}
    return {"runs": [{k: v for k, v in r.items() if k != "points_data"} for r in runs], "mnist5k_cnn": big}


def training_points(seed: int = 0) -> list[dict]:
    """One training seed of benchmarks/cim_dwp.py's seeds part at its defaults (the same point parameters)."""
    base = TrainConfig(k=4, sigma=0.5, measure="mi")
    return [named_point(f"seeds digits {model} {method} seed {seed}", {
        "config": base.replace(method=method, dataset="digits", model=model, epochs=30, seed=seed).to_dict(),
        "split": "test", "chips": 20, "chip_seed": 1000 + seed, "levels": [0.0, 0.5, 0.7], "times": None})
        for model in ("mlp", "cnn") for method in METHODS]


def training(scratch: Path) -> dict:
    """The 6 points of one seed on 1 and 2 local workers: wall time, seconds per point (in the worker)."""
    runs = []
    for workers in (1, 2):
        points = training_points()
        started = time.perf_counter()
        result = run_sweep(_timed_training_point, points, scratch / f"training_{workers}.jsonl",
                           make_executor("local", workers), tools=("torch", "digits data set"))
        wall = time.perf_counter() - started
        seconds = {r["name"]: r["point_seconds"] for r in result.records.values()}
        runs.append({"run": f"local, {workers} worker" + ("s" if workers > 1 else ""), "points": len(points),
                     "wall_s": round(wall, 1), "s_per_point": round(statistics.mean(seconds.values()), 1),
                     "max_s": round(max(seconds.values()), 1), "seconds": seconds,
                     "points_data": [{k: v for k, v in r.items() if k not in ("train_seconds", "point_seconds")}
                                     for r in result.records.values()]})
    if not _same_points(runs[0]["points_data"], runs[1]["points_data"]):
        raise SystemExit("training: points differ between 1 and 2 workers")
    return {"runs": [{k: v for k, v in r.items() if k != "points_data"} for r in runs]}


def _timed_training_point(point: dict) -> dict:
    """training_point with its own wall seconds (training and scoring), as a pool worker measured them."""
    started = time.perf_counter()
    record = training_point(point)
    return {**record, "point_seconds": time.perf_counter() - started}


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


def _runs_table(runs: list[dict], extra: str = "") -> list[str]:
    one = runs[0]
    lines = ["| run | points | wall (s) | speed-up over 1 worker | mean seconds per point |" + (f" {extra} |" if extra else ""),
             "|---|---:|---:|---:|---:|" + ("---:|" if extra else "")]
    for r in runs:
        lines.append(f"| {r['run']} | {r['points']} | {r['wall_s']:g} | {one['wall_s'] / r['wall_s']:.2f}x | "
                     f"{r['s_per_point']:g} |" + (f" {r['max_s']:g} |" if extra else ""))
    return lines


def report(command: str, sched: list[dict], runs: list[dict], synth: dict | None, load: tuple, samples: int,
           cim: dict | None = None, train: dict | None = None) -> str:
    """docs/sweeps.md."""
    one = next(r for r in runs if r["run"] == "local, 1 worker")
    lines = [
        "# Sizing sweeps: seconds per point, and how long the default sweeps take",
        "",
        f"Made by `{command}` (Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores). "
        f"1-minute load average {load[0]:.1f} at the start and {load[1]:.1f} at the end: the cores were shared with "
        "other work, so the times are upper bounds for a quiet machine.",
        "",
        "The sweeps that go through the one sweep runner (codesign.sweep: resume from `points.jsonl`, workers "
        "checked before work is sent, a failed point retried once, progress with an ETA on stderr), on local "
        "worker processes (`--executor local`, the default, `--workers N`) or on Ray (`--executor ray`, "
        "`--ray-address HOST:PORT` or `RAY_ADDRESS`; `pip install \"codesign[distributed]\"`): `codesign explore` "
        "(with and without `--synth`), `codesign cim eval --sweep grid` (chips x times x mismatch levels) and the "
        "training runs of `benchmarks/cim_dwp.py`.",
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
    if cim is not None:
        lines += ["## The default `codesign cim eval --sweep grid`: 400 points", "",
                  "20 chips x 5 times (1 s, 1 h, 1 day, 1 month, 1 year) x 4 mismatch levels (0, 0.3, 0.5, 0.7) of a "
                  "digits MLP checkpoint (360 test samples a point; PCM, 8-bit DAC/ADC). Seconds per point: the "
                  "points' own `seconds` (mismatch, programming, drift, the test split), averaged. A point's cost "
                  "depends on the network's shape, not on its training (the checkpoint had one epoch).", ""]
        lines += _runs_table(cim["runs"])
        lines += ["", f"Every run's points are identical (every field but the timing). An MNIST-5k CNN point (1,000 "
                  f"test samples) takes {cim['mnist5k_cnn']['s_per_point']:g} s (mean of "
                  f"{cim['mnist5k_cnn']['points']} points, one worker).", ""]
    if train is not None:
        lines += ["## DWP training points: one seed of `benchmarks/cim_dwp.py --parts seeds`", "",
                  "6 points: standard, noise and DWP training of the digits MLP and CNN (30 epochs, K = 4), each then "
                  "scored on the test split at mismatch 0, 0.5 and 0.7 over 20 chips. Seconds per point: training "
                  "and scoring, measured in the worker.", ""]
        lines += _runs_table(train["runs"], "longest point (s)")
        lines += ["", "The points are identical under 1 and 2 workers (every field but the timing).", ""]
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
    if cim is not None:
        c1 = next(r for r in cim["runs"] if r["run"] == "local, 1 worker")
        c2 = next(r for r in cim["runs"] if r["run"] == "local, 2 workers")
        per = c1["s_per_point"]
        lines.append(f"| cim eval --sweep grid, digits MLP | {per:g} | 400 points | {_hms(c1['wall_s'])} (measured) | "
                     f"{_hms(c2['wall_s'])} (measured) | {_hms(400 * per / 64)} |")
        big = cim["mnist5k_cnn"]["s_per_point"]
        lines.append(f"| cim eval --sweep grid, MNIST-5k CNN | {big:g} | 400 points | {_hms(400 * big)} (projected) | "
                     f"{_hms(400 * big / 2)} (projected) | {_hms(400 * big / 64)} |")
    if train is not None:
        t1 = train["runs"][0]
        total = 5 * sum(t1["seconds"].values())  # 5 seeds of the 6 measured points
        longest = t1["max_s"]
        lines.append(f"| DWP/noise/standard training point (digits, 30 epochs, scored on 20 chips) | {t1['s_per_point']:g} | "
                     f"30 points (`cim_dwp.py --parts seeds`: 5 seeds x 3 methods x mlp, cnn) | {_hms(total)} (projected) | "
                     f"{_hms(max(total / 2, longest))} (projected) | {_hms(max(total / 64, longest))} |")
    lines += [
        "",
        "Projected: points x measured seconds per point / cores, with the points spread evenly and the scheduling "
        "overhead above ignored; ESTIMATES, not measurements. The --synth seconds per point come from "
        + (f"{synth['points']} point(s) ({', '.join(synth['names'])}; Yosys {', '.join(f'{y:g}' for y in synth['yosys_s'])} s) "
           "of the default sweep's smallest shape; larger shapes take longer, so the --synth row is a lower bound."
           if synth else "no measured point (run without --synth-points 0).")
        + " The training sweep's projections take 5 x the measured seed and never less than its longest point "
        "(one point runs on one core). A 64-core run needs a Ray cluster (`--executor ray --ray-address HOST:PORT`) whose workers have "
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
    parser.add_argument("--no-cim", dest="cim", action="store_false", help="skip the CIM grid and training points")
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
        cim = cim_grid(scratch) if args.cim else None
        print(json.dumps(cim), flush=True)
        train = training(scratch) if args.cim else None
        print(json.dumps(train), flush=True)
    text = report(command, sched, runs, synth, (load_start, os.getloadavg()[0]), args.samples, cim, train)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
