"""``codesign cim eval --sweep grid``: a checkpoint on chips × times × mismatch levels, through the sweep runner.

Every point is one simulated chip at one time after programming and one mismatch level
(:func:`codesign.cim.dwp.sweep_points.chip_point`), run by codesign.sweep on the local pool
or on Ray, appended to ``points.jsonl`` in the output folder as it finishes. A rerun with the
same checkpoint and seed resumes: only the points not in the file are computed, so a grid can
also grow (more chips, times or levels) without recomputing what is there. The folder also
gets ``grid.json`` (the settings), ``summary.json`` and ``summary.md`` (mean ± std over chips
per time and level) and ``grid.png``.
"""

from __future__ import annotations

import functools
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codesign.cim.config import MismatchConfig
from codesign.cim.crossbar import check_seed, check_time
from codesign.cim.dwp.checkpoint import CHECKPOINT_NAME, load_checkpoint
from codesign.cim.dwp.evaluate import DRIFT_TIMES, SweepPoint, format_sweep, plot_sweeps
from codesign.cim.dwp.sweep_points import checkpoint_digest, chip_point
from codesign.sweep import POINTS_FILE, make_executor, run_sweep
from codesign.sweep.folder import open_sweep_folder
from codesign.sweep.tools import data_set_tool

__all__ = ["DEFAULT_TIMES", "DEFAULT_MISMATCH", "SETTINGS_FILE", "format_counts", "grid_points", "grid_sweep", "summarize"]

DEFAULT_TIMES: tuple[float, ...] = tuple(DRIFT_TIMES.values())  # 1 s, 1 h, 1 day, 1 month, 1 year
DEFAULT_MISMATCH: tuple[float, ...] = (0.0, 0.3, 0.5, 0.7)
SETTINGS_FILE = "grid.json"
OUTPUTS = ("summary.json", "summary.md", "grid.png")
_TIME_LABELS = {t: label for label, t in DRIFT_TIMES.items()}


def _time_label(t: float) -> str:
    return _TIME_LABELS.get(t, f"{t:g} s")


def _checked_axes(chips: int, times: Sequence[float], mismatch: Sequence[float], seed: int) -> None:
    """One-line errors for a grid that cannot run, before any work."""
    if isinstance(chips, bool) or not isinstance(chips, int) or chips < 1:
        raise ValueError(f"--chips {chips!r}: must be a positive integer")
    check_seed(seed)
    for option, values in (("--times", times), ("--mismatch", mismatch)):
        if not values:
            raise ValueError(f"{option}: give at least one value")
        twice = next((v for i, v in enumerate(values) if v in values[:i]), None)
        if twice is not None:
            raise ValueError(f"{option}: {twice:g} is given twice")
    try:
        for t in times:
            check_time(t)
    except ValueError as exc:
        raise ValueError(f"--times: {exc}") from None
    try:
        for sigma in mismatch:
            MismatchConfig(sigma=sigma)
    except ValueError as exc:
        raise ValueError(f"--mismatch: {exc}") from None


