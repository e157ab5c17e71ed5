"""Fit a family's analytic clock model to its router: ECP5's (or Nexus's) period coefficients from nextpnr's routed Fmax.

The analytic model (codesign/fpga/cost.py) prices each register-to-register stage as a sum of named
delay features; its coefficients were fitted to Yosys's logic-depth estimate on UltraScale+ and, for
any other family, scaled by the DSP delay. This script fits a routed family's own coefficients
(``--target lfe5u-85f``, the default, or ``--target lifcl-40``) to

- the routed periods of benchmarks/ecp5_routed.py's specs (docs/ecp5_routed.json: nextpnr-ecp5; for
  Nexus benchmarks/nexus_routed.py's, docs/nexus_routed.json: nextpnr-nexus), and
- the Yosys-depth periods of benchmarks/estimator_calibration.py's sweep synthesized for the part
  (``--target lfe5u-85f --sweep-only`` caches them; that estimate's net delay is itself fitted to the routes),

by the same non-negative least squares on relative error as the UltraScale+ fit, pulled weakly towards
the scaled UltraScale+ coefficients. Each routed design is then predicted by a fit that never saw it
(leave-one-out: every route of its spec and any synthesized twin left out), which is the error the doc reports.
``--write`` stores the coefficients in codesign/fpga/estimate_coefficients.py (``family_period_ns``).

    nice -n 10 python benchmarks/estimator_calibration.py --target lfe5u-85f --sweep-only --work build/estimator_calibration_ecp5
    python benchmarks/ecp5_routed.py                 # the routed specs (long: the 2-4-1 ones route for 20-25 min)
    python benchmarks/clock_fit.py --write           # fit, check leave-one-out, store, write docs/estimator.md
    python benchmarks/nexus_routed.py && python benchmarks/clock_fit.py --target lifcl-40 --write
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from doc_sections import put_block
from ecp5_routed import routed_design
from estimator_calibration import _folder_hash, fit_period, run_sweep, save_coefficients, sweep

from codesign.fpga.boards import find_board
from codesign.fpga.cost import PeriodModel, resource_counts, scaled_ultrascale_model
from codesign.fpga.estimate import coefficient_table
from codesign.fpga.family import Family
from codesign.fpga.pnr import check_pnr_target
from codesign.fpga.rtl_emit import emit_rtl
from codesign.fpga.search import choose_pipeline

ROOT = Path(__file__).resolve().parents[1]
SIZE_LUTS = (500.0, 1000.0, 2000.0, 4000.0)  # the size factor's threshold and exponent are chosen from these grids
SIZE_EXPONENTS = tuple(round(0.05 * i, 2) for i in range(9))
OVER_YOSYS = 0.20  # the analytic model may not call a placement met that its Yosys-depth estimate misses by more


@dataclass(frozen=True)
class FitTarget:
    """A routed family's part, and where its routes, synthesized sweep, doc section and plot live."""

    board: str  # the part the routes were made on
    name: str  # how the doc names the family: ECP5
    routed: str  # the routed results (docs/...json) and the benchmark that writes them
    benchmark: str
    work: str  # the estimator sweep synthesized for the part
    plot: str
    section: str

    @property
    def family(self) -> Family:
        """The part's family record."""
        return find_board(self.board).family


TARGETS = {
    "lfe5u-85f": FitTarget("lfe5u-85f", "ECP5", "docs/ecp5_routed.json", "benchmarks/ecp5_routed.py",
                           "build/estimator_calibration_ecp5", "docs/clock_fit_ecp5.png", "clock-fit-ecp5"),
    "lifcl-40": FitTarget("lifcl-40", "Nexus", "docs/nexus_routed.json", "benchmarks/nexus_routed.py",
                          "build/estimator_calibration_nexus", "docs/clock_fit_nexus.png", "clock-fit-nexus"),
}


