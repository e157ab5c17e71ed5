"""How much of a routed Fmax is the placer's seed: one ECP5 netlist placed and routed with several nextpnr seeds.

Builds a spec's RTL at one placement (``codesign build kan_online --target lfe5u-85f --pipeline P``), synthesizes it
once with Yosys (synth_ecp5, the netlist nextpnr reads), then places and routes that same netlist at the spec's
clock with each seed (nextpnr-ecp5 ``--seed N``, timing-driven), ``--jobs`` routes at a time. Writes every route's
Fmax and critical path to docs/ecp5_seed_spread.json and the section "Routed Fmax across placer seeds" of
docs/estimator.md: the spread bounds how closely any estimate can match one route, and shows whether a miss
is one path or the placer's luck. Progress goes to stderr.

    python benchmarks/ecp5_seed_spread.py --work /tmp/ecp5_seeds                      # the default spec at deep, seeds 1-4
    python benchmarks/ecp5_seed_spread.py --work /tmp/ecp5_seeds --spec one_to_one --pipeline 0x0:0x2d35:1
    python benchmarks/ecp5_seed_spread.py --cached-only                               # the doc from the results JSON
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from doc_sections import put_block
from ecp5_closure import ONE_TO_ONE, _short

from codesign.fpga.boards import find_board
from codesign.fpga.pnr import place_and_route
from codesign.fpga.synth import synthesize

ROOT = Path(__file__).resolve().parents[1]
TARGET = "lfe5u-85f"
SECTION = "ecp5-seed-spread"
TITLE = "Routed Fmax across placer seeds (ECP5)"
CONFIGS = {"default": None, "one_to_one": ONE_TO_ONE}
NAMES = {"default": "default 2-4-1 G8 <16,6>", "one_to_one": "1-1 G5 <16,6>"}


def build_rtl(spec: str, pipeline: str, work: Path) -> tuple[Path, list[str]]:
    """The spec's RTL at the placement (a build without synthesis), then its Yosys netlist; the build command."""
    cmd = ["codesign", "build", "kan_online", "--target", TARGET]
    if CONFIGS[spec] is not None:
        config = work / f"{spec}.toml"
        config.write_text(CONFIGS[spec])
        cmd += ["--config", str(config)]
    cmd += ["--pipeline", pipeline, "--samples", "100", "--out", str(work / "build"), "--force"]
    print(f"ecp5_seed_spread: {shlex.join(cmd)}", file=sys.stderr, flush=True)
    if subprocess.run(cmd, stdout=sys.stderr, check=False).returncode != 0:
        sys.exit(f"ecp5_seed_spread: the build failed: {shlex.join(cmd)}")
    rtl = work / "build" / "rtl"
    print(f"ecp5_seed_spread: synthesizing {rtl} with Yosys", file=sys.stderr, flush=True)
    synthesize(rtl, find_board(TARGET), keep_netlist=True)
    return rtl, cmd


def route(rtl: str, seed: int, clock_mhz: float) -> dict:
    """One seed's route of a copy of the synthesized RTL folder (its own pnr/ folder)."""
    copy = Path(f"{rtl}_seed{seed}")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(rtl, copy)
    started = time.perf_counter()
    routed = place_and_route(copy, find_board(TARGET), clock_mhz=clock_mhz, seed=seed)
    print(f"ecp5_seed_spread: seed {seed}: {routed.fmax_mhz} MHz", file=sys.stderr, flush=True)
    return {"seed": seed, "fmax_mhz": routed.fmax_mhz, "critical_path": routed.critical_path,
            "seconds": round(time.perf_counter() - started, 1)}


def summary(routes: list[dict]) -> dict:
    """Least, median and greatest Fmax and the spread (greatest - least) over the median."""
    fmax = [r["fmax_mhz"] for r in routes]
    median = statistics.median(fmax)
    return {"min_mhz": min(fmax), "median_mhz": median, "max_mhz": max(fmax),
            "spread_percent": round(100.0 * (max(fmax) - min(fmax)) / median, 1)}


