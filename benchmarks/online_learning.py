"""KAN vs MLP online learners at equal parameter count, in float and three fixed-point precisions.

For each task the learning rate of each model is chosen once, on a validation stream (its own
seed, never the evaluation seeds), with the `<16,6>` learner; every precision then uses it.
Writes docs/online_learning.md (table) and docs/online_learning.png (error curves).

    python benchmarks/online_learning.py                 # 20k samples, 3 seeds (~1 min)
    python benchmarks/online_learning.py --samples 5000 --seeds 1 --out /tmp/bench
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from codesign.kan.fixed_learner import KANLearner, init_kan_coefficients
from codesign.kan.float_model import KAN, MLP
from codesign.kan.float_online import train_online
from codesign.kan.mlp_learner import MLPLearner, init_mlp_weights
from codesign.kan.run import fit_widths
from codesign.kan.spec import KANSpec, MLPSpec, with_precision
from codesign.tasks import list_tasks, make_stream, online_metrics

PRECISIONS = ["float", (16, 6), (12, 4), (8, 3)]
LR_SHIFTS = range(2, 9)
VALIDATION_SEED = 1000


def precision_name(p) -> str:
    return "float" if p == "float" else f"ap_fixed<{p[0]},{p[1]}>"


def matched_mlp(kan: KANSpec) -> MLPSpec:
    """A one-hidden-layer MLP whose parameter count is closest to the KAN's."""
    n_in, n_out = kan.n_inputs, kan.n_outputs
    best = min(range(1, 512), key=lambda h: abs((n_in + 1) * h + (h + 1) * n_out - kan.num_parameters))
    return MLPSpec(widths=(n_in, best, n_out))


def float_run(spec, x, y, seed: int) -> np.ndarray:
    """The float twin of a fixed learner: same initial values, same SGD, float64."""
    lr = 2.0**-spec.lr_shift
    if isinstance(spec, KANSpec):
        model = KAN(list(spec.widths), grid_size=spec.grid_size, spline_order=spec.spline_order,
                    grid_range=spec.grid_range, dtype=torch.float64)
        with torch.no_grad():
            for layer, c in zip(model.layers, init_kan_coefficients(spec, seed)):
                layer.coef.copy_(torch.from_numpy(c))
    else:
        model = MLP(list(spec.widths), activation=spec.activation, dtype=torch.float64)
        with torch.no_grad():
            for layer, (w, b) in zip(model.layers, init_mlp_weights(spec, seed)):
                layer.weight.copy_(torch.from_numpy(w))
                layer.bias.copy_(torch.from_numpy(b))
    return train_online(model, x, y, lr)


def run(spec, precision, x, y, seed: int) -> np.ndarray:
    """Predictions of one learner on one stream."""
    if precision == "float":
        return float_run(spec, x, y, seed)
    spec = with_precision(spec, *precision)
    learner = KANLearner(spec, seed=seed) if isinstance(spec, KANSpec) else MLPLearner(spec, seed=seed)
    return learner.run(x, y)


def choose_lr_shift(spec, task: str, n: int) -> int:
    """The learning-rate shift with the lowest mean error on the validation stream, at <16,6>."""
    stream = make_stream(task, n_samples=n, seed=VALIDATION_SEED)
    scores = {}
    for s in LR_SHIFTS:
        pred = run(dataclasses.replace(spec, lr_shift=s), (16, 6), stream.x, stream.y, VALIDATION_SEED)
        scores[s] = online_metrics(pred, stream)["mse"]
    return min(scores, key=scores.get)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = list(list_tasks())
    rows, curves = [], {}
    start = time.perf_counter()
    for task in tasks:
        probe = make_stream(task, n_samples=10, seed=0)
        kan = fit_widths(KANSpec(), probe.n_inputs, probe.n_outputs)
        models = {"KAN": kan, "MLP": matched_mlp(kan)}
        for name, spec in models.items():
            models[name] = dataclasses.replace(spec, lr_shift=choose_lr_shift(spec, task, args.samples))
        for name, spec in models.items():
            for precision in PRECISIONS:
                per_seed = []
                for seed in range(args.seeds):
                    stream = make_stream(task, n_samples=args.samples, seed=seed)
                    pred = run(spec, precision, stream.x, stream.y, seed)
                    m = online_metrics(pred, stream)
                    per_seed.append(m)
                    if seed == 0:
                        curves[(task, name, precision_name(precision))] = (m["window_mse"], stream.switches)
                rec = [r for m in per_seed for r in m["recovery_times"]]
                rows.append({
                    "task": task, "model": name, "params": spec.num_parameters, "lr": f"2^-{spec.lr_shift}",
                    "precision": precision_name(precision),
                    "final_mse": np.mean([m["final_mse"] for m in per_seed]),
                    "mse": np.mean([m["mse"] for m in per_seed]),
                    "recovery": np.mean([r for r in rec if r is not None]) if any(r is not None for r in rec) else None,
                    "never": sum(r is None for r in rec),
                    "accuracy": np.mean([m["accuracy"] for m in per_seed]) if "accuracy" in per_seed[0] else None,
                })
                print(f"{task:18s} {name} {precision_name(precision):18s} mse={rows[-1]['mse']:.3e}", flush=True)
    elapsed = time.perf_counter() - start
    write_table(rows, args, elapsed)
    write_plot(curves, tasks, args.out / "online_learning.png")
    return 0


