"""Does capacity help the online learner? Online error against the grid size G, KAN beside an MLP of matched size.

For each of the four tasks and each G, the default-shape KAN (one hidden layer of 4) learns the
stream predict-then-update, batch 1, as the float64 twin of the hardware learner and as the
bit-exact ``ap_fixed<16,6>`` learner the FPGA runs; beside it a one-hidden-layer float64 MLP whose
parameter count is the closest to the KAN's. The learning rate 2^-s of every (task, G, learner)
is chosen on a validation stream (seed 1000, never an evaluation seed); the evaluation seeds are
0 .. seeds-1. Writes the table between the ``online-capacity`` markers of docs/online_capacity.md
and the plot docs/online_capacity.png.

    nice -n 10 python benchmarks/online_capacity.py                  # G 8 .. 4096, 5 seeds (~30 min)
    python benchmarks/online_capacity.py --grids 8,64 --seeds 2 --samples 4000 --out /tmp/cap   # a copy of the doc there
"""

from __future__ import annotations

import os

# one BLAS thread: a batch-1 learner's small products lose ten times over to thread hand-offs on a busy machine
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import dataclasses
import json
import math
import sys
import time
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from doc_sections import write_sections
from online_learning import VALIDATION_SEED, float_run

from codesign.kan.fixed_learner import KANLearner
from codesign.kan.float_model import MLP
from codesign.kan.float_online import train_online
from codesign.kan.mlp_learner import init_mlp_weights
from codesign.kan.run import fit_widths
from codesign.kan.spec import KANSpec, MLPSpec, with_precision
from codesign.tasks import list_tasks, make_stream, online_metrics

ROOT = Path(__file__).resolve().parents[1]
torch.set_num_threads(1)
DEFAULT_GRIDS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
LR_SHIFTS = range(0, 21)
LEARNERS = ("KAN float", "KAN <16,6>", "MLP float")
SECTION = "online-capacity"


def matched_hidden(n_in: int, n_out: int, params: int) -> int:
    """The hidden width of a one-hidden-layer MLP whose parameter count is the closest to ``params``."""
    per_unit = n_in + 1 + n_out  # each hidden unit: its input weights, its bias, its output weights
    h = max(1, round((params - n_out) / per_unit))
    return min((h - 1, h, h + 1), key=lambda w: (abs(per_unit * w + n_out - params), w)) or 1


def mlp_float_run(widths: tuple[int, int, int], lr_shift: int, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """A float64 MLP with the fixed learner's initial values (He-uniform hidden, zero output), SGD batch 1."""
    n_in, h, n_out = widths
    # init_mlp_weights reads only the layer shapes; hidden widths past the spec's limit take the same draw
    shapes = types.SimpleNamespace(layer_shapes=((n_in, h), (h, n_out)))
    model = MLP(list(widths), activation=MLPSpec().activation, dtype=torch.float64)
    with torch.no_grad():
        for layer, (w, b) in zip(model.layers, init_mlp_weights(shapes, seed)):  # type: ignore[arg-type]
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b))
    return train_online(model, x, y, 2.0**-lr_shift)


def predict(learner: str, kan: KANSpec, hidden: int, lr_shift: int, x: np.ndarray, y: np.ndarray, seed: int) -> np.ndarray:
    """Predictions of one learner at one learning rate on one stream."""
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging rate gives inf, scored as such
        if learner == "KAN float":
            return float_run(dataclasses.replace(kan, lr_shift=lr_shift), x, y, seed)
        if learner == "KAN <16,6>":
            return KANLearner(with_precision(dataclasses.replace(kan, lr_shift=lr_shift), 16, 6), seed=seed).run(x, y)
        return mlp_float_run((kan.n_inputs, hidden, kan.n_outputs), lr_shift, x, y, seed)


def score(pred: np.ndarray, stream) -> dict:
    """Running and last-window mse of one run (inf where the learner diverged)."""
    if not np.all(np.isfinite(pred)):
        return {"mse": float("inf"), "final_mse": float("inf")}
    m = online_metrics(pred, stream)
    return {"mse": m["mse"], "final_mse": m["final_mse"]}


def choose_shift(val_mse, start: int) -> tuple[int, dict[int, float]]:
    """The rate shift at a local minimum of the validation mse, walking from ``start`` (and every shift it tried)."""
    tried: dict[int, float] = {}

    def f(s: int) -> float:
        if s not in tried:
            tried[s] = val_mse(s)
        return tried[s]

    s = start
    while not math.isfinite(f(s)) and s < LR_SHIFTS[-1]:  # diverged: a smaller rate first
        s += 1
    while True:
        best = min((t for t in (s - 1, s, s + 1) if t in LR_SHIFTS), key=lambda t: (f(t), t))
        if best == s:
            return s, dict(sorted(tried.items()))
        s = best


