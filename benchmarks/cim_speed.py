"""Speed of the CIM simulator on CPU: noisy forward vs plain torch, 100-chip Monte-Carlo, programming.

    python benchmarks/cim_speed.py                 # writes docs/cim_speed.md and prints it
    python benchmarks/cim_speed.py --threads 1     # pin torch's CPU threads

1. Forward cost: a CIM model (PCM aged 1 day, 8-bit DAC and ADC, 256x256 tiles, read noise,
   drift compensation) against the same plain torch model, MLP 784-256-128-10 and a small
   CNN (conv16-pool-conv32-pool-fc10 on 1x28x28), batches of 64, 256 and 1024. Plain and
   CIM forwards alternate, so both see the same machine load; medians are compared.
2. Monte-Carlo: an MLP 64-128-10 trained here on scikit-learn's digits (80/20 split,
   random_state=0), then 100 simulated PCM chips evaluated on the 360 test images at one day
   after programming: programming, aging and the batched forward of all chips, timed together.
3. Programming one chip of a 4096x4096 layer (PCM), and aging it to one year.
Needs scikit-learn (pip install scikit-learn).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

from codesign.cim import CIMConfig, Crossbar, MismatchConfig, convert_to_cim, drift_model, evaluate_chips, program_model
from codesign.cim.workloads import build_model

DAY, YEAR = 86400.0, 365.25 * 86400.0


def _load() -> str:
    try:
        return " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def interleaved(plain, cim, reps: int) -> tuple[float, float]:
    """Median seconds of two callables timed alternately."""
    for _ in range(3):
        plain(), cim()
    a, b = [], []
    for _ in range(reps):
        t = time.perf_counter()
        plain()
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        cim()
        b.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


SUMMARY: dict[str, object] = {}


@torch.no_grad()
def forward_cost(reps: int) -> list[str]:
    rows = ["| model | batch | read noise | plain torch (ms) | CIM (ms) | CIM / plain |", "|---|---|---|---|---|---|"]
    ratios: dict[tuple[str, int, str], float] = {}
    for name in ("mlp_mnist", "cnn_mnist"):
        torch.manual_seed(0)
        model, shape = build_model(name)
        model.eval()
        for batch, mode in ((64, "per_call"), (256, "per_call"), (1024, "per_call"), (256, "per_input")):
            cim = convert_to_cim(model, CIMConfig(device="pcm", read_noise=mode))
            program_model(cim, seed=0)
            drift_model(cim, DAY)
            x = torch.rand(batch, *shape)
            n = reps if name.startswith("mlp") else max(5, reps // 5)
            t_plain, t_cim = interleaved(lambda: model(x), lambda: cim(x), n)
            rows.append(f"| {name} | {batch} | {mode} | {t_plain * 1e3:.2f} | {t_cim * 1e3:.2f} | {t_cim / t_plain:.2f} |")
            ratios[(name, batch, mode)] = t_cim / t_plain
            print(rows[-1], flush=True)
    SUMMARY["ratios"] = ratios
    return rows


def digits_split():
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SystemExit("this benchmark needs scikit-learn: pip install scikit-learn") from None
    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target)
    idx_train, idx_test = train_test_split(range(len(y)), test_size=0.2, random_state=0, stratify=data.target)
    return x[idx_train], y[idx_train], x[idx_test], y[idx_test]


def train_mlp(x: torch.Tensor, y: torch.Tensor) -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


def monte_carlo(n_chips: int) -> list[str]:
    x_train, y_train, x_test, y_test = digits_split()
    t = time.perf_counter()
    model = train_mlp(x_train, y_train)
    t_train = time.perf_counter() - t
    with torch.no_grad():
        float_acc = float((model(x_test).argmax(1) == y_test).float().mean())
    rows = ["| device, time | chips | test images | seconds (program + age + forward) | accuracy mean ± std (min) |",
            "|---|---|---|---|---|"]
    for label, config, t_s in (("PCM, 1 day", CIMConfig(device="pcm"), DAY),
                               ("PCM, 1 year", CIMConfig(device="pcm"), YEAR),
                               ("mismatch σ=0.3, t=0", CIMConfig(device=MismatchConfig(sigma=0.3)), 0.0)):
        cim = convert_to_cim(model, config)
        t = time.perf_counter()
        logits = evaluate_chips(cim, x_test, seed=0, n_chips=n_chips, t_seconds=t_s)
        dt = time.perf_counter() - t
        acc = (logits.argmax(-1) == y_test).float().mean(dim=1)
        SUMMARY["chips_seconds"] = max(dt, float(SUMMARY.get("chips_seconds", 0.0)))
        rows.append(f"| {label} | {n_chips} | {len(y_test)} | {dt:.2f} | {100 * float(acc.mean()):.1f} % ± "
                    f"{100 * float(acc.std()):.1f} ({100 * float(acc.min()):.1f} %) |")
        print(rows[-1], flush=True)
    note = (f"MLP 64-128-10 trained in {t_train:.1f} s (Adam, 300 full-batch steps); float accuracy on the "
            f"{len(y_test)} test images: {100 * float_acc:.1f} %.")
    return [note, ""] + rows


def programming(reps: int) -> list[str]:
    torch.manual_seed(0)
    w = torch.randn(4096, 4096) / 64
    rows = ["| step (4096x4096, one PCM chip, 33.5 M devices) | seconds (median) |", "|---|---|"]
    prog, first_age, again = [], [], []
    for _ in range(reps):
        xb = Crossbar(4096, 4096, CIMConfig(device="pcm"))
        t = time.perf_counter()
        xb.program(w, seed=0)
        prog.append(time.perf_counter() - t)
        t = time.perf_counter()
        xb.drift_to(YEAR)
        first_age.append(time.perf_counter() - t)
        t = time.perf_counter()
        xb.drift_to(DAY)
        again.append(time.perf_counter() - t)
        del xb
    SUMMARY["program_seconds"] = statistics.median(prog)
    rows.append(f"| `program(seed)`: tile scaling, programming noise, read-noise level, drift-compensation reference | {statistics.median(prog):.2f} |")
    rows.append(f"| first `drift_to(1 year)`: drift exponents drawn (once per chip), drift, read-noise level, compensation | {statistics.median(first_age):.2f} |")
    rows.append(f"| a later `drift_to(1 day)` | {statistics.median(again):.2f} |")
    for r in rows[2:]:
        print(r, flush=True)
    return rows


def targets(n_chips: int) -> list[str]:
    """The issue's targets next to what this run measured."""
    ratios: dict = SUMMARY["ratios"]  # type: ignore[assignment]
    met = [f"{m} batch {b} ({mode})" for (m, b, mode), r in ratios.items() if r <= 3.0]
    missed = [f"{m} batch {b} ({mode}): {r:.1f}x" for (m, b, mode), r in ratios.items() if r > 3.0]
    chips_s, prog_s = float(SUMMARY["chips_seconds"]), float(SUMMARY["program_seconds"])  # type: ignore[arg-type]
    return [
        "## Targets",
        "",
        f"- noisy forward <= 3x plain: met for {', '.join(met) or 'none'}; not met for {', '.join(missed) or 'none'}.",
        f"- {n_chips} chips of the digits MLP < 30 s: {'met' if chips_s < 30 else 'NOT met'} (slowest case {chips_s:.2f} s).",
        f"- programming a 4096x4096 layer (one chip) < 1 s: {'met' if prog_s < 1 else 'NOT met'} ({prog_s:.2f} s).",
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, help="torch CPU threads (default: torch's default)")
    ap.add_argument("--reps", type=int, default=40, help="timed repetitions of each forward (default 40)")
    ap.add_argument("--chips", type=int, default=100, help="chips of the Monte-Carlo (default 100)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "cim_speed.md")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = _load()
    cmd = "python benchmarks/cim_speed.py" + (f" --threads {args.threads}" if args.threads else "")
    env = (f"Measured by `{cmd}` on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
           f"torch {torch.__version__} with {torch.get_num_threads()} thread(s), Python {platform.python_version()}; "
           f"load average (1/5/15 min) {load_before} at the start")
    sections = [
        "# CIM simulator speed (CPU)", "", env + ".", "",
        "## Noisy forward vs plain torch forward", "",
        "PCM aged one day, 8-bit DAC and ADC, 256x256 tiles, drift compensation on; `per_call` draws the read "
        "noise once per device per forward call, `per_input` independently for every input (second matmul). "
        "Plain and CIM forwards alternate; medians.", "",
        *forward_cost(args.reps), "",
        "## 100 simulated chips on the digits test set", "",
        *monte_carlo(args.chips), "",
        "## Programming a 4096x4096 layer", "",
        *programming(3), "",
        f"Load average at the end: {_load()}.",
        "",
        *targets(args.chips),
    ]
    text = "\n".join(sections) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
