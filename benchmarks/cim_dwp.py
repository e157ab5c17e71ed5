"""DWP vs noise injection vs standard training on digits and MNIST-5k, MLP and CNN; writes docs/cim_dwp.md.

    nice -n 10 python benchmarks/cim_dwp.py        # every part in one process, then the doc
    # or parts in parallel processes, then merge (the commands of the recorded run: docs/cim_dwp.md)
    nice -n 10 python benchmarks/cim_dwp.py --parts digits --save /tmp/digits.pkl
    python benchmarks/cim_dwp.py --merge /tmp/ablation.pkl /tmp/timing.pkl /tmp/digits.pkl ...

Parts:
- ablation: on the VALIDATION split (digits CNN), DWP with each disagreement measure (vote, mi,
  kl) and the noise baseline, accuracy over chips at mismatch 0, 0.5, 0.7;
- timing: process CPU time per training epoch of every method, data set and model;
- digits, mnist5k: 3 methods x {mlp, cnn} (--models), trained on the fit split (wall time
  recorded), evaluated on the TEST split: accuracy vs mismatch 0..0.7 over --chips chips and,
  for MNIST-5k, accuracy vs PCM drift time with and without global drift compensation
  (one training seed: the first of --seeds);
- seeds: 3 methods x --models on --seed-datasets, one network per training seed (--seeds, >= 5
  for a headline figure), each evaluated on the TEST split at --levels over --chips chips seeded
  apart per training seed (chip seed = 1000 + training seed; every method of a seed sees the
  same chips); the report gives mean ± std over seeds of the chip-mean accuracy and the paired
  difference DWP − noise with its standard error (std / sqrt(seeds)); --json keeps every
  per-seed value;
- hwa: MNIST-5k (--models), one network per training seed for standard, noise injection (mismatch,
  K = --k) and hardware-aware training through the default chip (noise_source "chip": PCM, 8-bit
  DAC/ADC, one chip per mini-batch read at 1 day, set before any measurement), each evaluated on the
  PCM model at 1 s, 1 day and 1 year with and without global drift compensation (--drift-chips chips
  seeded 1000 + training seed);
- knobs: DWP's knobs on the digits CNN (--models) at mismatch 0.7: every variant of KNOB_VARIANTS trained
  with --knob-val-seeds and scored on the VALIDATION split only (chips seeded 2000 + seed); the variant
  with the best validation mean is then trained with --seeds and compared with the better of the two noise
  injections (also chosen on validation) on the TEST split (paired over seeds, chips seeded 1000 + seed), DWP − noise ± standard error.
The grid's DWP uses --measure (default mi, fixed before the ablation). One torch thread;
the rewritten section of docs/cim_dwp.md records each command and the machine's load.

Every training run of the ablation, digits, mnist5k, seeds, hwa and knobs parts is one point of
the sweep runner (codesign.sweep; the point is codesign.cim.dwp.sweep_points.training_point):
on --workers local processes (default 1), or on Ray with --executor ray (--ray-address, else
RAY_ADDRESS, else a local Ray with --workers CPUs). Each finished run is appended to a resume
file in --resume-dir, so an interrupted benchmark, rerun with the same options, computes only the
runs that are missing; a point's name carries a digest of its parameters, so a changed option
recomputes the runs it changes. The records are the same under either executor.

    python benchmarks/cim_dwp.py --parts seeds --executor ray --ray-address HOST:6379 --save /tmp/seeds.pkl
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import platform
import sys
import time
from pathlib import Path

import torch

from codesign.cim.dwp.data import load_dataset
from codesign.cim.dwp.evaluate import DRIFT_TIMES, MISMATCH_LEVELS, SweepPoint
from codesign.cim.dwp.sweep_points import training_point
from codesign.cim.dwp.training import TrainConfig, train
from codesign.cim.dwp.weighting import MEASURES
from codesign.sweep import POINTS_FILE, make_executor, run_sweep
from codesign.sweep.resume import named_point
from codesign.sweep.tools import data_set_tool

ROOT = Path(__file__).resolve().parents[1]

METHODS = ("standard", "noise", "dwp")


def _pm(p) -> str:
    return f"{100 * p.mean:.1f} ± {100 * p.std:.1f}"


def _plot_grid(curves, path: Path, title: str, x_label: str, log_x: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(curves)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.6), dpi=100, squeeze=False)
    for ax, key in zip(axes[0], keys):
        for name, points in curves[key].items():
            ax.errorbar([p.x for p in points], [100 * p.mean for p in points], yerr=[100 * p.std for p in points],
                        marker="o", ms=3, capsize=2, label=name)
        if log_x:
            first = next(iter(curves[key].values()))
            ax.set_xscale("log")
            ax.set_xticks([p.x for p in first])
            ax.set_xticklabels([p.label for p in first], fontsize=7)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel(x_label)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("test accuracy % (mean ± std over chips)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _training(label: str, cfg: TrainConfig, split: str, chips: int, chip_seed: int, levels=None, times=None,
              drift_chips: int | None = None) -> dict:
    """One training point of the sweep runner (codesign.cim.dwp.sweep_points.training_point), named by its parameters."""
    params = {"config": cfg.to_dict(), "split": split, "chips": chips, "chip_seed": chip_seed,
              "levels": None if levels is None else [float(v) for v in levels],
              "times": None if times is None else dict(times)}
    if drift_chips is not None:
        params["drift_chips"] = drift_chips
    return named_point(label, params)


def _run_points(args, points: list[dict], tag: str) -> dict[str, dict]:
    """Every point's record, computed on --executor (or read back from the resume file of an earlier run)."""
    folder = Path(args.resume_dir)
    folder.mkdir(parents=True, exist_ok=True)
    datasets = sorted({p["config"]["dataset"] for p in points})
    runner = make_executor(args.executor, args.workers, args.ray_address)
    result = run_sweep(training_point, points, folder / f"{tag}_{POINTS_FILE}", runner,
                       tools=("torch", *(data_set_tool(d) for d in datasets)), label=f"cim_dwp {tag}",
                       describe=lambda r: f"{r['name']}: {r['train_seconds']:.0f} s training")
    if result.failed:
        name, record = next(iter(result.failed.items()))
        raise SystemExit(f"{len(result.failed)} points failed twice (first: {name}: {record['failed']}); "
                         "rerun to try them again")
    return result.records