def _exact(value: float) -> str:
    """A float as it reads back exactly (31557600, 0.3): a point's name must tell its parameters apart."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def grid_points(chips: int, times: Sequence[float], mismatch: Sequence[float], seed: int) -> list[dict]:
    """The points of the grid: every chip at every time and mismatch level, named by the three (exactly)."""
    return [{"name": f"chip {k}, t {_exact(t)} s, mismatch {_exact(sigma)}", "chip": k, "t_seconds": float(t),
             "mismatch": float(sigma), "seed": seed}
            for sigma in mismatch for t in times for k in range(chips)]


def summarize(records: dict[str, dict], points: Sequence[dict], times: Sequence[float],
              mismatch: Sequence[float]) -> list[dict]:
    """Mean, std (population), min and max of the accuracy over the finished chips of each (time, mismatch)."""
    rows = []
    for sigma in mismatch:
        for t in times:
            acc = [records[p["name"]]["accuracy"] for p in points
                   if p["t_seconds"] == t and p["mismatch"] == sigma and "accuracy" in records.get(p["name"], {})]
            row: dict[str, Any] = {"t_seconds": float(t), "time": _time_label(t), "mismatch": float(sigma),
                                   "chips": len(acc)}
            if acc:
                row.update(mean=statistics.fmean(acc), std=statistics.pstdev(acc), min=min(acc), max=max(acc))
            rows.append(row)
    return rows


def _curves(rows: list[dict]) -> dict[str, Sequence[SweepPoint]]:
    curves: dict[str, list[SweepPoint]] = {}
    for r in rows:
        if r["chips"]:
            curves.setdefault(f"mismatch {r['mismatch']:g}", []).append(
                SweepPoint(r["time"], r["t_seconds"], r["mean"], r["std"], r["min"], r["max"]))
    return dict(curves)


def _describe(record: dict) -> str:
    return f"{record['name']}: {100 * record['accuracy']:.2f} %"


def grid_sweep(checkpoint: str | Path, out: str | Path | None = None, chips: int = 20,
               times: Sequence[float] = DEFAULT_TIMES, mismatch: Sequence[float] = DEFAULT_MISMATCH, seed: int = 0,
               executor: str = "local", workers: int = 2, ray_address: str | None = None,
               force: bool = False) -> dict[str, Any]:
    """Run (or resume) the grid of a checkpoint; returns the printed text, the rows, the counts and the folder."""
    times, mismatch = [float(t) for t in times], [float(s) for s in mismatch]
    _checked_axes(chips, times, mismatch, seed)
    runner = make_executor(executor, workers, ray_address)  # a bad executor, Ray or address fails here
    path = Path(checkpoint)
    result = load_checkpoint(path)  # a file that is no checkpoint fails here, in one line
    data = (path / CHECKPOINT_NAME if path.is_dir() else path).read_bytes()
    cfg = result.config
    out = Path(out) if out is not None else (path if path.is_dir() else path.parent) / "grid"
    settings = {"checkpoint_sha256": checkpoint_digest(data), "dataset": cfg.dataset, "seed": seed,
                "chip": "PCM (drift, 1/f read noise per test batch, global drift compensation), 8-bit DAC/ADC, "
                        "256x256 tiles; multiplicative mismatch on the weights before programming"}
    points = grid_points(chips, times, mismatch, seed)
    with runner:  # joined (a Ray cluster) before the folder is touched, so a failed connection leaves nothing
        folder = open_sweep_folder(out, "cim eval --sweep grid", settings, SETTINGS_FILE, OUTPUTS, force=force)
        # Ctrl-C: the points written so far stay in points.jsonl, the workers are stopped, a rerun resumes
        sweep = run_sweep(functools.partial(chip_point, data), points, folder.work / POINTS_FILE, runner,
                          tools=("torch", data_set_tool(cfg.dataset)), describe=_describe, label="cim eval")
    rows = summarize(sweep.records, points, times, mismatch)
    name = f"{cfg.method} {cfg.model} on {cfg.dataset}"
    where = f"{len(points)} points: {chips} chips x {len(times)} times x {len(mismatch)} mismatch levels, seed {seed}"
    curves = _curves(rows)
    text = "\n\n".join(format_sweep(pts, f"accuracy vs time, PCM with {label}: {name} ({chips} chips, seed {seed})",
                                    "time") for label, pts in curves.items())
    work = folder.work
    (work / "summary.json").write_text(json.dumps({"settings": settings, "chips": chips, "rows": rows}, indent=1) + "\n")
    (work / "summary.md").write_text(f"# {name}: {where}\n\n```\n{text}\n```\n")
    if curves:
        plot_sweeps(curves, work / "grid.png", f"{name}: PCM x mismatch ({chips} chips)", "time after programming",
                    log_x=all(t > 0 for t in times) and len(set(times)) > 1)
    folder.commit()
    return {"text": text, "rows": rows, "out": str(out), "points": len(points), "computed": sweep.computed,
            "failed": list(sweep.failed.values()), "records": {p["name"]: sweep.records[p["name"]] for p in points
                                                               if p["name"] in sweep.records}}


def format_counts(result: dict[str, Any]) -> str:
    """The closing line of the command: points, how many this run computed, where the files are."""
    return (f"{result['points']} points ({result['computed']} computed by this run); summary, plot and points in "
            f"{result['out']}")