def routed_cases(path: Path, target: FitTarget) -> tuple[list[dict], list[str]]:
    """The routed specs of the results JSON (spec, the placement routed, routed and Yosys-depth periods), and the
    names of those left out: routed from other RTL than emit_rtl writes for that placement today."""
    cases: list[dict] = []
    stale = []
    data = json.loads(path.read_text())
    earlier = [{**r, "name": f"{r['name']} (earlier choice)", "group": r["name"]} for r in data.get("superseded", [])]
    for r in [*data["results"].values(), *earlier]:  # the routes of placements auto no longer chooses count too
        spec, placement = routed_design(r, target.board)
        with tempfile.TemporaryDirectory() as tmp:
            emit_rtl(spec, Path(tmp) / "rtl", pipeline=placement)
            if _folder_hash(Path(tmp) / "rtl") != r["rtl_hash"]:
                stale.append(r["name"])
                continue
        twin = next((c for c in cases if _same_design(c, {"spec": spec, "placement": placement})), None)
        if twin is not None:  # the same design routed under two names (auto chose a named placement): one case
            twin["name"] += f" = {r['name']}"
            continue
        cases.append({"name": r["name"], "group": r.get("group", r["name"]), "source": "routed", "spec": spec, "placement": placement,
                      "period_ns": 1000.0 / r["routed_fmax_mhz"], "yosys_period_ns": 1000.0 / r["yosys_clock_mhz_estimate"]})
    return cases, stale


def synthesized_cases(work: Path, target: FitTarget) -> list[dict]:
    """The estimator sweep's specs synthesized for the part (cached, none run here): their Yosys-depth periods."""
    board = find_board(target.board)
    rows = {row["name"]: row for row in sweep()}
    cases = []
    for r in run_sweep(list(rows.values()), work, target.board, jobs=1, cached_only=True):
        row = rows[r["name"]]
        period = r["synth"]["period_ns_estimate"]
        cases.append({"name": r["name"], "source": "yosys", "spec": row["spec"],
                      "placement": choose_pipeline(row["spec"], board, row["pipeline"]).placement,
                      "period_ns": period, "yosys_period_ns": period})
    return cases


def _same_design(a: dict, b: dict) -> bool:
    """The same RTL: equal specs but for the clock target (which only ``auto`` reads) and the same placement."""
    return replace(a["spec"], clock_mhz=1.0) == replace(b["spec"], clock_mhz=1.0) and a["placement"] == b["placement"]


def predict(model: PeriodModel, case: dict, family: Family) -> float:
    """The period (ns) a model gives a case's placement on the family's part."""
    return model.period_ns(case["spec"], case["placement"], family)


def _luts(case: dict, family: Family) -> int:
    """The design's LUTs by the analytic resource model: the size the model's size factor reads."""
    return resource_counts(case["spec"], case["placement"], family)["lut"]


def fit(routed: list[dict], synthesized: list[dict], prior: dict[str, float], family: Family) -> PeriodModel:
    """A family's period model fitted to these cases: for each size threshold and exponent of the grid, coefficients
    fitted to the Yosys-depth periods and to the routed periods divided by their size factor; the pair whose model
    is closest to the routed periods (squared relative error) wins."""
    best: tuple[float, PeriodModel] | None = None
    for size_luts in SIZE_LUTS:
        for exponent in SIZE_EXPONENTS:
            shape = PeriodModel({}, 1.0, size_luts, exponent)
            cases = [(c["spec"], c["placement"], c["period_ns"] / shape.size_factor(c["luts"])) for c in routed]
            cases += [(c["spec"], c["placement"], c["period_ns"]) for c in synthesized]
            model = PeriodModel(fit_period(cases, prior), 1.0, size_luts, exponent)
            cost = sum(_error(predict(model, c, family), c["period_ns"]) ** 2 for c in routed)
            if best is None or cost < best[0]:
                best = (cost, model)
    assert best is not None
    return best[1]


def _error(period_est: float, period_ref: float) -> float:
    """Relative error of an estimated clock against a reference, in percent of the reference Fmax (positive: optimistic)."""
    return 100.0 * (period_ref / period_est - 1.0)


def _stats(errors: list[float]) -> dict[str, float]:
    absolute = [abs(e) for e in errors]
    return {"specs": len(errors), "median_abs_error_percent": round(statistics.median(absolute), 1),
            "worst_abs_error_percent": round(max(absolute), 1), "mean_signed_error_percent": round(statistics.fmean(errors), 1)}


