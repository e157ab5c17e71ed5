"""Design-space exploration: sweep a learner's grid size, word width and shape; score each point; keep the Pareto front.

Every point is scored twice: by the online error of the bit-exact reference on a task stream
(codesign.kan.run, codesign.tasks: the mean squared error of predict-then-update over the whole
stream) and by the analytic estimator (codesign.fpga.estimate: resources, cycles, an estimated
clock). The Pareto front minimizes online error, area (the largest utilization of LUT, FF or DSP
on the target part) and time per sample (II x estimated period). With ``synth`` each point's RTL
is also synthesized by Yosys (codesign.fpga.synth) and area and time per sample come from that
synthesis estimate instead. Points run through the sweep runner (codesign.sweep): on ``workers``
local processes (with one worker, in this process) or on Ray; each finished point is appended to
``points.jsonl`` in the output folder, so an interrupted run resumes where it stopped, under
either executor. The folder also gets ``pareto.md`` (the front as a table), ``pareto.png`` and
``explore.json`` (the settings, which a resumed run must match).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codesign.fpga.boards import Board
from codesign.fpga.placement import PIPELINES, Pipeline
from codesign.kan.kinds import kind_of
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.sweep import POINTS_FILE, make_executor, run_sweep
from codesign.sweep.folder import open_sweep_folder
from codesign.tasks import DataStream

__all__ = ["DEFAULT_GRID", "DEFAULT_BITS", "DEFAULT_HIDDEN", "sweep_axes", "design_points", "pareto_front", "explore", "format_front"]

DEFAULT_GRID = (4, 8, 16, 32)
DEFAULT_BITS = (12, 16, 20)
DEFAULT_HIDDEN = {"kan": ((2,), (4,), (8,), (4, 4)), "mlp": ((8,), (16,), (32,), (16, 16))}
SETTINGS_FILE = "explore.json"
OBJECTIVES = ("mse", "area_percent", "ns_per_sample")


def _check_list(name: str, values: Sequence[Any], low: int, high: int) -> tuple:
    if len(values) == 0:
        raise ValueError(f"{name}: give at least one value")
    for v in values:
        items = v if isinstance(v, tuple) else (v,)
        for item in items:
            if isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high:
                raise ValueError(f"{name}={v!r}: every value must be an integer in {low}..{high}")
    return tuple(values)


# A sweep option and the config fields that fix its axis instead.
_AXIS_FIELDS = {"--grid": ("grid_size",), "--bits": ("act_t", "coef_t", "err_t", "grad_t"), "--hidden": ("widths",)}


def sweep_axes(
    base: KANSpec | MLPSpec, fields: dict, grid: Sequence[int] | None, bits: Sequence[int] | None,
    hidden: Sequence[tuple[int, ...]] | None,
) -> tuple[tuple, tuple, tuple]:
    """The grid, bits and hidden axes: an option's values, else the config's one value, else the defaults.

    A field the config sets is not swept (a bits value of None keeps the config's types);
    giving both the field and its option is refused, and --grid is refused on an MLP.
    """
    kan = kind_of(base).has_grid
    given = {"--grid": grid, "--bits": bits, "--hidden": hidden}
    for option, names in _AXIS_FIELDS.items():
        set_here = [n for n in names if n in fields]
        if given[option] is not None and set_here:
            raise ValueError(f"{option} and the config's {', '.join(set_here)} both set what explore sweeps: give one of them")
    if grid is not None and not kan:
        raise ValueError("--grid: an MLP has no grid; sweep --bits or --hidden")
    grids: tuple = tuple(grid) if grid is not None else (
        (base.grid_size,) if "grid_size" in fields and isinstance(base, KANSpec) else DEFAULT_GRID)
    words: tuple = tuple(bits) if bits is not None else (
        (None,) if any(n in fields for n in _AXIS_FIELDS["--bits"]) else DEFAULT_BITS)
    shapes: tuple = tuple(tuple(h) for h in hidden) if hidden is not None else (
        (base.widths[1:-1],) if "widths" in fields else DEFAULT_HIDDEN["kan" if kan else "mlp"])
    return grids, words, shapes


def design_points(
    base: KANSpec | MLPSpec, grid: Sequence[int], bits: Sequence[int], hidden: Sequence[tuple[int, ...]],
    pipelines: Sequence[str] = ("auto",),
) -> list[dict]:
    """The points of the sweep: name, spec fields (grid size, word width, hidden widths) over the base spec, and pipeline.

    Each point's pipeline is resolved as ``codesign build`` resolves it (``auto``: the placement that meets the
    spec's clock on the target); a point named without a suffix is ``auto``'s.
    """
    kan = kind_of(base).has_grid
    if not pipelines or any(p not in PIPELINES for p in pipelines):
        raise ValueError(f"pipelines={tuple(pipelines)!r}: choose from {', '.join(map(repr, PIPELINES))}")
    grid = _check_list("grid", grid, 1, 256) if kan else (None,)
    bits = tuple(bits) if tuple(bits) == (None,) else _check_list("bits", bits, 4, 32)
    hidden = _check_list("hidden", hidden, 1, 1024)
    points = []
    for h in hidden:
        for b in bits:
            for g in grid:
                for pipe in pipelines:
                    shape = "-".join(map(str, (base.n_inputs, *h, base.n_outputs)))
                    name = shape + ("" if b is None else f" {b}b") + (f" G{g}" if kan else "") + ("" if pipe == "auto" else f" {pipe}")
                    points.append({"name": name, "hidden": list(h), "bits": b, "grid_size": g, "pipeline": pipe})
    return points


def _point_spec(base: KANSpec | MLPSpec, point: dict) -> KANSpec | MLPSpec:
    """The spec of one point: the base with its widths, word width (integer bits kept) and grid size replaced."""
    from codesign.kan.spec import with_precision

    widths = (base.n_inputs, *point["hidden"], base.n_outputs)
    spec = dataclasses.replace(base, widths=widths)
    if point["bits"] is not None:  # None: the config's types, not swept
        spec = with_precision(spec, point["bits"], min(base.act_t.int_bits, point["bits"] - 1))
    if point["grid_size"] is not None:
        spec = dataclasses.replace(spec, grid_size=point["grid_size"])
    return spec


@functools.lru_cache(maxsize=4)
def _stream(task: str, samples: int, seed: int, n_inputs: int):
    from codesign.kan.run import stream_options
    from codesign.tasks import make_stream

    return make_stream(task, n_samples=samples, seed=seed, **stream_options(task, n_inputs))


def score_point(base: dict, kind: str, point: dict, board: Board, task: str, samples: int, seed: int,
                synth: bool = False, data: DataStream | None = None) -> dict:
    """Run the reference learner on the task (or ``data``) and the estimator (and with ``synth`` Yosys) on the board for one point."""
    from codesign.fpga.estimate import estimate
    from codesign.fpga.search import choose_pipeline
    from codesign.kan.kinds import spec_from_mapping
    from codesign.kan.run import make_learner
    from codesign.tasks import online_metrics

    started = time.perf_counter()
    result = {"name": point["name"], "point": point}
    try:
        spec = _point_spec(spec_from_mapping(kind, base), point)
    except ValueError as exc:  # e.g. a width whose exact intermediates do not fit: the point is skipped
        return {**result, "skipped": str(exc)}
    stream = _stream(task, samples, seed, spec.n_inputs) if data is None else data
    pred = make_learner(spec, seed=seed).run(stream.x, stream.y, stream.train)
    metrics = online_metrics(pred, stream)
    choice = choose_pipeline(spec, board, point["pipeline"])  # once, as a build chooses it
    est = estimate(spec, board, pipeline=choice)
    area = max(est["utilization_percent"][k] for k in ("lut", "ff", "dsp"))
    result.update({
        "mse": metrics["mse"], "final_mse": metrics["final_mse"], "parameters": spec.num_parameters,
        "area_percent": area, "ns_per_sample": est["ii_ns"], "clock_met": choice.clock_met,
        "placement": choice.placement.text,
        "estimate": {k: est[k] for k in ("lut", "lutram", "ff", "dsp", "bram", "latency_cycles",
                                          "update_latency_cycles", "ii", "clock_mhz_estimate", "latency_ns")},
    })
    if synth:
        result.update(_synth_point(spec, choice.placement, board, seed))
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _synth_point(spec: KANSpec | MLPSpec, placement: Pipeline, board: Board, seed: int) -> dict:
    """Emit the point's RTL into a scratch folder and synthesize it: area and time per sample from Yosys."""
    from codesign.fpga.rtl_emit import emit_rtl
    from codesign.fpga.synth import SYNTH_FIELDS, run_synth

    with tempfile.TemporaryDirectory(prefix="codesign-explore-") as scratch:
        emit_rtl(spec, Path(scratch) / "rtl", pipeline=placement, seed=seed, force=True)
        synth = run_synth(Path(scratch) / "rtl", board)
    area = max(synth["utilization_percent"][k] for k in ("lut", "ff", "dsp") if k in synth["utilization_percent"])
    return {"area_percent": area, "ns_per_sample": synth["ii_ns"],
            "synth": {**{k: synth[k] for k in SYNTH_FIELDS}, "utilization_percent": synth["utilization_percent"],
                      "ii_ns": synth["ii_ns"], "seconds": synth["seconds"]}}


def pareto_front(points: list[dict], objectives: Sequence[str] = OBJECTIVES) -> list[dict]:
    """The points no other point beats in every objective (all minimized), sorted by the first objective.

    A point whose estimated clock misses the target is not a design a build would accept: it is left off.
    """
    scored = [p for p in points if "skipped" not in p and p.get("clock_met", True)
              and all(math.isfinite(p[o]) for o in objectives)]
    front = []
    for p in scored:
        dominated = any(
            all(q[o] <= p[o] for o in objectives) and any(q[o] < p[o] for o in objectives) for q in scored if q is not p
        )
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: tuple(p[o] for o in objectives))


