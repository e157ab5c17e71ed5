"""Clock estimates against routed timing: Yosys-depth and analytic estimates vs nextpnr-ecp5's routed Fmax.

For each spec of the sweep (widths, grid size, spline order, word width, pipeline ii1 / staged /
masks; KAN and MLP), on the ECP5 LFE5U-85F (ULX3S) at the board's 100 MHz target: emit the RTL,
synthesize it with Yosys synth_ecp5 (resources, and the clock ESTIMATE from logic depth of
codesign/fpga/timing_estimate.py), take the instant analytic estimate (codesign/fpga/estimate.py)
and place and route it with nextpnr-ecp5 (routed Fmax, utilisation, bitstream by ecppack).
Writes the results to docs/ecp5_routed.json (appended one spec at a time; a rerun resumes and
skips the specs whose emitted RTL is unchanged) and the section "Clock estimates against routed
timing (ECP5)" of docs/estimator.md. Progress goes to stderr. One tool runs at a time.

    python benchmarks/ecp5_routed.py                # the whole sweep, resumes (the 2-4-1 specs route for long)
    python benchmarks/ecp5_routed.py --only 'kan 1-1 G4 w8'
    python benchmarks/ecp5_routed.py --cached-only  # the doc from the results JSON alone (no tool run)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from doc_sections import put_block
from estimator_calibration import _folder_hash  # the same RTL-folder hash decides what to redo

from codesign.fpga.boards import find_board
from codesign.fpga.cost import period_model, period_ns
from codesign.fpga.estimate import estimate
from codesign.fpga.placement import Pipeline, parse_pipeline
from codesign.fpga.pnr import check_pnr_target, run_pnr
from codesign.fpga.rtl_emit import emit_rtl, load_rtl_manifest
from codesign.fpga.search import choose_pipeline
from codesign.fpga.synth import netlist_top, run_synth
from codesign.fpga.timing_estimate import critical_path
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec, with_precision

ROOT = Path(__file__).resolve().parents[1]
TARGET = "lfe5u-85f"
ECP5 = find_board(TARGET).family  # its delays and what they assume
SECTION = "ecp5-routed"
TITLE = "Clock estimates against routed timing (ECP5)"


def _spec(kind: type, width: int | None, **fields) -> KANSpec | MLPSpec:
    spec = kind(clock_mhz=find_board(TARGET).clock_mhz, **fields)
    return with_precision(spec, width, 6 if width >= 14 else 4 if width >= 12 else 3) if width is not None else spec


def sweep() -> list[dict]:
    """The calibration specs, smallest first (a short run still covers every kind)."""
    rows = [
        ("kan 1-1 G4 k1 w8", "ii1", KANSpec, 8, dict(widths=(1, 1), grid_size=4, spline_order=1, lut_bits=2)),
        ("kan 1-1 G5 w16", "ii1", KANSpec, None, dict(widths=(1, 1), grid_size=5)),
        ("kan 1-1 G5 w16 staged", "staged", KANSpec, None, dict(widths=(1, 1), grid_size=5)),
        ("kan 1-1 G5 w16 auto", "auto", KANSpec, None, dict(widths=(1, 1), grid_size=5)),
        ("kan 1-1 G8 w12", "ii1", KANSpec, 12, dict(widths=(1, 1), grid_size=8)),
        ("kan 1-1 G8 w12 auto", "auto", KANSpec, 12, dict(widths=(1, 1), grid_size=8)),
        ("kan 1-1 G16 k2 w16", "ii1", KANSpec, None, dict(widths=(1, 1), grid_size=16, spline_order=2)),
        ("kan 1-1 G16 k2 w16 auto", "auto", KANSpec, None, dict(widths=(1, 1), grid_size=16, spline_order=2)),
        ("kan 2-1 G8 w16 auto", "auto", KANSpec, None, dict(widths=(2, 1), grid_size=8)),
        ("kan 2-1 G8 w16", "ii1", KANSpec, None, dict(widths=(2, 1), grid_size=8)),
        ("kan 1-2-1 G8 w12", "ii1", KANSpec, 12, dict(widths=(1, 2, 1), grid_size=8)),
        ("kan 1-2-1 G8 w12 mask1", 1, KANSpec, 12, dict(widths=(1, 2, 1), grid_size=8)),
        ("kan 1-2-1 G8 w12 staged", "staged", KANSpec, 12, dict(widths=(1, 2, 1), grid_size=8)),
        ("kan 1-2-1 G8 w12 auto", "auto", KANSpec, 12, dict(widths=(1, 2, 1), grid_size=8)),
        ("mlp 2-4-1 w16", "ii1", MLPSpec, None, dict(widths=(2, 4, 1))),
        ("mlp 2-4-1 w16 staged", "staged", MLPSpec, None, dict(widths=(2, 4, 1))),
        ("mlp 2-4-1 w16 auto", "auto", MLPSpec, None, dict(widths=(2, 4, 1))),
        ("kan 2-4-1 G8 w16", "ii1", KANSpec, None, dict(widths=(2, 4, 1), grid_size=8)),
        ("kan 2-4-1 G8 w16 staged", "staged", KANSpec, None, dict(widths=(2, 4, 1), grid_size=8)),
        ("kan 2-4-1 G8 w16 auto", "auto", KANSpec, None, dict(widths=(2, 4, 1), grid_size=8)),
    ]
    return [{"name": n, "pipeline": p, "spec": _spec(k, w, **f)} for n, p, k, w, f in rows]


NET_GRID = (0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8)  # ns per routed net, for the one-parameter fit


def periods_by_net(rtl: Path, target: str = TARGET) -> dict[str, float]:
    """The Yosys-depth period of a synthesized RTL folder's netlist for each assumed net delay of NET_GRID."""
    family = find_board(target).family
    netlist = json.loads((rtl / "synth" / "netlist.json").read_text())
    top = netlist_top(load_rtl_manifest(rtl), family)
    return {f"{net:.2f}": critical_path(netlist, top, dataclasses.replace(family.delays, net=net))["period_ns"]
            for net in NET_GRID}