def _sweep_points(summary: dict, xs: dict | None = None) -> list[SweepPoint]:
    """The SweepPoints of a record's summary ({label: chip_mean, chip_std, ...}); x is the level, or xs[label]."""
    return [SweepPoint(label, float(label) if xs is None else float(xs[label]), v["chip_mean"], v["chip_std"],
                       v["chip_min"], v["chip_max"]) for label, v in summary.items()]


def _compute(args, log) -> dict:
    """The measurements of the parts asked for: every training run is a point of the sweep runner (resumable)."""
    base = TrainConfig(k=args.k, sigma=args.sigma, measure=args.measure)
    res: dict = {"ablation": [], "grid": [], "drift": {}, "mismatch_curves": {}, "drift_curves": {}}
    if "timing" in args.parts:  # CPU time of the process per epoch, here, one run at a time: not a sweep of points
        res["timing"] = []
        for method in METHODS:  # warm-up: first calls pay for lazy imports and allocator growth
            train(base.replace(method=method, model="cnn", epochs=1), data=load_dataset("digits"))
        for dataset in ("digits", "mnist5k"):
            data = load_dataset(dataset)
            for model in args.models:
                for method in METHODS:
                    cfg = base.replace(method=method, dataset=dataset, model=model, epochs=args.timing_epochs)
                    cpu = time.process_time()
                    train(cfg, data=data)
                    res["timing"].append((dataset, model, method, (time.process_time() - cpu) / args.timing_epochs))
                    log(f"timing {dataset} {model} {method}: {res['timing'][-1][3]:.2f} CPU s/epoch")
    ablation, grid, seeded, hwa = [], [], [], []
    if "ablation" in args.parts:  # on the validation split only
        for name, cfg in [("noise", base.replace(method="noise"))] + [
                (f"dwp/{m}", base.replace(method="dwp", measure=m)) for m in MEASURES]:
            cfg = cfg.replace(dataset="digits", model="cnn", epochs=args.epochs_digits)
            ablation.append((name, _training(f"ablation {name}", cfg, "val", args.chips, 0, levels=(0.0, 0.5, 0.7))))
    for dataset in [p for p in ("digits", "mnist5k") if p in args.parts]:
        epochs = args.epochs_digits if dataset == "digits" else args.epochs_mnist
        for model in args.models:
            for method in METHODS:
                cfg = base.replace(method=method, dataset=dataset, model=model, epochs=epochs)
                times = DRIFT_TIMES if dataset == "mnist5k" else None
                grid.append((dataset, model, method, _training(f"{dataset} {model} {method}", cfg, "test", args.chips,
                                                               0, MISMATCH_LEVELS, times, args.drift_chips)))
    if "seeds" in args.parts:
        for dataset in args.seed_datasets:
            epochs = args.epochs_digits if dataset == "digits" else args.epochs_mnist
            for model in args.models:
                for seed in args.seeds:
                    for method in METHODS:
                        cfg = base.replace(method=method, dataset=dataset, model=model, epochs=epochs, seed=seed)
                        seeded.append(_training(f"seeds {dataset} {model} {method} seed {seed}", cfg, "test",
                                                args.chips, 1000 + seed, levels=args.levels))
    if "hwa" in args.parts:
        for model in args.models:
            for seed in args.seeds:
                for name, changes in HWA_METHODS.items():
                    cfg = base.replace(dataset="mnist5k", model=model, epochs=args.epochs_mnist, seed=seed, **changes)
                    hwa.append((name, _training(f"hwa {model} {name} seed {seed}", cfg, "test", args.drift_chips,
                                                1000 + seed, times=HWA_TIMES)))
    points = [p for _, p in ablation] + [p for *_, p in grid] + seeded + [p for _, p in hwa]
    records = _run_points(args, points, "training") if points else {}
    for name, point in ablation:
        r = records[point["name"]]
        res["ablation"].append((name, _sweep_points(r["mismatch"]), r["train_seconds"]))
    for dataset, model, method, point in grid:
        r, key = records[point["name"]], f"{dataset} {model}"
        curve = _sweep_points(r["mismatch"])
        res["mismatch_curves"].setdefault(key, {})[method] = curve
        res["grid"].append((dataset, model, method, r["train_seconds"], r["float_accuracy"], curve))
        if "pcm" in r:
            both = {comp: _sweep_points(summary, DRIFT_TIMES) for comp, summary in r["pcm"].items()}
            res["drift"][(model, method)] = both
            for comp, pts in both.items():
                res["drift_curves"].setdefault(f"{model}, {comp}", {})[method] = pts
    if seeded:
        res["seeded"] = [_seeded_row(records[p["name"]]) for p in seeded]
    if hwa:
        res["hwa"] = [_hwa_row(name, records[p["name"]]) for name, p in hwa]
    if "knobs" in args.parts:
        res["knobs"] = _knobs(args, base, log)
    return res