def cell(task: str, grid: int, learner: str, samples: int, seeds: int) -> dict:
    """One (task, G, learner): the validation choice of rate, then mean ± std over the evaluation seeds."""
    probe = make_stream(task, n_samples=10, seed=0)
    kan = fit_widths(dataclasses.replace(KANSpec(), grid_size=grid), probe.n_inputs, probe.n_outputs)
    assert isinstance(kan, KANSpec)
    hidden = matched_hidden(kan.n_inputs, kan.n_outputs, kan.num_parameters)
    params = kan.num_parameters if learner.startswith("KAN") else (kan.n_inputs + 1 + kan.n_outputs) * hidden + kan.n_outputs
    val = make_stream(task, n_samples=samples, seed=VALIDATION_SEED)
    # a wide MLP's stable rate falls as 1/hidden: start the search there, not at the KAN's rate
    start = 3 if learner.startswith("KAN") else 3 + max(0, round(math.log2(hidden / 32)))
    shift, val_mse = choose_shift(
        lambda s: score(predict(learner, kan, hidden, s, val.x, val.y, VALIDATION_SEED), val)["mse"], start)
    runs = []
    for seed in range(seeds):
        stream = make_stream(task, n_samples=samples, seed=seed)
        runs.append(score(predict(learner, kan, hidden, shift, stream.x, stream.y, seed), stream))
    mse = np.array([r["mse"] for r in runs])
    final = np.array([r["final_mse"] for r in runs])
    finite = bool(np.all(np.isfinite(mse)))
    return {
        "task": task, "grid": grid, "learner": learner, "params": int(params), "hidden": hidden if learner == "MLP float" else None,
        "lr_shift": int(shift), "validation_mse": {str(s): v for s, v in val_mse.items()},
        "mse": mse.tolist(), "final_mse": final.tolist(),
        "mse_mean": float(mse.mean()), "mse_std": float(mse.std(ddof=1)) if finite and mse.size > 1 else 0.0,
        "final_mean": float(final.mean()), "final_std": float(final.std(ddof=1)) if finite and final.size > 1 else 0.0,
    }


