"""Seconds per HWA training step of codesign checkouts side by side, and of aihwkit-lightning, in one run.

    git archive <commit> codesign | tar -x -C /tmp/before        # an earlier codesign, without installing it
    nice -n 10 python benchmarks/cim_hwa_versions.py --tree before=/tmp/before --tree now=. --lightning \
        [--dataset digits --model mlp --blocks 15 --steps 20 --json out.json]

Each --tree NAME=ROOT (a folder holding a ``codesign/`` package) and --lightning is one worker process, one torch
thread, that builds the training step of ``benchmarks/cim_vs_aihwkit.py --part hwa`` (the same network, knobs, seed
and mini-batches; codesign's step: draw a chip, forward, backward, Adam, clip) and runs blocks of --steps
back-to-back steps when told to. The workers take turns, one block each, the order rotating from block to block,
so every tool sees the same load on a shared machine; one worker runs at a time. Reported: per worker the median
over blocks of the wall and the thread-CPU seconds per step, and per pair the median over blocks of the ratio of
their block times (a change of load between blocks cancels in it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

WORKER = r"""
import argparse, sys, time
sys.path.insert(0, {benchmarks!r})
import torch
torch.set_num_threads(1)
import cim_vs_aihwkit as bench
from codesign.cim.dwp.data import load_dataset
args = argparse.Namespace(**{args!r})
data = load_dataset(args.dataset)
step, _ = bench._trainer({tool!r}, args.seed, args, data.image_shape)
gen = torch.Generator().manual_seed(0)
batches = [torch.randint(len(data.fit.y), (args.batch,), generator=gen) for _ in range(args.steps)]
i = 0
print("ready", flush=True)
for line in sys.stdin:
    n = int(line)
    wall, cpu = time.perf_counter(), time.thread_time()
    for j in range(n):
        idx = batches[j % len(batches)]
        step(data.fit.x[idx], data.fit.y[idx], i)
        i += 1
    print(f"{{(time.perf_counter() - wall) / n}} {{(time.thread_time() - cpu) / n}}", flush=True)
"""


def _worker(tool: str, root: Path | None, args: argparse.Namespace) -> subprocess.Popen:
    """A worker process of one tool (codesign from root, or lightning), ready for blocks."""
    env = dict(os.environ)
    if root is not None:  # this checkout's codesign first on the path, before any installed one
        env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    knobs = {"dataset": args.dataset, "model": args.model, "seed": args.seed, "batch": args.batch, "lr": 2e-3,
             "w_noise": 0.05, "clip_sigma": 2.5, "bits": 8, "steps": args.steps}
    code = WORKER.format(benchmarks=str(HERE), args=knobs, tool=tool)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                            text=True, cwd="/")
    assert proc.stdout is not None
    for line in proc.stdout:  # a peer may print notices before it is ready
        if line.strip() == "ready":
            return proc
    raise SystemExit(f"error: the worker of {tool} ({root or 'installed'}) did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=ROOT",
                        help="a codesign checkout to time (a folder holding codesign/)")
    parser.add_argument("--lightning", action="store_true", help="also time aihwkit-lightning's step")
    parser.add_argument("--dataset", choices=("digits", "mnist5k"), default="digits")
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20, help="steps per block")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    trees: dict[str, Path] = {}
    for item in args.tree:
        name, sep, root = item.partition("=")
        if not sep or not name or not (Path(root) / "codesign" / "__init__.py").is_file():
            print(f"error: --tree {item!r}: expected NAME=ROOT with ROOT/codesign/__init__.py", file=sys.stderr)
            return 2
        trees[name] = Path(root).resolve()
    if len(trees) + args.lightning < 2:
        print("error: give at least two of --tree ... and --lightning", file=sys.stderr)
        return 2
    if args.json is not None and args.json.exists() and not args.json.is_file():
        print(f"error: --json {args.json}: not a file", file=sys.stderr)
        return 2
    workers = {name: _worker("codesign", root, args) for name, root in trees.items()}
    if args.lightning:
        workers["aihwkit-lightning"] = _worker("lightning", None, args)
    names = list(workers)
    times: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    try:
        for block in range(args.blocks + 1):
            shift = block % len(names)
            for name in names[shift:] + names[:shift]:
                proc = workers[name]
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{args.steps}\n")
                proc.stdin.flush()
                wall, cpu = map(float, proc.stdout.readline().split())
                if block:  # block 0 warms up (compiled kernels, the sampler's table)
                    times[name].append((wall, cpu))
    finally:
        for proc in workers.values():
            proc.kill()
    result: dict = {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                    "trees": {k: str(v) for k, v in trees.items()}, "blocks": times, "median_ms": {}, "ratios": {}}
    print(f"{args.dataset} {args.model}, batch {args.batch}, {args.blocks} blocks of {args.steps} steps, one thread:")
    for name in names:
        wall = 1e3 * statistics.median(t[0] for t in times[name])
        cpu = 1e3 * statistics.median(t[1] for t in times[name])
        result["median_ms"][name] = {"wall": wall, "cpu": cpu}
        print(f"  {name}: {wall:.2f} ms per step (wall), {cpu:.2f} ms (thread CPU)")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ratio = {clock: statistics.median(x[k] / y[k] for x, y in zip(times[a], times[b]))
                     for k, clock in enumerate(("wall", "cpu"))}
            result["ratios"][f"{a} / {b}"] = ratio
            print(f"  {a} / {b}: {ratio['wall']:.3f} (wall), {ratio['cpu']:.3f} (thread CPU), median of block ratios")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
