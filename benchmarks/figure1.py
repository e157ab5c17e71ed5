"""The KAN-vs-MLP resource figure: LUT, FF, DSP, BRAM, clock and prediction + update latency against parameter count.

Three families on one part (default xcvu9p, the spec's 250 MHz, pipeline auto): the default-shape
KAN (2, 4, 1) growing its grid size G, the KAN (2, H, 1) at G = 8 growing its hidden width, and the
MLP (2, H, 1) growing its hidden width. Every point gets the analytic estimate (``codesign estimate
--json``); points whose estimated LUT count is under ``--synth-lut`` are also built and synthesized
with Yosys (``codesign build ... --synth``, its report.json read back), one at a time, the families
in turn, smallest first, each build stopped after ``--point-min`` minutes, none started after
``--budget-min`` minutes of them. Both run codesign from a clean export of commit ``--rev``
(default HEAD; ``git archive`` into the work folder), so uncommitted changes in the checkout do
not reach them. Results are kept in ``--work`` with the last commit of the RTL sources (rtl/,
codesign/fpga, codesign/kan) each was built from: a rerun reads them back and builds only what
is missing (``--redo NAME`` drops a kept point; a point that ran out of time is not tried again
unless ``--point-min`` is raised). Writes the table
between the ``figure1`` markers of docs/figure1.md (with the estimator's error against Yosys),
the rows to docs/figure1.json, and docs/figure1.png.

    nice -n 10 python benchmarks/figure1.py --budget-min 100 --point-min 20   # synthesize what fits
    python benchmarks/figure1.py --budget-min 0                                # table and plot from what is kept
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from doc_sections import write_sections

from codesign.config import spec_from_fields
from codesign.resources import RESOURCE_TREES

ROOT = Path(__file__).resolve().parents[1]
SECTION = "figure1"
RESOURCES = ("lut", "lutram", "ff", "dsp", "bram")
KEYS = (*RESOURCES, "clock_mhz_estimate", "latency_ns")
# G >= 4,096 cells are narrower than act_t<16,6>'s 2^-10 step: the input type of examples/kan_98k.toml resolves them
WIDE_ACT = "ap_fixed<24,6,AP_RND_CONV,AP_SAT>"
# the sources a build's RTL is made from: a kept synthesis names the last commit of these
RTL_SOURCES = ("rtl", "codesign/fpga", "codesign/kan")
FAMILIES: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "KAN (2,4,1), growing G": ("kan_online", [
        {"widths": [2, 4, 1], "grid_size": g, **({"act_t": WIDE_ACT} if g >= 4096 else {})}
        for g in (8, 64, 256, 1024, 2048, 4096, 8192)]),
    "KAN (2,H,1), G = 8, growing H": ("kan_online", [{"widths": [2, h, 1], "grid_size": 8}
                                                     for h in (1, 2, 3, 4, 8, 16, 32, 64, 128)]),
    "MLP (2,H,1), growing H": ("mlp_online", [{"widths": [2, h, 1]} for h in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)]),
}
COLORS = dict(zip(FAMILIES, ("tab:blue", "tab:green", "tab:orange")))


class PointError(RuntimeError):
    """A codesign command of one point failed or ran out of time."""


def point_name(learner: str, fields: dict[str, Any]) -> str:
    """A folder name for one spec, e.g. kan_2-4-1_G8 or mlp_2-16-1."""
    name = f"{learner.split('_')[0]}_{'-'.join(str(v) for v in fields['widths'])}"
    if "grid_size" in fields:
        name += f"_G{fields['grid_size']}"
    return name + ("_act24" if fields.get("act_t") == WIDE_ACT else "")


def config_text(fields: dict[str, Any]) -> str:
    """The TOML config of one spec."""
    return "[spec]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in fields.items())


def git(*args: str) -> str:
    """A git command's output in the repository; PointError when it fails."""
    proc = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PointError(f"git {' '.join(args)}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
    return proc.stdout.strip()


def export_source(rev: str, work: Path) -> tuple[Path, str]:
    """A clean copy of codesign at ``rev`` (its shipped trees linked in as installed), and the last commit of its RTL sources."""
    full = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    commit = git("log", "-1", "--format=%h", full, "--", *RTL_SOURCES)
    src = work / f"src-{full[:10]}"
    if not (src / "codesign" / "__init__.py").is_file():
        partial = work / f"src-{full[:10]}.partial"
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        partial.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", full, "codesign", *RESOURCE_TREES], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive.stdout, check=True)
        for tree in RESOURCE_TREES:  # an installed codesign has these as subpackages (codesign.resources)
            (partial / "codesign" / tree).symlink_to(Path("..") / tree)
        partial.rename(src)
    return src, commit


def run_cli(args: list[str], log: Path, source: Path, timeout_s: float | None = None) -> str:
    """Run the command line of the codesign in ``source`` (nice'd, one thread, own process group), logged; PointError on failure."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(source))
    cli = "import sys; from codesign.cli import main; sys.exit(main())"
    # -P: no working folder on sys.path, which would put the checkout's codesign before the export's
    proc = subprocess.Popen(["nice", "-n", "10", sys.executable, "-P", "-c", cli, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # Yosys runs in a child of the build: stop the whole group
        out, _ = proc.communicate()
        log.write_text(out)
        raise PointError(f"`codesign {args[0]}` stopped after {timeout_s / 60:.0f} min; see {log}") from None
    log.write_text(out)
    if proc.returncode != 0:
        last = out.strip().splitlines()[-1] if out.strip() else ""
        raise PointError(f"`codesign {' '.join(args)}` exited {proc.returncode}: {last}")
    return out


def estimate(learner: str, fields: dict[str, Any], folder: Path, target: str, source: Path, commit: str) -> dict[str, Any]:
    """The analytic estimate of one spec (kept in folder/estimate.json with the RTL commit it was made at)."""
    cfg, kept = folder / "config.toml", folder / "estimate.json"
    if kept.is_file() and cfg.is_file() and cfg.read_text() == config_text(fields):
        est = json.loads(kept.read_text())
        if est.get("rtl_commit") == commit and est.get("source") == source.name:
            return est
    folder.mkdir(parents=True, exist_ok=True)
    cfg.write_text(config_text(fields))
    out = run_cli(["estimate", learner, "--target", target, "--config", str(cfg), "--json"], folder / "estimate.log", source)
    est = {**json.loads(out[out.index("{"): out.rindex("}") + 1]), "rtl_commit": commit, "source": source.name}
    kept.write_text(json.dumps(est, indent=1) + "\n")
    return est


def kept_synthesis(folder: Path, fields: dict[str, Any]) -> dict[str, Any] | None:
    """The kept Yosys result of this spec (synthesis.json: report.json's synth section, times, RTL commit), else None."""
    kept = folder / "synthesis.json"
    if not kept.is_file() or (folder / "config.toml").read_text() != config_text(fields):
        return None
    return json.loads(kept.read_text())


def synthesize(learner: str, folder: Path, target: str, timeout_s: float, source: Path, commit: str) -> dict[str, Any]:
    """``codesign build --synth`` of one spec (a short C-simulation stream; the synthesis is what is wanted)."""
    started = time.perf_counter()
    run_cli(["build", learner, "--target", target, "--config", str(folder / "config.toml"), "--synth", "--samples", "64",
             "--out", str(folder / "build"), "--force"], folder / "build.log", source, timeout_s)
    report = json.loads((folder / "build" / "report.json").read_text())
    result = {"synth": report["synth"], "build_seconds": round(time.perf_counter() - started, 1), "rtl_commit": commit,
              "pipeline": report["rtl"]["pipeline"]}
    (folder / "synthesis.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def synthesis_order(points: list[dict[str, Any]], synth_lut: float) -> list[dict[str, Any]]:
    """The points to synthesize: the families in turn, each smallest first, so every family gets its first sizes early."""
    by_family: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        if p["estimate"]["lut"] < synth_lut:
            by_family.setdefault(p["family"], []).append(p)
    queues = [sorted(ps, key=lambda p: (p["estimate"]["lut"], p["params"])) for ps in by_family.values()]
    order, seen = [], set()
    for rank in range(max((len(q) for q in queues), default=0)):
        for q in queues:
            if rank < len(q) and q[rank]["folder"] not in seen:  # a spec two families share is built once
                seen.add(q[rank]["folder"])
                order.append(q[rank])
    return order


def run(args: argparse.Namespace) -> None:
    """Estimate every point, synthesize what the budgets allow, write the table, the rows and the plot."""
    source, commit = export_source(args.rev, args.work)
    print(f"codesign from {source} (RTL sources at {commit})", flush=True)
    for name in args.redo:
        for kept in ("synthesis.json", "synth_timeout.json"):
            (args.work / name / kept).unlink(missing_ok=True)
    points: list[dict[str, Any]] = []
    for family, (learner, specs) in FAMILIES.items():
        for fields in specs:
            folder = args.work / point_name(learner, fields)
            est = estimate(learner, fields, folder, args.target, source, commit)
            params = spec_from_fields(learner, fields).num_parameters
            points.append({"family": family, "learner": learner, "fields": fields, "folder": folder, "estimate": est,
                           "params": params, "synth": kept_synthesis(folder, fields)})
            print(f"estimate {folder.name:24s} {params:>7,} params {est['lut']:>9,} LUT {est['dsp']:>6,} DSP "
                  f"{est['bram']:>5g} BRAM {est['clock_mhz_estimate']:6.1f} MHz {est['latency_ns']:7.2f} ns", flush=True)
    spent = 0.0
    timeout_s = 60 * args.point_min
    for p in synthesis_order(points, args.synth_lut):
        folder = p["folder"]
        stopped = folder / "synth_timeout.json"
        if p["synth"] is not None:
            continue
        if stopped.is_file() and json.loads(stopped.read_text())["minutes"] >= args.point_min:
            print(f"skip {folder.name}: stopped after {json.loads(stopped.read_text())['minutes']:g} min before", flush=True)
            continue
        if spent >= 60 * args.budget_min:
            print(f"budget spent: {folder.name} not synthesized", flush=True)
            continue
        t0 = time.perf_counter()
        print(f"[{spent / 60:5.1f} min] synthesizing {folder.name} (estimate {p['estimate']['lut']:,} LUT) ...", flush=True)
        try:
            result = synthesize(p["learner"], folder, args.target, timeout_s, source, commit)
        except PointError as e:
            if "stopped after" in str(e):
                stopped.write_text(json.dumps({"minutes": args.point_min, "rtl_commit": commit}) + "\n")
            print(f"  {e}", flush=True)
            continue
        finally:
            spent += time.perf_counter() - t0
        for q in points:
            if q["folder"] == folder:
                q["synth"] = result
        s = result["synth"]
        print(f"  {s['lut']:,} LUT {s['lutram']:,} LUTRAM {s['ff']:,} FF {s['dsp']} DSP {s['bram']:g} BRAM "
              f"{s['clock_mhz_estimate']} MHz {s['latency_ns']} ns (Yosys {s['seconds']:.0f} s, build {result['build_seconds']:.0f} s, "
              f"RTL {result['rtl_commit']})", flush=True)
    rows = [row(p) for p in points]
    for p, r in zip(points, rows):
        stopped = p["folder"] / "synth_timeout.json"
        if r["yosys"] is None and stopped.is_file():
            r["synth_stopped_min"] = json.loads(stopped.read_text())["minutes"]
    (args.out / "figure1.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {args.out / 'figure1.json'}")
    write_sections(args.out / "figure1.md", {SECTION: table(rows, args.target, commit, args.command)}, "figure1")
    plot(rows, args.out / "figure1.png")


def row(p: dict[str, Any]) -> dict[str, Any]:
    """One point: its parameters, the estimate and (where synthesized) Yosys's figures, times and RTL commit."""
    est, syn = p["estimate"], p["synth"]
    report = p["folder"] / "build" / "report.json"
    # the build's own analytic estimate: the same placement as the RTL Yosys read (the estimator's error is measured on it)
    built = json.loads(report.read_text())["estimate"] if syn is not None and report.is_file() else None
    return {
        "family": p["family"], "name": p["folder"].name, "fields": p["fields"], "params": p["params"],
        "estimate": {k: est[k] for k in KEYS}, "ii": est["ii"], "fits": est["fit"]["fits"],
        "meets_clock": est["fit"]["meets_clock"], "estimate_rtl_commit": est["rtl_commit"],
        "placement": est["pipeline_placement"]["text"],
        "built": None if built is None else {**{k: built[k] for k in KEYS}, "ii": built["ii"],
                                             "placement": built["pipeline_placement"]["text"]},
        "yosys": None if syn is None else {**{k: syn["synth"][k] for k in KEYS}, "ii": syn["synth"]["cycles"]["ii"],
                                           "seconds": syn["synth"]["seconds"], "build_seconds": syn["build_seconds"],
                                           "rtl_commit": syn["rtl_commit"]},
    }


def _cell(r: dict[str, Any], key: str, fmt: str) -> str:
    """``yosys / estimate`` where both exist, else the estimate in italics."""
    e = format(r["estimate"][key], fmt)
    return f"{format(r['yosys'][key], fmt)} / {e}" if r["yosys"] else f"*{e}*"


def _relative(estimated: float, measured: float) -> str:
    """(estimate - Yosys) / Yosys as a signed percentage; a count of zero on both sides is 0."""
    if measured:
        return f"{100 * (estimated - measured) / measured:+.1f} %"
    return "0" if estimated == 0 else f"{estimated:,g} vs 0"


def table(rows: list[dict[str, Any]], target: str, commit_now: str, command: str) -> str:
    """The figure's table, and the estimator's error against Yosys on the synthesized points."""
    lines = [
        f"Measured by `{command}` "
        f"(part {target}, the spec's 250 MHz, pipeline auto, one Yosys run at a time). A cell `a / b` is Yosys "
        "`synth_xilinx` (a) and the analytic estimate (b); a cell in italics is the estimate alone (not synthesized: "
        "over the synthesis size or time budget, said in the last column). The clock is the logic-depth estimate of "
        "the netlist (Yosys) or of the model, not placed or routed; latency is prediction + update in cycles at that "
        "clock. BRAM counts 36 Kb blocks. `_act24` rows use act_t = `ap_fixed<24,6>` (examples/kan_98k.toml's input "
        "type; 10 fraction bits do not resolve the cells of G >= 4,096). RTL sources (rtl/, codesign/fpga, "
        f"codesign/kan) at {commit_now} when the table was written; the last column names the commit each Yosys row "
        "was built from.",
        "",
        "| family | spec | params | LUT | LUTRAM | FF | DSP | BRAM | clock (MHz) | pred + update (ns) | II (cycles) | "
        "fits, 250 MHz (estimate) | Yosys time (s), RTL commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        y = r["yosys"]
        if y:
            note = f"{y['seconds']:.0f}, {y['rtl_commit']}"
        elif "synth_stopped_min" in r:
            note = f"not synthesized: stopped after {r['synth_stopped_min']:g} min"
        else:
            note = "not synthesized"
        lines.append(
            f"| {r['family']} | {r['name']} | {r['params']:,} | {_cell(r, 'lut', ',')} | {_cell(r, 'lutram', ',')} | "
            f"{_cell(r, 'ff', ',')} | {_cell(r, 'dsp', ',')} | {_cell(r, 'bram', 'g')} | "
            f"{_cell(r, 'clock_mhz_estimate', '.1f')} | {_cell(r, 'latency_ns', '.1f')} | {r['ii']} | "
            f"{'yes' if r['fits'] else '**no**'}, {'yes' if r['meets_clock'] else '**no**'} | {note} |")
    synth, done = [r for r in rows if r["yosys"]], set()
    lines += ["", "### The estimator against Yosys", "",
              "Relative error (estimate − Yosys) / Yosys of every synthesized point (each spec once), the estimate "
              "being the build's own analytic one (report.json `estimate`: the placement Yosys read); BRAM as a "
              "difference in 36 Kb blocks.", "",
              "| spec | params | LUT | LUTRAM | FF | DSP | BRAM (blocks) | clock | pred + update |",
              "|---|---|---|---|---|---|---|---|---|"]
    errs: dict[str, list[float]] = {k: [] for k in ("lut", "ff", "dsp", "clock_mhz_estimate", "latency_ns")}
    moved: list[str] = []
    for r in synth:
        if r["name"] in done:
            continue
        done.add(r["name"])
        y, e = r["yosys"], r["built"] or r["estimate"]
        if r["built"] and r["built"]["placement"] != r["placement"]:
            moved.append(f"{r['name']} (`codesign estimate` {r['placement']}, build {r['built']['placement']})")
        for k in errs:
            if y[k]:
                errs[k].append((e[k] - y[k]) / y[k])
        lines.append(f"| {r['name']} | {r['params']:,} | " + " | ".join(_relative(e[k], y[k]) for k in ("lut", "lutram", "ff", "dsp"))
                     + f" | {e['bram'] - y['bram']:+g} | {_relative(e['clock_mhz_estimate'], y['clock_mhz_estimate'])} | "
                     f"{_relative(e['latency_ns'], y['latency_ns'])} |")
    if synth:
        mean = {k: f"{100 * np.mean(np.abs(v)):.1f} %" if v else "–" for k, v in errs.items()}
        lines.append(f"| **mean abs** | | {mean['lut']} | | {mean['ff']} | {mean['dsp']} | | {mean['clock_mhz_estimate']} | "
                     f"{mean['latency_ns']} |")
    if moved:
        lines += ["", "Placements where `codesign estimate` and `codesign build` chose differently: " + "; ".join(moved) + "."]
    lines += ["", "![resources and latency against parameter count](figure1.png)", ""]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Six panels against parameter count: Yosys points filled and joined, estimates hollow and dashed."""
    panels = (("lut", "LUT (logic, without LUTRAM)"), ("ff", "FF"), ("dsp", "DSP"), ("bram", "BRAM (36 Kb)"),
              ("clock_mhz_estimate", "clock estimate (MHz)"), ("latency_ns", "prediction + update (ns)"))
    fig, axes = plt.subplots(2, 3, figsize=(15, 8), constrained_layout=True)
    for ax, (key, label) in zip(axes.ravel(), panels):
        for family in FAMILIES:
            rs = sorted((r for r in rows if r["family"] == family), key=lambda r: r["params"])
            ax.plot([r["params"] for r in rs], [r["estimate"][key] for r in rs], "o--", mfc="none", color=COLORS[family],
                    lw=0.9, ms=6, label=f"{family} (estimate)")
            ys = [r for r in rs if r["yosys"]]
            ax.plot([r["params"] for r in ys], [r["yosys"][key] for r in ys], "o-", color=COLORS[family], lw=1.8, ms=5,
                    label=f"{family} (Yosys)")
        ax.set_xscale("log")
        if key in ("lut", "ff", "dsp"):
            ax.set_yscale("log")
        ax.set_xlabel("parameters")
        ax.set_title(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("KAN vs MLP on xcvu9p at 250 MHz (pipeline auto): Yosys synth_xilinx filled, analytic estimate hollow")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> int:
    """Command line: one-line errors, exit 2 on bad arguments, 1 when a command fails."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="xcvu9p")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "figure1", help="kept results (a rerun resumes)")
    ap.add_argument("--synth-lut", type=float, default=60_000, help="synthesize points whose estimated LUTs are below this")
    ap.add_argument("--budget-min", type=float, default=60.0, help="start no synthesis after this many minutes of them")
    ap.add_argument("--point-min", type=float, default=20.0, help="stop a point's build after this many minutes")
    ap.add_argument("--rev", default="HEAD", help="the commit whose codesign estimates and builds (default HEAD)")
    ap.add_argument("--redo", nargs="*", default=[], metavar="NAME", help="drop these kept points (folder names) first")
    ap.add_argument("--out", type=Path, default=ROOT / "docs", help="folder of figure1.md, figure1.json and figure1.png")
    ap.add_argument("--command", default="nice -n 10 python benchmarks/figure1.py --budget-min 75 --point-min 20",
                    help="the command the table names as the one that synthesized its points")
    args = ap.parse_args(argv)
    args.work, args.out = args.work.resolve(), args.out.resolve()
    if args.budget_min < 0 or args.point_min <= 0 or args.synth_lut < 0:
        ap.error("--budget-min and --synth-lut must be >= 0 and --point-min > 0")
    if not (args.out / "figure1.md").is_file():
        ap.error(f"{args.out / 'figure1.md'} does not exist (it holds the <!-- {SECTION}:begin/end --> markers)")
    try:
        run(args)
    except (PointError, ValueError, OSError, subprocess.CalledProcessError) as e:
        print(f"figure1: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