def _seeded_row(r: dict) -> dict:
    """A seeds-part record as the report reads it."""
    cfg = r["config"]
    return {"dataset": cfg["dataset"], "model": cfg["model"], "method": cfg["method"], "seed": cfg["seed"],
            "epochs": cfg["epochs"], "train_seconds": r["train_seconds"], "float_accuracy": r["float_accuracy"],
            "levels": r["mismatch"]}


def _hwa_row(name: str, r: dict) -> dict:
    """An hwa-part record as the report reads it: the chip-mean accuracy per compensation and time."""
    cfg = r["config"]
    return {"model": cfg["model"], "method": name, "seed": cfg["seed"], "train_seconds": r["train_seconds"],
            "float_accuracy": r["float_accuracy"],
            "pcm": {comp: {label: v["chip_mean"] for label, v in summary.items()} for comp, summary in r["pcm"].items()}}


KNOB_VARIANTS = {  # name: TrainConfig changes (method dwp unless given); "noise" is the reference
    "noise": {"method": "noise"},
    "dwp mi (default)": {},
    "dwp vote": {"measure": "vote"},
    "dwp kl": {"measure": "kl"},
    "dwp mi, strength 1, weight_max 10": {"strength": 1.0, "weight_max": 10.0},
    "dwp mi, K = 8": {"k": 8},
    "dwp mi, training σ = 0.7": {"sigma": 0.7},
    "noise, training σ = 0.7": {"method": "noise", "sigma": 0.7},
}