def evaluate(routed: list[dict], synthesized: list[dict], before: PeriodModel, family: Family) -> dict:
    """Fit on everything; predict each routed spec from a fit without it (nor its synthesized twin)."""
    prior = {k: round(v * before.factor, 5) for k, v in before.coefficients.items()}
    model = fit(routed, synthesized, prior, family)
    rows = []
    for i, held in enumerate(routed):
        print(f"leave-one-out {i + 1}/{len(routed)}: {held['name']}", file=sys.stderr, flush=True)
        # left out with it: the other routes of the same spec (auto's earlier choices) and its synthesized twin
        others = [c for j, c in enumerate(routed) if j != i and c["group"] != held["group"]]
        loo = predict(fit(others, [c for c in synthesized if not _same_design(c, held)], prior, family), held, family)
        rows.append({"name": held["name"], "placement": held["placement"].text, "luts": held["luts"],
                     "routed_mhz": round(1000.0 / held["period_ns"], 2), "yosys_mhz": round(1000.0 / held["yosys_period_ns"], 1),
                     "before_mhz": round(1000.0 / predict(before, held, family), 1),
                     "fitted_mhz": round(1000.0 / predict(model, held, family), 1),
                     "loo_mhz": round(1000.0 / loo, 1), "loo_error_percent": round(_error(loo, held["period_ns"]), 1)})
    return {"model": model, "rows": rows,
            "before": _stats([_error(predict(before, c, family), c["period_ns"]) for c in routed]),
            "fitted": _stats([_error(predict(model, c, family), c["period_ns"]) for c in routed]),
            "loo": _stats([r["loo_error_percent"] for r in rows]),
            "synthesized": _stats([_error(predict(model, c, family), c["period_ns"]) for c in synthesized]) if synthesized else None}


def optimistic_calls(model: PeriodModel, cases: list[dict], target: FitTarget) -> list[str]:
    """The designs the coefficients call met at the board's clock where their Yosys-depth estimate misses it by > 20 %."""
    target_ns = 1000.0 / find_board(target.board).clock_mhz
    return [c["name"] for c in cases
            if predict(model, c, target.family) <= target_ns and c["yosys_period_ns"] > target_ns / (1.0 - OVER_YOSYS)]


def render(result: dict, n_synth: int, optimistic: list[str], command: str, stale: list[str], target: FitTarget) -> str:
    """The docs/estimator.md section."""
    before, loo, fitted, model = result["before"], result["loo"], result["fitted"], result["model"]
    name, part = target.name, find_board(target.board).part
    lines = [
        f"<!-- begin {target.section} -->",
        f"## The analytic clock fitted to routed timing ({name})",
        "",
        f"Made by `{command}` (the routed specs of `{target.benchmark}`, plus {n_synth} specs of the estimator sweep "
        f"synthesized for {part}, whose Yosys-depth periods fill in the shapes nothing routed; each routed design is "
        "predicted by a fit that saw no route of its spec, nor its synthesized twin). The coefficients are stored as "
        f"`family_period_ns.{target.family.key}` in "
        "`codesign/fpga/estimate_coefficients.py`: `codesign estimate`, `auto`'s search and the build's fit check use them "
        f"on {name} parts; families without a fit keep UltraScale+'s, scaled by the DSP delay. Routed nets grow with the design: "
        f"above {model.size_luts:,.0f} LUTs (the analytic LUT count) every path is longer by (LUTs / {model.size_luts:,.0f}) ** "
        f"{model.size_exponent:g}, the threshold and exponent chosen with the coefficients (on the other specs only, for "
        "each leave-one-out prediction).",
        "",
        f"![estimated against routed Fmax]({Path(target.plot).name})",
        "",
        "| analytic clock vs routed Fmax | designs | median abs. error | worst abs. error | mean signed |",
        "|---|---:|---:|---:|---:|",
        f"| before: UltraScale+ coefficients x DSP delay | {before['specs']} | {before['median_abs_error_percent']} % | "
        f"{before['worst_abs_error_percent']} % | {before['mean_signed_error_percent']:+} % |",
        f"| {name} fit, in sample | {fitted['specs']} | {fitted['median_abs_error_percent']} % | "
        f"{fitted['worst_abs_error_percent']} % | {fitted['mean_signed_error_percent']:+} % |",
        f"| **{name} fit, leave-one-out** | {loo['specs']} | **{loo['median_abs_error_percent']} %** | "
        f"**{loo['worst_abs_error_percent']} %** | {loo['mean_signed_error_percent']:+} % |",
    ]
    if result["synthesized"]:
        s = result["synthesized"]
        lines.append(f"| {name} fit vs the Yosys-depth estimate of the synthesized sweep | {s['specs']} | "
                     f"{s['median_abs_error_percent']} % | {s['worst_abs_error_percent']} % | {s['mean_signed_error_percent']:+} % |")
    lines += ["", "Positive errors are optimistic (the estimate above the routed Fmax).", "",
              f"| spec | placement | LUTs (analytic) | routed | Yosys-depth | analytic before | {name} fit | leave-one-out | its error |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['name']} | `{r['placement']}` | {r['luts']:,} | {r['routed_mhz']:.2f} MHz | {r['yosys_mhz']} MHz | "
                     f"{r['before_mhz']} MHz | {r['fitted_mhz']} MHz | {r['loo_mhz']} MHz | {r['loo_error_percent']:+} % |")
    clock = find_board(target.board).clock_mhz
    lines += ["", f"Designs the fit calls met at {clock:g} MHz while their Yosys-depth estimate misses it by more than "
              f"{OVER_YOSYS:.0%}: {', '.join(optimistic) if optimistic else 'none'} (of every routed and synthesized spec).",
              *(["", f"Left out, routed from earlier RTL than the current one: {', '.join(stale)}."] if stale else []),
              "", f"<!-- end {target.section} -->", ""]
    return "\n".join(lines)