def _load(path: Path, target: str = TARGET) -> dict:
    if not path.is_file():
        return {"target": target, "results": {}}
    return json.loads(path.read_text())


def _save(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.replace(path)  # never a half-written results file


def _placement(row: dict, target: str = TARGET) -> object:
    """The register placement of a row's pipeline on the target (auto chooses for its clock)."""
    return choose_pipeline(row["spec"], find_board(target), row["pipeline"]).placement


def measure(row: dict, work: Path, timeout_s: float = 1800.0, target: str = TARGET) -> dict:
    """Emit, synthesize, estimate, place and route one spec; the figures of all four."""
    spec, pipeline = row["spec"], row["pipeline"]
    board = find_board(target)
    rtl = work / "rtl"
    emit_rtl(spec, rtl, pipeline=_placement(row, target), force=True)  # auto chooses for the target's clock
    rtl_hash = _folder_hash(rtl)
    synth = run_synth(rtl, board, keep_netlist=True, timeout_s=timeout_s)
    by_net = periods_by_net(rtl, target)
    pnr = run_pnr(rtl, board, clock_mhz=spec.clock_mhz, timeout_s=timeout_s)
    analytic = estimate(spec, board, pipeline=pipeline)
    return {
        "name": row["name"], "pipeline": pipeline, "spec": spec.to_dict(), "kind": type(spec).__name__,
        "rtl_hash": rtl_hash, "placement": analytic["pipeline_placement"]["text"],
        "routed_fmax_mhz": pnr["fmax_mhz"], "meets_target": pnr["meets_target"], "clock_target_mhz": spec.clock_mhz,
        "yosys_clock_mhz_estimate": synth["clock_mhz_estimate"],
        "analytic_clock_mhz_estimate": analytic["clock_mhz_estimate"],
        "yosys_period_ns_by_net": by_net,
        "yosys_net_ns": board.family.delays.net,  # the net delay the estimate above was made with
        "cycles": pnr["cycles"],
        "synth": {k: synth[k] for k in ("lut", "lutram", "ff", "dsp", "bram", "critical_path", "seconds")},
        "pnr": {k: pnr[k] for k in ("lut4", "ff", "dsp", "ebr", "utilisation", "critical_path", "harness_registers",
                                   "bitstream_bytes", "seconds", "tool")},
    }


def routed_design(result: dict, target: str = TARGET) -> tuple[KANSpec | MLPSpec, Pipeline]:
    """The spec and the register placement of a stored result, as a build for the target resolves it."""
    spec = spec_from_mapping({"KANSpec": "kan", "MLPSpec": "mlp"}[result["kind"]], result["spec"])
    return spec, choose_pipeline(spec, find_board(target), parse_pipeline(result["placement"])).placement


def analytic_mhz(result: dict, target: str = TARGET) -> float:
    """The analytic model's clock (as shipped now) for the placement a stored result routed."""
    spec, placement = routed_design(result, target)
    return round(1000.0 / period_ns(spec, placement, find_board(target)), 1)


def _pipeline_text(result: dict) -> str:
    """The requested pipeline, and for ``auto`` the placement it chose."""
    return f"auto `{result['placement']}`" if result["pipeline"] == "auto" else str(result["pipeline"])


def _error(estimate_mhz: float, routed_mhz: float) -> float:
    """Relative error of an estimated clock against the routed Fmax, in percent (positive: optimistic)."""
    return 100.0 * (estimate_mhz - routed_mhz) / routed_mhz


def _routing_share(result: dict) -> float:
    cp = result["pnr"]["critical_path"]
    return 100.0 * cp["routing_ns"] / (cp["routing_ns"] + cp["logic_ns"])


def summary(results: list[dict], target: str = TARGET) -> dict:
    """Median, mean and worst error of each estimator against the routed Fmax."""
    out = {}
    estimates = {"yosys_clock_mhz_estimate": [r["yosys_clock_mhz_estimate"] for r in results],
                 "analytic_clock_mhz_estimate": [analytic_mhz(r, target) for r in results]}  # the analytic one as shipped now
    for key, estimated in estimates.items():
        errors = [_error(e, r["routed_fmax_mhz"]) for e, r in zip(estimated, results)]
        absolute = [abs(e) for e in errors]
        out[key] = {
            "specs": len(errors),
            "median_abs_error_percent": round(statistics.median(absolute), 1),
            "worst_abs_error_percent": round(max(absolute), 1),
            "mean_signed_error_percent": round(statistics.fmean(errors), 1),
            "min_signed_error_percent": round(min(errors), 1),
            "max_signed_error_percent": round(max(errors), 1),
        }
    return out


def _nets(results: list[dict]) -> str:
    """The net delay(s) the stored Yosys-depth estimates were made with."""
    nets = sorted({r.get("yosys_net_ns", 0.70) for r in results})
    return " / ".join(f"{n:.2f} ns" for n in nets)


def _interpolated_period(by_net: dict[str, float], net: float) -> float:
    points = sorted((float(k), v) for k, v in by_net.items())
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= net <= x1:
            return y0 + (y1 - y0) * (net - x0) / (x1 - x0)
    raise ValueError(f"net delay {net} outside the grid")


def _best_net(results: list[dict]) -> float:
    """The net delay (ns, to 0.01) that minimizes the squared relative clock errors of these results."""
    grid = [round(NET_GRID[0] + 0.01 * i, 2) for i in range(int(round((NET_GRID[-1] - NET_GRID[0]) / 0.01)) + 1)]

    def cost(net: float) -> float:
        return sum(_error(1000.0 / _interpolated_period(r["yosys_period_ns_by_net"], net), r["routed_fmax_mhz"]) ** 2
                   for r in results)

    return min(grid, key=cost)


def net_fit(results: list[dict]) -> dict | None:
    """A one-parameter calibration: the fitted net delay, and its leave-one-out error against the routed Fmax."""
    usable = [r for r in results if r.get("yosys_period_ns_by_net")]
    if len(usable) < 3:
        return None
    held_out = []
    for i, r in enumerate(usable):
        net = _best_net(usable[:i] + usable[i + 1:])
        held_out.append(_error(1000.0 / _interpolated_period(r["yosys_period_ns_by_net"], net), r["routed_fmax_mhz"]))
    absolute = [abs(e) for e in held_out]
    return {"specs": len(usable), "net_ns": _best_net(usable), "loo_median_abs_error_percent": round(statistics.median(absolute), 1),
            "loo_worst_abs_error_percent": round(max(absolute), 1),
            "loo_min_signed_error_percent": round(min(held_out), 1), "loo_max_signed_error_percent": round(max(held_out), 1)}


def stale_results(data: dict, rows: list[dict] | None = None, target: str = TARGET) -> list[str]:
    """The specs whose stored route was made from other RTL than emit_rtl writes for them today."""
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in sweep() if rows is None else rows:
            previous = data["results"].get(row["name"])
            if previous is None:
                continue
            folder = Path(tmp) / re.sub(r"[^\w.-]+", "_", row["name"])
            emit_rtl(row["spec"], folder, pipeline=_placement(row, target), force=True)
            if previous.get("rtl_hash") != _folder_hash(folder):
                stale.append(row["name"])
    return stale


def error_row(label: str, stats: dict) -> str:
    """One estimator's row of the error table: median, worst, signed range and mean error against the routes."""
    return (f"| {label} | {stats['specs']} | {stats['median_abs_error_percent']:.1f} % | "
            f"{stats['worst_abs_error_percent']:.1f} % | {stats['min_signed_error_percent']:+.1f} % … "
            f"{stats['max_signed_error_percent']:+.1f} % | {stats['mean_signed_error_percent']:+.1f} % |")


def fit_row(fit: dict) -> str:
    """The error table's row of the Yosys-depth estimate with its net delay fitted (leave-one-out)."""
    return (f"| Yosys-depth estimate, net delay fitted, leave-one-out | {fit['specs']} | "
            f"{fit['loo_median_abs_error_percent']:.1f} % | {fit['loo_worst_abs_error_percent']:.1f} % | "
            f"{fit['loo_min_signed_error_percent']:+.1f} % … {fit['loo_max_signed_error_percent']:+.1f} % | — |")


def render(results: list[dict], command: str, stats: dict, fit: dict | None, stale: list[str] | None = None) -> str:
    """The docs/estimator.md section, from the results and their summary and net-delay fit."""
    y, a = stats["yosys_clock_mhz_estimate"], stats["analytic_clock_mhz_estimate"]
    model = period_model(ECP5)
    lines = [
        f"<!-- begin {SECTION} -->",
        f"## {TITLE}",
        "",
        f"Made by `{command}` (Python {platform.python_version()}), target `{TARGET}` "
        f"({find_board(TARGET).part}, ULX3S), every spec at its {results[0]['clock_target_mhz']:g} MHz target; "
        "results per spec in `docs/ecp5_routed.json`.",
        "",
        "No router runs here for UltraScale+, so the clock estimators are checked against the one family whose "
        "router does run here: each spec is synthesized with Yosys `synth_ecp5`, placed and routed with "
        "nextpnr-ecp5 (timing-driven, `--freq` = the target, seed 1; every port registered so the router times "
        "the whole learner loop) and its routed Fmax, from nextpnr's static timing analysis of the routed "
        "design, is compared with",
        "",
        "* the **Yosys-depth estimate** (`codesign build --synth`, codesign/fpga/timing_estimate.py) on the "
        "same netlist, with the ECP5 delay model: " + "; ".join(ECP5.assumptions) + ";",
        "* the **instant analytic estimate** (`codesign estimate`, what `auto` searches with) as shipped now, for the "
        f"placement each spec routed: {model.source}"
        + (" — so its errors here are in sample; the out-of-sample ones are in the next section." if model.routes
           else "; it has seen no ECP5 netlist."),
        "",
        "Error = (estimated clock − routed Fmax) / routed Fmax; positive means the estimate is optimistic.",
        "",
        "| estimator | specs | median abs. error | worst abs. error | signed error range | mean signed error |",
        "|---|---:|---:|---:|---|---:|",
        error_row(f"Yosys-depth estimate, ECP5 delays, {_nets(results)} per net", y),
        error_row("analytic estimate", a),
    ]
    if fit:
        lines += [
            fit_row(fit),
            "",
            f"The last row calibrates the one assumed constant: the net delay that best fits the routed Fmax of all "
            f"{fit['specs']} specs is **{fit['net_ns']:.2f} ns** (against the {_nets(results)} of the first row); each spec's "
            "error there is measured with the net delay fitted to the other specs only (leave-one-out), so it is an "
            "out-of-sample error. The Yosys-depth periods at each assumed net delay are in the results JSON "
            "(`yosys_period_ns_by_net`)."
            + (f" codesign/fpga/timing_estimate.py now ships {ECP5.delays.net:.2f} ns per net (the fit); the first row "
               f"is the estimate as it was made, with {_nets(results)}; a rerun on changed RTL measures the shipped "
               "value out of sample." if f"{ECP5.delays.net:.2f} ns" != _nets(results) else ""),
        ]
    lines += [
        "",
        "| spec | pipeline | II | routed Fmax (MHz) | Yosys-depth est. (MHz) | error | analytic est. (MHz) | error "
        "| routed path logic / route (ns) | LUT4 | FF | MULT18X18D | EBR | nextpnr (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        p = r["pnr"]
        cp = p["critical_path"]
        analytic = analytic_mhz(r)
        lines.append(
            f"| {r['name']} | {_pipeline_text(r)} | {r['cycles']['ii']} | {r['routed_fmax_mhz']:.1f} | "
            f"{r['yosys_clock_mhz_estimate']:.1f} | {_error(r['yosys_clock_mhz_estimate'], r['routed_fmax_mhz']):+.1f} % | "
            f"{analytic:.1f} | {_error(analytic, r['routed_fmax_mhz']):+.1f} % | "
            f"{cp.get('logic_ns', 0):.1f} / {cp.get('routing_ns', 0):.1f} | {p['lut4']:,} | {p['ff']:,} | {p['dsp']} | "
            f"{p['ebr']} | {p['seconds']:.0f} |"
        )
    lines += [
        "",
        *([f"Not in this table (in the sweep, not yet routed): {', '.join(missing)}; "
           "`python benchmarks/ecp5_routed.py` resumes with them.", ""] if (missing := [r["name"] for r in sweep()
                                                                  if r["name"] not in {x["name"] for x in results}]) else []),
        *([f"Routed from other RTL than a build emits for them today (an earlier RTL, or for `auto` the placement an "
           f"earlier clock model chose): {', '.join(stale)}; "
           "`python benchmarks/ecp5_routed.py` routes them again.", ""] if stale else []),
        "LUT4 and FF are nextpnr's placed counts (TRELLIS_COMB, TRELLIS_FF), the FFs including the harness's "
        f"port registers. {sum(r['meets_target'] for r in results)} of {len(results)} specs meet the "
        f"{results[0]['clock_target_mhz']:g} MHz target; the routed critical paths spend "
        f"{statistics.median(_routing_share(r) for r in results):.0f} % of their delay in routing (median).",
        "",
        "**What this says about the UltraScale+ estimate.** It checks the method, not the UltraScale+ constants. "
        "The Yosys-depth estimate walks the mapped netlist the same way on both families: published cell "
        "delays and one assumed delay per routed net. On ECP5, where a router checks it, that estimate was off by "
        f"{y['median_abs_error_percent']:.0f} % (median) and {y['worst_abs_error_percent']:.0f} % (worst) with "
        f"{_nets(results)} per net"
        + (f", and by {fit['loo_median_abs_error_percent']:.0f} % / {fit['loo_worst_abs_error_percent']:.0f} % "
           "once its net delay is calibrated (out of sample)" if fit else "")
        + ". No router checks the UltraScale+ constants (0.40 ns per net, DSP48E2 2.44 ns) here, so an UltraScale+ "
        "clock estimate carries at least the calibrated spread of the method"
        + (f" (±{fit['loo_worst_abs_error_percent']:.0f} %)" if fit else "")
        + f" plus a bias of unknown sign of the size of the uncalibrated ECP5 error (up to {y['worst_abs_error_percent']:.0f} %), "
        "until Vivado's timing of the same RTL measures it. The analytic estimate on ECP5 uses coefficients of its "
        "own, fitted to these routes, so its ECP5 error bounds nothing on UltraScale+; there its error against the "
        "Yosys-depth estimate is the first table of this page.",
        f"<!-- end {SECTION} -->",
        "",
    ]
    return "\n".join(lines)


def route_rows(rows: list[dict], data: dict, results_path: Path, work: str, timeout_s: float, cached_only: bool,
               target: str = TARGET) -> None:
    """Route every row not routed from today's RTL yet (the others are cached), saving the results after each."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(work) if work else Path(tmp)
        for i, row in enumerate(rows, 1):
            name = row["name"]
            folder = base / re.sub(r"[^\w.-]+", "_", name)
            previous = data["results"].get(name)
            if previous is not None:
                emit_rtl(row["spec"], folder / "check", pipeline=_placement(row, target), force=True)
                if previous.get("rtl_hash") == _folder_hash(folder / "check"):
                    print(f"[{i}/{len(rows)}] {name}: cached ({previous['routed_fmax_mhz']} MHz routed)", file=sys.stderr)
                    netlist = folder / "rtl" / "synth" / "netlist.json"
                    if "yosys_period_ns_by_net" not in previous and netlist.is_file():
                        previous["yosys_period_ns_by_net"] = periods_by_net(folder / "rtl", target)  # a result from before the fit
                        _save(results_path, data)
                    continue
            if cached_only:
                continue
            print(f"[{i}/{len(rows)}] {name} ({row['pipeline']}): Yosys, {check_pnr_target(find_board(target)).name} ... "
                  f"({time.perf_counter() - started:.0f} s so far)", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                result = measure(row, folder, timeout_s, target)
            except (RuntimeError, ValueError) as exc:
                print(f"[{i}/{len(rows)}] {name}: FAILED: {exc}", file=sys.stderr)
                continue
            if previous is not None and previous.get("placement") != result["placement"]:
                # auto chose another placement (a refitted clock model): the earlier route stays a measurement
                data.setdefault("superseded", []).append(previous)
            data["results"][name] = result
            _save(results_path, data)
            print(f"[{i}/{len(rows)}] {name}: routed {result['routed_fmax_mhz']} MHz, Yosys-depth est. "
                  f"{result['yosys_clock_mhz_estimate']} MHz, analytic est. {result['analytic_clock_mhz_estimate']} MHz "
                  f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "docs" / "ecp5_routed.json"), help="results JSON (appended, resumed)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "estimator.md"))
    ap.add_argument("--work", default="", help="folder for the RTL and tool outputs (default: a temporary folder)")
    ap.add_argument("--only", default="", help="comma-separated spec names (default: the whole sweep)")
    ap.add_argument("--cached-only", action="store_true", help="no tool run: the doc from the results JSON")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds per tool run; a spec that takes longer is reported and skipped (default 1800)")
    args = ap.parse_args()
    rows = sweep()
    if args.only:
        wanted = {n.strip() for n in args.only.split(",")}
        unknown = wanted - {r["name"] for r in rows}
        if unknown:
            sys.exit(f"ecp5_routed: unknown spec(s) {', '.join(sorted(unknown))}")
        rows = [r for r in rows if r["name"] in wanted]
    results_path = Path(args.results)
    data = _load(results_path)
    route_rows(rows, data, results_path, args.work, args.timeout, args.cached_only)
    order = [r["name"] for r in sweep()]
    results = sorted(data["results"].values(), key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
    if not results:
        sys.exit("ecp5_routed: no results yet")
    data["summary"], data["net_fit"] = summary(results), net_fit(results)  # what docs quote (benchmarks/clock_error_bars.py)
    _save(results_path, data)
    command = "python benchmarks/ecp5_routed.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "")
    text = render(results, command, data["summary"], data["net_fit"], stale_results(data))
    put_block(Path(args.doc), SECTION, text)
    print(text)


if __name__ == "__main__":
    main()