def _knobs(args, base: TrainConfig, log) -> dict:
    """Validation scores of every variant, the chosen one, and its test comparison with noise injection."""
    model, level = args.models[0], 0.7
    cfg0 = base.replace(method="dwp", dataset="digits", model=model, epochs=args.epochs_digits)
    label = f"{level:g}"

    def scores(split: str, names, seeds, chip_offset: int) -> dict:
        points = {(name, seed): _training(f"knobs {split} {name} seed {seed}", cfg0.replace(seed=seed, **KNOB_VARIANTS[name]),
                                          split, args.chips, chip_offset + seed, levels=(level,))
                  for name in names for seed in seeds}
        records = _run_points(args, list(points.values()), f"knobs_{split}")
        out: dict = {}
        for (name, seed), point in points.items():
            out.setdefault(name, {})[seed] = records[point["name"]]["mismatch"][label]["chip_mean"]
            log(f"knobs {split} {name} seed {seed}: {100 * out[name][seed]:.1f}")
        return out

    val = scores("val", list(KNOB_VARIANTS), args.knob_val_seeds, 2000)
    chosen = max((n for n in KNOB_VARIANTS if n.startswith("dwp")), key=lambda n: sum(val[n].values()))
    reference = max((n for n in KNOB_VARIANTS if n.startswith("noise")), key=lambda n: sum(val[n].values()))
    test = scores("test", (reference, chosen), args.seeds, 1000)
    return {"model": model, "level": level, "validation": val, "chosen": chosen, "reference": reference, "test": test}


def _knobs_report(k: dict) -> list[str]:
    """The validation table of the variants and the test comparison of the chosen one."""
    L = [f"### DWP's knobs, digits {k['model']} at mismatch {k['level']:g} (choice on the VALIDATION split)\n",
         "| variant | validation accuracy, mean ± std over training seeds (%) | seeds |", "|---|---|---|"]
    for name, per_seed in k["validation"].items():
        mean, std = _mean_std([100 * v for v in per_seed.values()])
        L.append(f"| {name} | {mean:.1f} ± {std:.1f} | {len(per_seed)} |")
    noise, chosen = k["test"][k["reference"]], k["test"][k["chosen"]]
    seeds = sorted(set(noise) & set(chosen))
    diff = [100 * (chosen[s] - noise[s]) for s in seeds]
    mean, std = _mean_std(diff)
    se = std / math.sqrt(len(diff))
    c_mean, c_std = _mean_std([100 * chosen[s] for s in seeds])
    n_mean, n_std = _mean_std([100 * noise[s] for s in seeds])
    verdict = "beats" if mean > 2 * se else "does **not** beat"
    L += ["", f"Chosen on validation: **{k['chosen']}**, and as the reference the better noise injection "
          f"(**{k['reference']}**). On the TEST split over {len(seeds)} training seeds: "
          f"{c_mean:.1f} ± {c_std:.1f} % against noise injection {n_mean:.1f} ± {n_std:.1f} %; paired "
          f"difference {mean:+.1f} ± {se:.1f} points (± standard error): it {verdict} noise injection by more "
          "than two standard errors.", ""]
    return L


HWA_TIMES = {"1 s": 1.0, "1 day": 86400.0, "1 year": 365.25 * 86400.0}
HWA_METHODS = {  # name: TrainConfig changes
    "standard": {"method": "standard"},
    "noise (mismatch)": {"method": "noise"},
    "HWA (chip, 1 day)": {"method": "noise", "noise_source": "chip", "k": 1, "train_t_seconds": 86400.0,
                          "chip_sampling": "devices"},  # the published rows: every device programmed
}


def _hwa_report(rows: list[dict]) -> list[str]:
    """Accuracy on PCM over time: mean ± std (and max − min) over training seeds."""
    L = ["### MNIST-5k on PCM after 1 s, 1 day, 1 year: hardware-aware training (TEST split, %)\n",
         "Each cell: mean ± std over training seeds of the accuracy averaged over the chips; max − min over seeds "
         "in brackets. Read noise drawn per test batch (`per_call`); compensation: `global` (aihwkit's probe).\n",
         "| model | training | compensation | seeds | " + " | ".join(HWA_TIMES) + " |",
         "|---|---|---|---|" + "---|" * len(HWA_TIMES)]
    for model in dict.fromkeys(r["model"] for r in rows):
        for name in HWA_METHODS:
            for comp in ("compensated", "uncompensated"):
                sel = [r for r in rows if r["model"] == model and r["method"] == name]
                cells = []
                for label in HWA_TIMES:
                    vals = [100 * r["pcm"][comp][label] for r in sel]
                    mean, std = _mean_std(vals)
                    cells.append(f"{mean:.1f} ± {std:.1f} [{max(vals) - min(vals):.1f}]")
                L.append(f"| {model} | {name} | {comp} | {len(sel)} | " + " | ".join(cells) + " |")
    return L + [""]


