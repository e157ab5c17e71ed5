"""Robustness sweeps over simulated chips: accuracy vs mismatch level and vs PCM drift time.

Both convert the trained network with :func:`codesign.cim.convert_to_cim` (every
Linear/Conv2d on crossbars, 256×256 tiles, 8-bit DAC and ADC — ``CIMConfig``'s defaults —
biases digital) and run :func:`codesign.cim.evaluate_chips`: each chip is one Monte-Carlo
sample of the hardware, chip k seeded by (seed, layer, k), the same chips at every level.

- mismatch: multiplicative device mismatch w·(1 + σε) at σ = 0, 0.1, …, 0.7 (``MISMATCH_LEVELS``).
- drift: the PCM model (programming noise, drift, 1/f read noise; docs/cim.md) read at 1 s,
  1 h, 1 day, 1 month (30.44 days) and 1 year (365.25 days) after programming, with and
  without global drift compensation; read noise drawn per test batch (``read_noise="per_call"``).

Accuracy per chip on the whole split; a point reports mean, std (population), min and max
over chips.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from codesign.cim.config import CIMConfig, MismatchConfig, PCMConfig
from codesign.cim.dwp.data import Split
from codesign.cim.layers import (
    chip_inputs,
    convert_to_cim,
    drift_model,
    evaluate_chips,
    program_model,
)

__all__ = [
    "DRIFT_TIMES",
    "MISMATCH_LEVELS",
    "SweepPoint",
    "chip_accuracies",
    "drift_sweep",
    "format_sweep",
    "mismatch_sweep",
    "plot_sweeps",
]

MISMATCH_LEVELS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(8))
_DAY = 86400.0
DRIFT_TIMES: dict[str, float] = {"1 s": 1.0, "1 h": 3600.0, "1 day": _DAY, "1 month": 30.44 * _DAY,
                                 "1 year": 365.25 * _DAY}


@dataclass(frozen=True)
class SweepPoint:
    """Accuracy over chips at one sweep point (a mismatch level or a time)."""

    label: str
    x: float
    mean: float
    std: float
    min: float
    max: float


def _check_chips(n_chips: object) -> int:
    if not isinstance(n_chips, int) or isinstance(n_chips, bool) or n_chips < 1:
        raise ValueError(f"n_chips={n_chips!r}: must be a positive integer")
    return n_chips


def chip_accuracies(model: nn.Module, config: CIMConfig, split: Split, n_chips: int = 20, seed: int = 0,
                    t_seconds: float = 0.0, chips_per_pass: int = 5, batch_size: int = 1000) -> torch.Tensor:
    """Accuracy of each of n_chips simulated chips (n_chips,) of a float network under config."""
    _check_chips(n_chips)
    chip = convert_to_cim(model.eval(), config)
    correct = torch.zeros(n_chips)
    for s in range(0, len(split), batch_size):
        x, y = split.x[s : s + batch_size], split.y[s : s + batch_size]
        logits = evaluate_chips(chip, x, seed, n_chips, t_seconds=t_seconds, chips_per_pass=min(chips_per_pass, n_chips))
        correct += (logits.argmax(-1) == y).sum(dim=1).float()
    return correct / len(split)


def _point(label: str, x: float, acc: torch.Tensor) -> SweepPoint:
    return SweepPoint(label, x, float(acc.mean()), float(acc.std(unbiased=False)), float(acc.min()), float(acc.max()))


def mismatch_sweep(model: nn.Module, split: Split, levels: Sequence[float] = MISMATCH_LEVELS, n_chips: int = 20,
                   seed: int = 0) -> list[SweepPoint]:
    """Accuracy over n_chips chips at each multiplicative mismatch level."""
    points = []
    for level in levels:
        config = CIMConfig(device=MismatchConfig(sigma=float(level)))
        points.append(_point(f"{level:g}", float(level), chip_accuracies(model, config, split, n_chips, seed)))
    return points


def drift_sweep(model: nn.Module, split: Split, times: dict[str, float] | None = None, n_chips: int = 20,
                seed: int = 0) -> dict[str, list[SweepPoint]]:
    """Accuracy over n_chips PCM chips at each time, keyed "compensated" and "uncompensated"."""
    times = DRIFT_TIMES if times is None else times
    result: dict[str, list[SweepPoint]] = {}
    for key, compensate in (("compensated", True), ("uncompensated", False)):
        # read noise drawn anew for every test batch: the accuracy averages over read noise within a chip
        config = CIMConfig(device=PCMConfig(), drift_compensation=compensate, read_noise="per_call")
        acc = _aging_accuracies(model, config, split, n_chips, seed, list(times.values()))
        result[key] = [_point(label, float(t), acc[i]) for i, (label, t) in enumerate(times.items())]
    return result


@torch.no_grad()
def _aging_accuracies(model: nn.Module, config: CIMConfig, split: Split, n_chips: int, seed: int,
                      times: list[float], chips_per_pass: int = 5, batch_size: int = 1000) -> torch.Tensor:
    """Accuracy (len(times), n_chips): each group of chips is programmed once and aged through every time."""
    _check_chips(n_chips)
    chip = convert_to_cim(model.eval(), config)
    correct = torch.zeros(len(times), n_chips)
    for first in range(0, n_chips, chips_per_pass):
        count = min(chips_per_pass, n_chips - first)
        program_model(chip, seed, n_chips=count, first_chip=first)  # chip k is the same as evaluate_chips' chip k
        for i, t in enumerate(times):
            drift_model(chip, t)
            for s in range(0, len(split), batch_size):
                x, y = split.x[s : s + batch_size], split.y[s : s + batch_size]
                logits = chip(chip_inputs(x, count)).view(count, x.shape[0], -1)
                correct[i, first : first + count] += (logits.argmax(-1) == y).sum(dim=1).float()
    return correct / len(split)


def format_sweep(points: Sequence[SweepPoint], title: str, x_name: str) -> str:
    """A plain-text table of one sweep (accuracy in %)."""
    lines = [title, f"{x_name:>10s} {'mean %':>8s} {'std':>6s} {'min':>6s} {'max':>6s}"]
    for p in points:
        lines.append(f"{p.label:>10s} {100 * p.mean:8.2f} {100 * p.std:6.2f} {100 * p.min:6.2f} {100 * p.max:6.2f}")
    return "\n".join(lines)


def plot_sweeps(curves: dict[str, Sequence[SweepPoint]], path: str | Path, title: str, x_label: str,
                log_x: bool = False) -> Path:
    """One PNG: accuracy (mean ± std over chips) of each named curve against the sweep variable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.0), dpi=110)
    for name, points in curves.items():
        xs = [p.x for p in points]
        ax.errorbar(xs, [100 * p.mean for p in points], yerr=[100 * p.std for p in points], marker="o",
                    capsize=3, label=name)
    if log_x:
        ax.set_xscale("log")
        ax.set_xticks([p.x for p in next(iter(curves.values()))])
        ax.set_xticklabels([p.label for p in next(iter(curves.values()))])
    ax.set_xlabel(x_label)
    ax.set_ylabel("accuracy % (mean ± std over chips)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