def write_table(rows, args, elapsed: float) -> None:
    """The markdown table and the KAN-vs-MLP verdict per task and precision."""
    lines = [
        "# Online learning: KAN vs MLP at equal parameter count",
        "",
        f"Measured by `python benchmarks/online_learning.py --samples {args.samples} --seeds {args.seeds}` "
        f"({elapsed:.0f} s on this machine). Each stream is predict-then-update SGD, batch 1. "
        "`mse` is the mean squared error over the whole stream (the running error), `final` over the last "
        "500 samples; `recovery` is the mean number of samples after a switch until the 500-sample error is "
        "back within 1.1× its pre-switch level (`never`: switches after which it did not recover). "
        "Fixed-point rows use `ap_fixed<W,I,AP_RND_CONV,AP_SAT>` for samples, activations, coefficients, errors "
        "and gradients; the ROM types stay at their defaults. Learning rates (2^-s) were chosen per task and model "
        f"on a validation stream (seed {VALIDATION_SEED}) with the <16,6> learner; evaluation seeds are 0..{args.seeds - 1}.",
        "",
        "| task | model | params | lr | precision | mse | final mse | recovery (samples) | never | accuracy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rec = "—" if r["recovery"] is None else f"{r['recovery']:.0f}"
        acc = "—" if r["accuracy"] is None else f"{r['accuracy']:.3f}"
        lines.append(
            f"| {r['task']} | {r['model']} | {r['params']} | {r['lr']} | {r['precision']} | {r['mse']:.3e} | "
            f"{r['final_mse']:.3e} | {rec} | {r['never']} | {acc} |"
        )
    tasks = sorted({r["task"] for r in rows})
    lines += ["", "## KAN vs MLP (lower running mse wins)", "", "| precision | " + " | ".join(tasks) + " | KAN wins |",
              "|---|" + "---|" * (len(tasks) + 1)]
    for p in [precision_name(p) for p in PRECISIONS]:
        cells, wins = [], 0
        for t in tasks:
            k = next(r for r in rows if r["task"] == t and r["model"] == "KAN" and r["precision"] == p)
            m = next(r for r in rows if r["task"] == t and r["model"] == "MLP" and r["precision"] == p)
            win = k["mse"] < m["mse"]
            wins += win
            cells.append(f"{'KAN' if win else 'MLP'} ({m['mse'] / k['mse']:.2f}×)")
        lines.append(f"| {p} | " + " | ".join(cells) + f" | {wins}/{len(tasks)} |")
    lines += ["", "Ratios are MLP mse / KAN mse (above 1: KAN better).", "", "![error curves](online_learning.png)", ""]
    (args.out / "online_learning.md").write_text("\n".join(lines))
    print("\n".join(lines[-len(PRECISIONS) - 6 :]))


def write_plot(curves, tasks, path: Path) -> None:
    """Windowed error against sample index, one panel per task, switches marked."""
    fig, axes = plt.subplots(len(tasks), 1, figsize=(10, 3.2 * len(tasks)), constrained_layout=True)
    styles = {"float": "-", "ap_fixed<16,6>": "--", "ap_fixed<12,4>": "-.", "ap_fixed<8,3>": ":"}
    for ax, task in zip(np.atleast_1d(axes), tasks):
        task_switches: tuple[int, ...] = ()
        for (t, model, prec), (wm, switches) in curves.items():
            if t != task:
                continue
            task_switches = switches
            ax.plot(wm, styles[prec], color="tab:blue" if model == "KAN" else "tab:orange", lw=1.2, label=f"{model} {prec}")
        for s in task_switches:
            ax.axvline(s, color="grey", lw=0.8, alpha=0.6)
        ax.set_yscale("log")
        ax.set_title(task)
        ax.set_ylabel("MSE (500-sample window)")
        ax.legend(ncol=4, fontsize=7)
    np.atleast_1d(axes)[-1].set_xlabel("sample")
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