def _mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample std (n − 1) of a list."""
    n = len(values)
    mean = sum(values) / n
    return mean, (math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else float("nan"))


def _seeded_report(rows: list[dict]) -> list[str]:
    """Tables over training seeds: accuracy mean ± std per method and level; DWP − noise/standard with SE."""
    levels = list(rows[0]["levels"])
    setups = list(dict.fromkeys((r["dataset"], r["model"]) for r in rows))
    acc = {}
    for r in rows:
        for lv in levels:
            acc.setdefault((r["dataset"], r["model"], r["method"], lv), {})[r["seed"]] = r["levels"][lv]["chip_mean"]
    L = ["### Accuracy vs mismatch over training seeds (TEST split, %)\n",
         "Each cell: mean ± std over training seeds of the accuracy averaged over the chips (every seed has its own "
         "chips, the same for every method of that seed). Per-seed values: the JSON written with `--json` "
         "(docs/cim_dwp_seeds.json).\n",
         "| data | model | method | seeds | " + " | ".join(f"σ={lv}" for lv in levels) + " |",
         "|---|---|---|---|" + "---|" * len(levels)]
    for d, m in setups:
        for meth in METHODS:
            cells = []
            for lv in levels:
                mean, std = _mean_std(list(acc[(d, m, meth, lv)].values()))
                cells.append(f"{100 * mean:.1f} ± {100 * std:.1f}")
            L.append(f"| {d} | {m} | {meth} | {len(acc[(d, m, meth, levels[0])])} | " + " | ".join(cells) + " |")
    L += ["", "Paired differences over the same training seeds, mean ± standard error (std / sqrt(seeds)), points:\n",
          "| data | model | σ | DWP − noise | DWP − standard | noise − standard | DWP − noise > 2 SE? |",
          "|---|---|---|---|---|---|---|"]
    for d, m in setups:
        for lv in levels:
            if lv == "0":
                continue
            cells, verdict = [], ""
            for a, b in (("dwp", "noise"), ("dwp", "standard"), ("noise", "standard")):
                seeds = sorted(set(acc[(d, m, a, lv)]) & set(acc[(d, m, b, lv)]))
                diff = [100 * (acc[(d, m, a, lv)][s] - acc[(d, m, b, lv)][s]) for s in seeds]
                mean, std = _mean_std(diff)
                se = std / math.sqrt(len(diff))
                cells.append(f"{mean:+.1f} ± {se:.1f}")
                if (a, b) == ("dwp", "noise"):
                    verdict = "yes" if mean > 2 * se else "no"
            L.append(f"| {d} | {m} | {lv} | " + " | ".join(cells) + f" | {verdict} |")
    return L + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["ablation", "timing", "digits", "mnist5k"],
                        help="ablation, timing, digits, mnist5k (default all)")
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], help="mlp, cnn (default both)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4],
                        help="training seeds of the seeds part (default 0..4)")
    parser.add_argument("--seed-datasets", nargs="+", default=["digits"], help="data sets of the seeds part")
    parser.add_argument("--levels", nargs="+", type=float, default=[0.0, 0.5, 0.7],
                        help="mismatch levels of the seeds part (default 0 0.5 0.7)")
    parser.add_argument("--knob-val-seeds", nargs="+", type=int, default=[0, 1, 2],
                        help="training seeds of the knobs part's validation runs (default 0 1 2)")
    parser.add_argument("--json", help="write the per-seed records of the seeds part to this JSON file")
    parser.add_argument("--epochs-digits", type=int, default=30)
    parser.add_argument("--epochs-mnist", type=int, default=8)
    parser.add_argument("--timing-epochs", type=int, default=2, help="epochs per run of the timing part (default 2)")
    parser.add_argument("--chips", type=int, default=20, help="chips per mismatch point (default 20)")
    parser.add_argument("--drift-chips", type=int, default=20, help="chips per drift point (default 20)")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--sigma", type=float, default=0.5)
    parser.add_argument("--measure", default="mi", help="DWP measure of the grid (default mi)")
    parser.add_argument("--save", help="write the measurements of --parts to this pickle instead of the doc")
    parser.add_argument("--merge", nargs="+", help="write the doc from pickles of parts run in parallel")
    parser.add_argument("--out", default=str(ROOT / "docs" / "cim_dwp.md"))
    parser.add_argument("--executor", default="local", help="where training points run: local (default) or ray")
    parser.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--workers", type=int, default=1,
                        help="local worker processes, or a local Ray's CPUs (default 1: one run at a time)")
    parser.add_argument("--resume-dir", default=str(ROOT / "codesign_out" / "cim_dwp_points"),
                        help="folder of the resume files (<tag>_points.jsonl): a rerun computes only the points "
                        "not there (a point's name carries a digest of its parameters)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    start = time.time()

    def log(msg: str) -> None:
        print(f"[{time.time() - start:7.1f} s] {msg}", file=sys.stderr, flush=True)

    if args.merge:
        parts = [pickle.loads(Path(p).read_bytes()) for p in args.merge]
    else:
        load_start = os.getloadavg()
        res = _compute(args, log)
        niceness = os.nice(0)
        prefix = f"nice -n {niceness} python" if niceness else "python"
        res.update(command=f"{prefix} benchmarks/cim_dwp.py" + "".join(f" {a}" for a in sys.argv[1:]),
                   seconds=time.time() - start, load=(load_start[0], os.getloadavg()[0]), args=vars(args))
        if args.json and (res.get("seeded") or res.get("hwa") or res.get("knobs")):
            rows = res.get("seeded") or res.get("hwa") or res.get("knobs")
            Path(args.json).write_text(json.dumps({"command": res["command"], "rows": rows}, indent=1))
            log(f"wrote {args.json}")
        if args.save:
            Path(args.save).write_bytes(pickle.dumps(res))
            log(f"saved {args.save}")
            return 0
        parts = [res]
    merged: dict = {"knobs": None, "hwa": [], "seeded": [], "ablation": [], "grid": [], "timing": [], "drift": {},
                    "mismatch_curves": {}, "drift_curves": {}}
    for part in parts:
        merged["seeded"] += part.get("seeded", [])
        merged["hwa"] += part.get("hwa", [])
        merged["knobs"] = part.get("knobs") or merged["knobs"]
        merged["ablation"] += part["ablation"]
        merged["grid"] += part["grid"]
        merged["timing"] += part.get("timing", [])
        merged["drift"].update(part["drift"])
        merged["mismatch_curves"].update(part["mismatch_curves"])
        for key, curves in part["drift_curves"].items():
            merged["drift_curves"].setdefault(key, {}).update(curves)
    stem = out.with_suffix("")
    mismatch_png, drift_png = Path(f"{stem}_mismatch.png"), Path(f"{stem}_drift.png")
    if merged["mismatch_curves"]:
        _plot_grid(merged["mismatch_curves"], mismatch_png, "accuracy vs multiplicative mismatch (test split)",
                   "mismatch σ", False)
    if merged["drift_curves"]:
        _plot_grid(merged["drift_curves"], drift_png, "MNIST-5k on PCM: accuracy vs time after programming (test split)",
                   "time", True)
    if merged["knobs"]:
        commands = "\n".join(f"- `{part['command']}`: {part['seconds'] / 60:.1f} min wall" for part in parts
                              if part.get("knobs"))
        head = (f"## DWP's knobs, chosen on validation\n\nMeasured on {time.strftime('%Y-%m-%d', time.gmtime())}, "
                "one torch thread; `python benchmarks/cim_dwp.py --merge ...` wrote this section from:\n\n")
        _write_between_markers(out, head + f"{commands}\n\n" + "\n".join(_knobs_report(merged["knobs"])),
                               KNOBS_BEGIN, KNOBS_END, before=BEGIN)
        log(f"wrote the knobs section of {out}")
    if merged["hwa"]:
        commands = "\n".join(f"- `{part['command']}`: {part['seconds'] / 60:.1f} min wall" for part in parts
                              if part.get("hwa"))
        head = (f"## Hardware-aware training on PCM, over training seeds\n\nMeasured on "
                f"{time.strftime('%Y-%m-%d', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores shared with "
                "other jobs, one torch thread; `python benchmarks/cim_dwp.py --merge ...` wrote this section from:\n\n")
        _write_between_markers(out, head + f"{commands}\n\n" + "\n".join(_hwa_report(merged["hwa"])),
                               HWA_BEGIN, HWA_END, before=BEGIN)
        log(f"wrote the HWA section of {out}")
    if merged["seeded"]:
        commands = "\n".join(f"- `{part['command']}`: {part['seconds'] / 60:.1f} min wall, load average "
                              f"{part['load'][0]:.1f} at the start, {part['load'][1]:.1f} at the end"
                              for part in parts if part.get("seeded"))
        seeded = (f"## Measured over training seeds\n\nMeasured on {time.strftime('%Y-%m-%d', time.gmtime())}, "
                  f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs, one torch thread; "
                  f"`python benchmarks/cim_dwp.py --merge ...` wrote this section from:\n\n{commands}\n\n"
                  + "\n".join(_seeded_report(merged["seeded"])))
        _write_between_markers(out, seeded, SEEDED_BEGIN, SEEDED_END, before=BEGIN)
        log(f"wrote the seeded section of {out}")
    if merged["grid"] or merged["ablation"] or merged["timing"]:
        _write_between_markers(out, _report(parts, merged, mismatch_png.name, drift_png.name))
        log(f"wrote {out}, {mismatch_png.name}, {drift_png.name}")
    return 0


def parts_timing_epochs(parts) -> int:
    """Epochs per run of the timing part."""
    return next(p["args"]["timing_epochs"] for p in parts if "timing" in p["args"]["parts"])


BEGIN, END = "<!-- results: written by benchmarks/cim_dwp.py -->", "<!-- end of results -->"
KNOBS_BEGIN, KNOBS_END = "<!-- knobs results: written by benchmarks/cim_dwp.py -->", "<!-- end of knobs results -->"
HWA_BEGIN, HWA_END = "<!-- hwa results: written by benchmarks/cim_dwp.py -->", "<!-- end of hwa results -->"
SEEDED_BEGIN, SEEDED_END = "<!-- seeded results: written by benchmarks/cim_dwp.py -->", "<!-- end of seeded results -->"


def _write_between_markers(out: Path, report: str, begin: str = BEGIN, end: str = END,
                           before: str | None = None) -> None:
    """Replace a results section of out (between its markers), or insert one (before the marker `before`
    when the file has it, else at the end); the rest stays."""
    text = out.read_text() if out.exists() else ""
    block = f"{begin}\n{report}{end}\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1].lstrip("\n")
    elif before is not None and before in text:
        head, rest = text.split(before, 1)
        text = head + block + before + rest
    else:
        text = text + ("\n" if text else "") + block
    out.write_text(text)


def _report(parts, merged, mismatch_png, drift_png) -> str:
    first = dict(parts[0]["args"])
    for part in parts:  # each data set's epochs from the part that trained on it
        if {"ablation", "digits"} & set(part["args"]["parts"]):
            first["epochs_digits"] = part["args"]["epochs_digits"]
        if "mnist5k" in part["args"]["parts"]:
            first["epochs_mnist"] = part["args"]["epochs_mnist"]
            first["drift_chips"] = part["args"]["drift_chips"]
    base = TrainConfig(k=first["k"], sigma=first["sigma"], measure=first["measure"])
    ablation_rows, grid, drift = merged["ablation"], merged["grid"], merged["drift"]
    L = ["## Measured results\n"]
    L.append(f"Measured on {time.strftime('%Y-%m-%d', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores "
             "shared with other jobs, one torch thread per process; the parts ran as separate processes (most of them side by side), "
             "then `python benchmarks/cim_dwp.py --merge ...` wrote this section:\n")
    for part in parts:
        L.append(f"- `{part['command']}`: {part['seconds'] / 60:.1f} min wall, load average "
                 f"{part['load'][0]:.1f} at the start, {part['load'][1]:.1f} at the end")
    L.append(f"\nTraining: Adam lr {base.lr}, batch {base.batch_size}, {first['epochs_digits']} epochs (digits) / "
             f"{first['epochs_mnist']} epochs (MNIST-5k), seed {base.seed}; noise and DWP: K = {base.k} realizations, "
             f"training mismatch σ = {base.sigma}; DWP: measure `{base.measure}`, strength {base.strength}, "
             f"weight_max {base.weight_max}. Evaluation: {first['chips']} chips per mismatch point, "
             f"{first.get('drift_chips', first['chips'])} per drift point, 8-bit DAC/ADC, 256×256 tiles. "
             "Training times are wall-clock on the shared machine (their ratios are the meaningful part, and even "
             "they move with the load).\n")
    measure = base.measure
    if ablation_rows:
        L.append("### Ablation of the disagreement measure (digits CNN, VALIDATION split)\n")
        L.append("| training | val acc σ=0 | σ=0.5 | σ=0.7 | train s |")
        L.append("|---|---|---|---|---|")
        for name, points, seconds in ablation_rows:
            L.append(f"| {name} | {_pm(points[0])} | {_pm(points[1])} | {_pm(points[2])} | {seconds:.0f} |")
        best = max((r for r in ablation_rows if r[0].startswith("dwp/")), key=lambda r: r[1][-1].mean)[0][4:]
        L.append(f"\nThe grid uses `{measure}`, chosen before this ablation; the best measure on the validation "
                 f"split at σ = 0.7 here is `{best}`.\n")
    L.append("### Accuracy vs mismatch (TEST split, mean ± std over chips, %)\n")
    L.append("| data | model | method | float | " + " | ".join(f"σ={lv:g}" for lv in MISMATCH_LEVELS)
             + " | train s | × standard |")
    L.append("|---|---|---|---|" + "---|" * len(MISMATCH_LEVELS) + "---|---|")
    std_time = {(d, m): s for d, m, meth, s, _, _ in grid if meth == "standard"}
    for d, m, meth, seconds, float_acc, points in grid:
        L.append(f"| {d} | {m} | {meth} | {100 * float_acc:.1f} | " + " | ".join(_pm(p) for p in points)
                 + f" | {seconds:.1f} | {seconds / std_time[(d, m)]:.1f} |")
    L.append(f"\n![accuracy vs mismatch]({mismatch_png})\n")
    L.append("### Accuracy vs PCM drift time, MNIST-5k (TEST split, mean ± std over chips, %)\n")
    L.append("| model | method | compensation | " + " | ".join(DRIFT_TIMES) + " | max − min |")
    L.append("|---|---|---|" + "---|" * len(DRIFT_TIMES) + "---|")
    for (m, meth), both in drift.items():
        for comp, points in both.items():
            spread = 100 * (max(p.mean for p in points) - min(p.mean for p in points))
            L.append(f"| {m} | {meth} | {comp} | " + " | ".join(_pm(p) for p in points) + f" | {spread:.1f} |")
    L.append(f"\n![accuracy vs time]({drift_png})\n")
    cpu = {(d, m, meth): sec for d, m, meth, sec in merged["timing"]}
    if cpu:
        L.append("### Training cost: CPU time per epoch (one thread, process time)\n")
        L.append("Wall-clock times above moved with the machine's load (the parts ran side by side with other "
                 "jobs); the process CPU time of a separate run (`--parts timing`, "
                 f"{parts_timing_epochs(parts)} epochs per run) is the steadier measure of cost.\n")
        L.append("| data | model | standard s/epoch | noise s/epoch | dwp s/epoch | noise × standard | dwp × standard |")
        L.append("|---|---|---|---|---|---|---|")
        for d, m in dict.fromkeys((d, m) for d, m, _ in cpu):
            st, no, dw = cpu[(d, m, "standard")], cpu[(d, m, "noise")], cpu[(d, m, "dwp")]
            L.append(f"| {d} | {m} | {st:.2f} | {no:.2f} | {dw:.2f} | {no / st:.1f} | {dw / st:.1f} |")
        L.append("")
    L.append("### Targets\n")
    at07 = {(d, m, meth): points[-1].mean for d, m, meth, _, _, points in grid}
    times = {(d, m, meth): s for d, m, meth, s, _, _ in grid}
    for d, m in dict.fromkeys((d, m) for d, m, _, _, _, _ in grid):
        gain_std = 100 * (at07[(d, m, "dwp")] - at07[(d, m, "standard")])
        gain_noise = 100 * (at07[(d, m, "dwp")] - at07[(d, m, "noise")])
        if (d, m, "dwp") in cpu:
            ratio, how = cpu[(d, m, "dwp")] / cpu[(d, m, "standard")], "CPU time"
        else:
            ratio, how = times[(d, m, "dwp")] / times[(d, m, "standard")], "wall time"
        L.append(f"- {d} {m}: at σ = 0.7 DWP − standard = {gain_std:+.1f} points (target ≥ +15: "
                 f"{'met' if gain_std >= 15 else 'NOT met'}), DWP − noise = {gain_noise:+.1f} points; "
                 f"DWP training {how} {ratio:.1f}× standard (target ≤ {base.k + 1}: "
                 f"{'met' if ratio <= base.k + 1 else 'NOT met'}).")
    for (m, meth), both in drift.items():
        if meth != "dwp":
            continue
        comp = both["compensated"]
        low = 100 * min(p.mean for p in comp)
        spread = 100 * (max(p.mean for p in comp)) - low
        ok = low >= 90 and spread <= 4
        L.append(f"- MNIST-5k {m}, DWP, PCM with compensation over 1 s .. 1 year: lowest mean {low:.1f} %, "
                 f"max − min {spread:.1f} points (target ≥ 90 % and ≤ 4: {'met' if ok else 'NOT met'}).")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
