"""Clock estimates against routed timing on a second family: Lattice Nexus (LIFCL-40) through nextpnr-nexus.

The specs of benchmarks/ecp5_routed.py's sweep that fit the LIFCL-40's 56 multipliers (all but the
2-4-1 KAN at ii1 and staged, 116 each; its auto placement shares products), at the board's 100 MHz
target: each is emitted, synthesized with Yosys synth_nexus inside the serial port-register
harness, estimated (Yosys-depth on the netlist with the Nexus delays of board_files/families.toml,
and the instant analytic estimate), then placed and routed with nextpnr-nexus on the board file's
three pins and packed by prjoxide. Writes docs/nexus_routed.json (resumed: a spec whose emitted RTL
is unchanged is not routed again) and the section "Clock estimates against routed timing (Nexus)"
of docs/estimator.md, beside the ECP5 route of the same spec. Progress goes to stderr. One tool
runs at a time. benchmarks/clock_fit.py --target lifcl-40 fits the analytic clock to these routes;
after a refit, the auto placements it changes are routed again (the earlier routes kept as
``superseded``) until none changes.

    python benchmarks/nexus_routed.py                # the sweep (about 20 min), resumes
    python benchmarks/nexus_routed.py --cached-only  # the doc from the results JSON alone
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import sys
from pathlib import Path

from doc_sections import put_block
from ecp5_routed import (
    _error,
    _load,
    _pipeline_text,
    _placement,
    _routing_share,
    _save,
    analytic_mhz,
    error_row,
    fit_row,
    net_fit,
    route_rows,
    stale_results,
    summary,
    sweep,
)

from codesign.fpga.boards import find_board
from codesign.fpga.cost import period_model, resource_counts

ROOT = Path(__file__).resolve().parents[1]
TARGET = "lifcl-40"
SECTION = "nexus-routed"
TITLE = "Clock estimates against routed timing (Nexus)"


def nexus_sweep() -> list[dict]:
    """The ECP5 sweep's specs that fit the part's multipliers (the analytic DSP count decides: exact on ECP5)."""
    board = find_board(TARGET)
    return [row for row in sweep()
            if resource_counts(row["spec"], _placement(row, TARGET), board.family)["dsp"] <= board.dsp]


def render(results: list[dict], command: str, stats: dict, fit: dict | None, ecp5: dict, stale: list[str]) -> str:
    """The docs/estimator.md section: the error table, the fit, and each spec beside its ECP5 route."""
    board = find_board(TARGET)
    family = board.family
    nets = sorted({r["yosys_net_ns"] for r in results})
    made_with = " / ".join(f"{n:.2f} ns" for n in nets)
    lines = [
        f"<!-- begin {SECTION} -->",
        f"## {TITLE}",
        "",
        f"Made by `{command}` (Python {platform.python_version()}), target `{TARGET}` ({board.part}, {board.board}), "
        f"every spec at its {results[0]['clock_target_mhz']:g} MHz target; results per spec in `docs/nexus_routed.json`.",
        "",
        "The second routed family, from its board file (`board_files/lifcl-40.toml`) and its delay data "
        "(`[nexus]` in `board_files/families.toml`) alone: Yosys `synth_nexus`, the learner inside the serial "
        "port-register harness (every port registered, three pins placed by the board file), nextpnr-nexus 0.11.1 "
        "(timing-driven, `--freq` = the target, seed 1; it times the MULT18X18 cores and the distributed RAM from its "
        "prjoxide database) and prjoxide for the bitstream. The specs are the ECP5 sweep's that fit the part's 56 "
        "multipliers by the analytic count (the 2-4-1 KAN takes 116 at ii1 and staged; `auto` shares products to fit it). "
        "Estimates compared with the routed Fmax:",
        "",
        "* the **Yosys-depth estimate** on the same netlist with the Nexus delays: " + "; ".join(family.assumptions) + ";",
        f"* the **instant analytic estimate** as shipped now, for the placement each spec routed: {period_model(family).source}"
        + (" — so its errors here are in sample; the out-of-sample ones are in the section after this one." if period_model(family).routes
           else "; it has seen no Nexus route."),
        "",
        "Error = (estimated clock − routed Fmax) / routed Fmax; positive means the estimate is optimistic.",
        "",
        "| estimator | specs | median abs. error | worst abs. error | signed error range | mean signed error |",
        "|---|---:|---:|---:|---|---:|",
        error_row(f"Yosys-depth estimate, Nexus delays, {made_with} per net", stats["yosys_clock_mhz_estimate"]),
        error_row("analytic estimate", stats["analytic_clock_mhz_estimate"]),
    ]
    if fit:
        lines += [
            fit_row(fit),
            "",
            f"The net delay that best fits the routed Fmax of all {fit['specs']} specs is **{fit['net_ns']:.2f} ns** "
            f"(the estimates of the first row were made with {made_with}); each spec's error in the last row comes from "
            "the net delay fitted to the other specs only (leave-one-out)."
            + (f" `[nexus.delays]` now ships {family.delays.net:.2f} ns per net (the fit)."
               if f"{family.delays.net:.2f} ns" != made_with else ""),
        ]
    lines += [
        "",
        "| spec | pipeline | II | routed Fmax (MHz) | Yosys-depth est. (MHz) | error | analytic est. (MHz) | error "
        "| routed path logic / route (ns) | LUT4 | FF | 18x18 mult. | nextpnr (s) | ECP5 routed (MHz) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        p, cp = r["pnr"], r["pnr"]["critical_path"]
        analytic = analytic_mhz(r, TARGET)
        other = ecp5.get(r["name"])
        beside = f"{other['routed_fmax_mhz']:.1f} ({_pipeline_text(other)})" if other else "—"
        lines.append(
            f"| {r['name']} | {_pipeline_text(r)} | {r['cycles']['ii']} | {r['routed_fmax_mhz']:.1f} | "
            f"{r['yosys_clock_mhz_estimate']:.1f} | {_error(r['yosys_clock_mhz_estimate'], r['routed_fmax_mhz']):+.1f} % | "
            f"{analytic:.1f} | {_error(analytic, r['routed_fmax_mhz']):+.1f} % | "
            f"{cp.get('logic_ns', 0):.1f} / {cp.get('routing_ns', 0):.1f} | {p['lut4']:,} | {p['ff']:,} | {p['dsp']} | "
            f"{p['seconds']:.0f} | {beside} |"
        )
    lines += [
        "",
        *([f"Routed from other RTL than a build emits for them today: {', '.join(stale)}; "
           "`python benchmarks/nexus_routed.py` routes them again.", ""] if stale else []),
        "LUT4 and FF are nextpnr's placed counts (OXIDE_COMB, OXIDE_FF), the FFs including the harness's port "
        "registers; 18x18 multipliers count MULT9 cores in pairs. "
        f"{sum(r['meets_target'] for r in results)} of {len(results)} specs meet the "
        f"{results[0]['clock_target_mhz']:g} MHz target; the routed critical paths spend "
        f"{statistics.median(_routing_share(r) for r in results):.0f} % "
        "of their delay in routing (median). The ECP5 column is the same spec routed on LFE5U-85F-6 "
        "(docs/ecp5_routed.json; for `auto`, the placement chosen for that family).",
        f"<!-- end {SECTION} -->",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=str(ROOT / "docs" / "nexus_routed.json"), help="results JSON (appended, resumed)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "estimator.md"))
    ap.add_argument("--work", default="", help="folder for the RTL and tool outputs (default: a temporary folder)")
    ap.add_argument("--cached-only", action="store_true", help="no tool run: the doc from the results JSON")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per tool run (default 1800)")
    args = ap.parse_args()
    rows = nexus_sweep()
    results_path = Path(args.results)
    data = _load(results_path, TARGET)
    route_rows(rows, data, results_path, args.work, args.timeout, args.cached_only, TARGET)
    order = [r["name"] for r in rows]
    results = sorted((r for r in data["results"].values() if r["name"] in order), key=lambda r: order.index(r["name"]))
    if not results:
        sys.exit("nexus_routed: no results yet")
    data["summary"], data["net_fit"] = summary(results, TARGET), net_fit(results)
    _save(results_path, data)
    ecp5 = json.loads((ROOT / "docs" / "ecp5_routed.json").read_text())["results"]
    command = "python benchmarks/nexus_routed.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "")
    text = render(results, command, data["summary"], data["net_fit"], ecp5, stale_results(data, rows, TARGET))
    put_block(Path(args.doc), SECTION, text)
    print(text)


if __name__ == "__main__":
    main()