def plot(result: dict, path: Path, target: FitTarget) -> None:
    """Estimated against routed Fmax, per routed design: the scaled UltraScale+ model, the Yosys-depth estimate, the fit out of sample."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    routed = [r["routed_mhz"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    top = 1.1 * max(max(routed), *(r["before_mhz"] for r in rows))
    ax.plot([0, top], [0, top], color="black", lw=0.8, label="estimate = routed")
    ax.fill_between([0, top], [0, 0.75 * top], [0, 1.25 * top], color="grey", alpha=0.15, label="±25 %")
    ax.scatter(routed, [r["before_mhz"] for r in rows], marker="x", color="tab:red", label="analytic before (UltraScale+ x DSP delay)")
    ax.scatter(routed, [r["yosys_mhz"] for r in rows], marker="s", s=14, color="tab:grey", label="Yosys-depth estimate")
    ax.scatter(routed, [r["loo_mhz"] for r in rows], marker="o", color="tab:blue", label=f"{target.name} fit, leave-one-out")
    ax.axvline(find_board(target.board).clock_mhz, color="tab:green", lw=0.8, ls="--", label="board clock")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(f"routed Fmax, {check_pnr_target(find_board(target.board)).name} (MHz)")
    ax.set_ylabel("estimated clock (MHz)")
    ax.set_title(f"{find_board(target.board).part}: {len(rows)} routed designs", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="lfe5u-85f", choices=sorted(TARGETS), help="the routed part (default lfe5u-85f)")
    ap.add_argument("--results", default="", help="routed results (default: the target's, e.g. docs/ecp5_routed.json)")
    ap.add_argument("--work", default="", help="the estimator sweep synthesized for the part (benchmarks/estimator_calibration.py "
                    "--target PART --sweep-only; default build/estimator_calibration_<family>)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "estimator.md"))
    ap.add_argument("--write", action="store_true", help="store the coefficients in codesign/fpga/estimate_coefficients.py")
    ap.add_argument("--plot", default="", help="the estimate-against-route plot (default docs/clock_fit_<family>.png)")
    args = ap.parse_args()
    target = TARGETS[args.target]
    family = target.family
    results = Path(args.results or ROOT / target.routed)
    if not results.is_file():
        sys.exit(f"clock_fit: error: {results} does not exist (run {target.benchmark} first)")
    routed, stale = routed_cases(results, target)
    if stale:
        print(f"left out, routed from earlier RTL: {', '.join(stale)}", file=sys.stderr)
    synthesized = synthesized_cases(Path(args.work or ROOT / target.work), target)
    if len(routed) < 3:
        sys.exit(f"clock_fit: error: {len(routed)} routed specs in {results}; the fit needs at least 3")
    for case in routed + synthesized:
        case["luts"] = _luts(case, family)
    print(f"fitting on {len(routed)} routed and {len(synthesized)} synthesized specs ...", file=sys.stderr)
    result = evaluate(routed, synthesized, scaled_ultrascale_model(family), family)  # what the family had before a fit
    model = result["model"]
    optimistic = optimistic_calls(model, routed + synthesized, target)
    if args.write:
        table = dict(coefficient_table())
        table["family_period_ns"] = {**table.get("family_period_ns", {}), family.key: {
            "period_ns": model.coefficients, "size_luts": model.size_luts, "size_exponent": model.size_exponent,
            "routes": len(routed), "routed_specs": len({c["group"] for c in routed}), "synthesized_specs": len(synthesized),
            "leave_one_out": result["loo"]}}
        print(f"wrote {save_coefficients(table)}", file=sys.stderr)
    command = "python benchmarks/clock_fit.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "")
    plot(result, Path(args.plot or ROOT / target.plot), target)
    text = render(result, len(synthesized), optimistic, command, stale, target)
    put_block(Path(args.doc), target.section, text)
    print(text)


if __name__ == "__main__":
    main()