def format_front(front: list[dict], settings: dict, missed: int = 0) -> str:
    """The Pareto front as a Markdown table; ``missed`` points were left off for missing the clock target."""
    synth = bool(settings.get("synth"))
    source = ("Yosys synthesis (codesign.fpga.synth; clock from logic depth, not placed or routed)" if synth else
              "codesign.fpga.estimate (fitted to Yosys; clock from logic depth)")
    lines = [
        f"# Pareto front: {settings['learner']} on {settings['task']}, target {settings['target']}",
        "",
        f"Online error: mean squared error of the bit-exact reference over {settings['samples']:,} samples "
        f"(seed {settings['seed']}). Resources, clock and time per sample: ESTIMATES of {source}; "
        "cycles exact. Area: the largest of LUT (with LUTRAM), FF and DSP utilization. Each point's pipeline is "
        f"chosen as `codesign build` chooses it, for the {settings['clock_mhz']:g} MHz target"
        + (f"; {missed} point(s) whose estimated clock misses it are left off the front." if missed else "."),
        "",
        "| point | params | online MSE | final MSE | LUT | LUTRAM | FF | DSP | area % | pipeline | cycles (pred/upd/II) "
        "| clock MHz (est.) | ns/sample (est.) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for p in front:
        e = p["estimate"]
        r = p["synth"] if synth else e
        lines.append(
            f"| {p['name']} | {p['parameters']:,} | {p['mse']:.4g} | {p['final_mse']:.4g} | {r['lut']:,} | {r['lutram']:,} | "
            f"{r['ff']:,} | {r['dsp']:,} | {p['area_percent']:.3g} | {p['point']['pipeline']} `{p.get('placement', '')}` | "
            f"{e['latency_cycles']}/{e['update_latency_cycles']}/{e['ii']} | "
            f"{r['clock_mhz_estimate']:g} | {p['ns_per_sample']:g} |"
        )
    return "\n".join(lines) + "\n"


def _plot(points: list[dict], front: list[dict], path: Path, settings: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    scored = [p for p in points if "skipped" not in p]
    names = {p["name"] for p in front}
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in ((axes[0], "area_percent", "area (max utilization, %) — estimate"),
                           (axes[1], "ns_per_sample", "time per sample (ns) — estimate")):
        rest = [p for p in scored if p["name"] not in names and p.get("clock_met", True)]
        slow = [p for p in scored if not p.get("clock_met", True)]
        ax.scatter([p[key] for p in rest], [p["mse"] for p in rest], s=14, c="0.65", label="swept point")
        if slow:
            ax.scatter([p[key] for p in slow], [p["mse"] for p in slow], s=14, c="0.65", marker="x",
                       label=f"misses {settings['clock_mhz']:g} MHz (estimate)")
        ax.scatter([p[key] for p in front], [p["mse"] for p in front], s=26, c="C3", label="Pareto front")
        for p in front:
            ax.annotate(p["name"], (p[key], p["mse"]), fontsize=6, xytext=(3, 2), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FormatStrFormatter("%g"))
            axis.set_minor_formatter(FormatStrFormatter("%g"))
        ax.tick_params(which="minor", labelsize=6)
        ax.set_xlabel(label)
        ax.set_ylabel("online MSE (bit-exact reference)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{settings['learner']} on {settings['task']} ({settings['samples']:,} samples), target {settings['target']} "
                 f"at {settings['clock_mhz']:g} MHz", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _describe(r: dict) -> str:
    """A finished point's progress text."""
    if "skipped" in r:
        return f"{r['name']}: skipped: {r['skipped']}"
    source = "synth" if "synth" in r else "estimate"
    cost = r[source]
    clock = "" if r.get("clock_met", True) else f", misses the clock ({r['estimate']['clock_mhz_estimate']:g} MHz est.)"
    return (f"{r['name']}: MSE {r['mse']:.4g}, {cost['lut']:,} LUT, {cost['dsp']} DSP, {r['ns_per_sample']:g} ns/sample "
            f"({source}){clock}")


def explore(
    learner: str = "kan_online",
    target: str = "xcvu9p",
    task: str = "function_tracking",
    out: str | Path = "codesign_out/explore",
    config: str | Path | None = None,
    grid: Sequence[int] | None = None,
    bits: Sequence[int] | None = None,
    hidden: Sequence[tuple[int, ...]] | None = None,
    pipelines: Sequence[str] = ("auto",),
    samples: int = 20_000,
    seed: int = 0,
    workers: int = 2,
    force: bool = False,
    synth: bool = False,
    executor: str = "local",
    ray_address: str | None = None,
    data: DataStream | None = None,
) -> dict[str, Any]:
    """Sweep, score, resume, and write the Pareto front (table, PNG); returns the points, the front and the counts.

    ``executor`` is ``local`` (``workers`` processes) or ``ray`` (``ray_address``, else RAY_ADDRESS,
    else a local Ray with ``workers`` CPUs); the points and the resume file are the same under both.
    ``data`` (a user's file, read at the command line's edge) is the stream of every point instead
    of ``samples`` of ``task``; the base spec's widths come from it unless the config sets them.
    """
    from codesign.config import LEARNERS
    from codesign.fpga.boards import find_board
    from codesign.kan.data_run import data_spec, describe_data
    from codesign.kan.run import task_spec
    from codesign.tasks import check_stream_size

    if data is not None:
        samples, task = len(data), f"data file {data.path}"
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples={samples!r}: need at least one sample")
    runner = make_executor(executor, workers, ray_address)  # a bad executor, Ray or address fails here, before any work
    board = find_board(target)
    if learner not in LEARNERS:
        raise ValueError(f"unknown learner {learner!r}: choose one of {', '.join(LEARNERS)}")
    kind = LEARNERS[learner]
    if data is None:
        check_stream_size(task, samples, streams=workers + 1)
        # a bad task name, or config widths the task cannot take, fail here, before any work
        base, _, fields = task_spec(learner, config, task, 1, seed)
    else:
        base, fields = data_spec(learner, config, data)  # config widths the data cannot take fail here
        print("\n".join(describe_data(base, data)))
    if "clock_mhz" not in fields:
        base = dataclasses.replace(base, clock_mhz=board.clock_mhz)
    grid, bits, hidden = sweep_axes(base, fields, grid, bits, hidden)
    points = design_points(base, grid, bits, hidden, pipelines)
    settings = {"learner": learner, "target": board.name, "clock_mhz": base.clock_mhz, "task": task, "samples": samples,
                "seed": seed, "base_spec": base.to_dict(), "points": [p["name"] for p in points]}
    if synth:  # a run without synthesis does not resume one with it, nor the reverse
        settings["synth"] = True
    if data is not None:  # a run resumes only on the same file's contents
        settings["data"] = {"sha256": data.sha256, "samples": len(data)}
    out = Path(out)
    score = functools.partial(score_point, base.to_dict(), kind, board=board, task=task, samples=samples,
                              seed=seed, synth=synth, data=data)
    with runner:  # joined (a Ray cluster) before the folder is touched, so a failed connection leaves nothing
        folder = open_sweep_folder(out, "explore", settings, SETTINGS_FILE, ("pareto.md", "pareto.png"), force=force)
        # Ctrl-C: the points written so far stay in points.jsonl, the workers are stopped, a rerun resumes
        sweep = run_sweep(score, points, folder.work / POINTS_FILE, runner, tools=("Yosys",) if synth else (),
                          describe=_describe, label="explore")
    done = sweep.records
    work = folder.work
    results = [done[p["name"]] for p in points if p["name"] in done]
    front = pareto_front(results)
    missed = sum(1 for r in results if "skipped" not in r and not r.get("clock_met", True))
    (work / "pareto.md").write_text(format_front(front, settings, missed))
    _plot(results, front, work / "pareto.png", settings)
    folder.commit()
    return {"points": results, "front": front, "out": str(out), "settings": settings, "computed": sweep.computed,
            "failed": list(sweep.failed.values())}