def render(results: list[dict], command: str) -> str:
    """The docs/estimator.md section."""
    targets = ", ".join(f"{mhz:g}" for mhz in sorted({r["clock_mhz"] for r in results}))
    lines = [f"<!-- begin {SECTION} -->", f"## {TITLE}", "",
             f"Rendered by `{command}`. One Yosys netlist per row (synth_ecp5), placed and routed by nextpnr-ecp5 "
             f"timing-driven at the spec's clock target ({targets} MHz) with each seed; nothing else changes between the "
             "routes. The spread is (greatest - least) / median; the seconds are nextpnr's, two routes at a time on two cores.", "",
             "| spec | placement | seed | routed Fmax (MHz) | critical path start -> end | path: logic / route (ns) "
             "| nextpnr (s) |", "|---|---|---:|---:|---|---|---:|"]
    for r in results:
        for s in r["routes"]:
            cp = s["critical_path"]
            path = f"{cp['path_ns']:.2f}: {cp['logic_ns']:.2f} / {cp['routing_ns']:.2f}"
            lines.append(f"| {r['name']} | {r['placement']} | {s['seed']} | {s['fmax_mhz']:g} | `{_short(cp['start'])}` -> "
                         f"`{_short(cp['end'])}` | {path} | {s['seconds']:.0f} |")
    lines += ["", "| spec | placement | routes | least / median / greatest (MHz) | spread |", "|---|---|---:|---|---:|"]
    for r in results:
        s = r["summary"]
        lines.append(f"| {r['name']} | {r['placement']} | {len(r['routes'])} | {s['min_mhz']:.2f} / {s['median_mhz']:.2f} / "
                     f"{s['max_mhz']:.2f} | {s['spread_percent']:.1f} % |")
    lines += ["", "Commands (the build that wrote the RTL, and the run that routed it):", ""]
    for r in results:
        lines += [f"    {r['build_command']}", f"    # run by: {r['made_by']}"]
    lines += [f"<!-- end {SECTION} -->", ""]
    return "\n".join(lines)


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", help="folder for the build and the routed copies (required unless --cached-only)")
    ap.add_argument("--spec", default="default", choices=sorted(CONFIGS))
    ap.add_argument("--pipeline", default="deep", help="the placement routed (default: deep)")
    ap.add_argument("--seeds", default="1,2,3,4", help="comma-separated nextpnr seeds (default 1,2,3,4)")
    ap.add_argument("--jobs", type=int, default=2, help="routes at a time (default 2)")
    ap.add_argument("--cached-only", action="store_true", help="no tool run: the doc from the results JSON")
    ap.add_argument("--results", default=str(ROOT / "docs" / "ecp5_seed_spread.json"))
    ap.add_argument("--doc", default=str(ROOT / "docs" / "estimator.md"))
    args = ap.parse_args()
    command = "python benchmarks/ecp5_seed_spread.py" + (" " + shlex.join(sys.argv[1:]) if sys.argv[1:] else "")
    results_path = Path(args.results)
    stored = json.loads(results_path.read_text()) if results_path.is_file() else {}
    if not args.cached_only:
        if not args.work:
            sys.exit("ecp5_seed_spread: --work is required (or --cached-only)")
        try:
            seeds = sorted({int(s) for s in args.seeds.split(",") if s.strip()})
        except ValueError:
            sys.exit(f"ecp5_seed_spread: --seeds={args.seeds!r}: comma-separated integers")
        if len(seeds) < 2 or args.jobs < 1:
            sys.exit("ecp5_seed_spread: give at least two --seeds and --jobs >= 1")
        work = Path(args.work)
        work.mkdir(parents=True, exist_ok=True)
        rtl, build = build_rtl(args.spec, args.pipeline, work)
        pipeline = json.loads((rtl / "rtl_manifest.json").read_text())["pipeline"]  # the placement and clock it was built for
        placement, clock_mhz = pipeline["text"], pipeline["clock_mhz"]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            routes = list(pool.map(route, [str(rtl)] * len(seeds), seeds, [clock_mhz] * len(seeds)))
        stored[f"{args.spec}@{placement}"] = {"name": NAMES[args.spec], "placement": placement, "clock_mhz": clock_mhz,
                                               "routes": routes,
                                               "summary": summary(routes), "build_command": shlex.join(build),
                                               "made_by": command}
        results_path.write_text(json.dumps(stored, indent=1) + "\n")
    if not stored:
        sys.exit(f"ecp5_seed_spread: no results in {results_path}: run without --cached-only")
    text = render(list(stored.values()), command)
    put_block(Path(args.doc), SECTION, text)
    print(text)


if __name__ == "__main__":
    main()