def parse_grids(text: str) -> tuple[int, ...]:
    """Comma-separated grid sizes, each within the spec's range."""
    try:
        grids = tuple(int(g) for g in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--grids takes comma-separated integers, got {text!r}") from None
    for g in grids:
        try:
            dataclasses.replace(KANSpec(), grid_size=g)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return grids


def positive(text: str) -> int:
    """An integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grids", type=parse_grids, default=DEFAULT_GRIDS, help="comma-separated grid sizes")
    ap.add_argument("--seeds", type=positive, default=5, help="evaluation seeds 0 .. N-1")
    ap.add_argument("--samples", type=positive, default=20_000, help="samples per stream")
    ap.add_argument("--tasks", default=",".join(list_tasks()), help="comma-separated tasks")
    ap.add_argument("--json", type=Path, default=None, help="write every cell (and resume from it when it exists)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs", help="folder of online_capacity.md and .png")
    args = ap.parse_args(argv)
    tasks = args.tasks.split(",")
    unknown = [t for t in tasks if t not in list_tasks()]
    if unknown:
        ap.error(f"unknown task(s) {', '.join(unknown)}; choose from {', '.join(list_tasks())}")
    doc = args.out / "online_capacity.md"
    if not doc.is_file():
        ap.error(f"{doc} does not exist (it holds the <!-- {SECTION}:begin/end --> markers the table goes between)")
    done: dict[str, dict] = {}
    if args.json is not None and args.json.is_file():
        try:
            saved = json.loads(args.json.read_text())
            done = {f"{c['task']}|{c['grid']}|{c['learner']}": c for c in saved["cells"]
                    if saved["samples"] == args.samples and len(c["mse"]) == args.seeds}
        except (ValueError, KeyError, TypeError):
            ap.error(f"{args.json} is not a results file of this benchmark; name another --json")
    start = time.perf_counter()
    for task in tasks:
        for grid in args.grids:
            for learner in LEARNERS:
                key = f"{task}|{grid}|{learner}"
                if key in done:
                    continue
                t0 = time.perf_counter()
                c = done[key] = cell(task, grid, learner, args.samples, args.seeds)
                c["seconds"] = time.perf_counter() - t0
                print(f"{task:18s} G={grid:5d} {learner:11s} params={c['params']:6d} lr=2^-{c['lr_shift']} "
                      f"mse={c['mse_mean']:.3e}±{c['mse_std']:.1e} ({c['seconds']:.0f} s, total "
                      f"{time.perf_counter() - start:.0f} s)", flush=True)
                if args.json is not None:
                    args.json.write_text(json.dumps({"samples": args.samples, "seeds": args.seeds,
                                                     "cells": list(done.values())}, indent=1))
    cells = [done[f"{t}|{g}|{lr}"] for t in tasks for g in args.grids for lr in LEARNERS]
    write_sections(doc, {SECTION: table(cells, args, tasks)}, "online_capacity")
    plot(cells, tasks, args.out / "online_capacity.png")
    return 0


def fmt(mean: float, std: float) -> str:
    """mean ± std, in the table's number format."""
    return "diverged" if not np.isfinite(mean) else f"{mean:.2e} ± {std:.1e}"


def table(cells: list[dict], args, tasks: list[str]) -> str:
    """The markdown body: per task and G, the running and last-window mse of the three learners, and the best G."""
    grids = ",".join(str(g) for g in args.grids)
    lines = [
        f"Measured by `nice -n 10 python benchmarks/online_capacity.py --grids {grids} --seeds {args.seeds} "
        f"--samples {args.samples}`: {args.samples:,}-sample streams, mean ± std over seeds 0..{args.seeds - 1}; "
        f"each learning rate 2^-s (s in {LR_SHIFTS.start}..{LR_SHIFTS.stop - 1}) is the local minimum of the running "
        f"mse on the validation stream (seed {VALIDATION_SEED}) per task, G and learner, walked to from s = 3 (KAN) "
        "or s = 3 + log2(hidden / 32) (MLP). `mse` is the running error over the whole stream, "
        "`final` the last 500 samples.",
        "",
    ]
    for task in tasks:
        lines += [f"### {task}", "",
                  "| G | KAN params | samples per cell | KAN float mse (lr) | KAN <16,6> mse (lr) | MLP params (hidden) "
                  "| MLP float mse (lr) | KAN float final | MLP float final |",
                  "|---|---|---|---|---|---|---|---|---|"]
        by = {(c["grid"], c["learner"]): c for c in cells if c["task"] == task}
        for g in args.grids:
            kf, kx, mf = by[(g, "KAN float")], by[(g, "KAN <16,6>")], by[(g, "MLP float")]
            lines.append(
                f"| {g} | {kf['params']:,} | {args.samples / g:.0f} | {fmt(kf['mse_mean'], kf['mse_std'])} (2^-{kf['lr_shift']}) "
                f"| {fmt(kx['mse_mean'], kx['mse_std'])} (2^-{kx['lr_shift']}) | {mf['params']:,} ({mf['hidden']:,}) "
                f"| {fmt(mf['mse_mean'], mf['mse_std'])} (2^-{mf['lr_shift']}) | {fmt(kf['final_mean'], kf['final_std'])} "
                f"| {fmt(mf['final_mean'], mf['final_std'])} |")
        best = {lr: min(args.grids, key=lambda g: by[(g, lr)]["mse_mean"]) for lr in LEARNERS}
        lines += ["", "Lowest running mse at G = " + ", ".join(f"{best[lr]} ({lr})" for lr in LEARNERS) + ".", ""]
    lines += ["![online error against G](online_capacity.png)", ""]
    return "\n".join(lines)


def plot(cells: list[dict], tasks: list[str], path: Path) -> None:
    """Running mse against parameter count, one panel per task, KAN (float and fixed) and MLP."""
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.8), constrained_layout=True, squeeze=False)
    styles = {"KAN float": ("tab:blue", "o-"), "KAN <16,6>": ("tab:cyan", "s--"), "MLP float": ("tab:orange", "^-")}
    for ax, task in zip(axes[0], tasks):
        for learner in LEARNERS:
            cs = sorted((c for c in cells if c["task"] == task and c["learner"] == learner and np.isfinite(c["mse_mean"])),
                        key=lambda c: c["params"])
            color, style = styles[learner]
            ax.errorbar([c["params"] for c in cs], [c["mse_mean"] for c in cs], yerr=[c["mse_std"] for c in cs],
                        fmt=style, color=color, ms=4, lw=1.2, capsize=2, label=learner)
            if learner == "KAN float":
                for c in cs:
                    ax.annotate(f"G{c['grid']}", (c["params"], c["mse_mean"]), fontsize=6, xytext=(2, 3),
                                textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(task)
        ax.set_xlabel("parameters")
    axes[0][0].set_ylabel("running mse (mean ± std over seeds)")
    axes[0][0].legend(fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
