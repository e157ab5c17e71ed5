"""The design-space front of the default `codesign explore` sweep, every point built as `codesign build` builds it.

Runs ``codesign explore kan_online --target xcvu9p`` (the default axes: grid 4, 8, 16, 32; 12, 16 and 20-bit
words; hidden widths 2, 4, 8 and 4-4; 20,000 samples of function_tracking; ``--pipelines auto``, so each
point gets the placement that meets the target's 250 MHz clock) and, for comparison, the same sweep with
``ii1`` (one long cycle per sample, what explore used to estimate every point with). Writes
docs/explore_front.md (both fronts, with the points that miss the clock counted) and docs/explore_front.png
(explore's own plot of the auto sweep).

    python benchmarks/explore_front.py                    # about a minute on 2 cores
    python benchmarks/explore_front.py --out /tmp/front
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from clock_error_bars import analytic_clock_label

from codesign.fpga.explore import explore, format_front, pareto_front

ROOT = Path(__file__).resolve().parents[1]


def _sweep(work: Path, pipeline: str, target: str) -> dict:
    return explore("kan_online", target=target, out=work / pipeline, pipelines=(pipeline,), workers=2)


def render(runs: dict[str, dict], seconds: float, target: str) -> str:
    """Both fronts as one Markdown page."""
    auto = runs["auto"]
    clock = auto["settings"]["clock_mhz"]
    lines = [
        f"# The explore front at {clock:g} MHz ({target})",
        "",
        f"`python benchmarks/explore_front.py` ({seconds:.0f} s): the default `codesign explore kan_online --target {target}` "
        "sweep, every point's pipeline chosen as `codesign build` chooses it (`auto`: the placement whose estimated "
        f"clock meets {clock:g} MHz, least time per sample), beside the same sweep with `ii1` (no register in a "
        "sample's loop). Resources, clock and time per sample are ESTIMATES of the analytic model "
        "(docs/estimator.md); cycles are exact; the online error is the bit-exact reference's."
        + (" " + analytic_clock_label() if target == "xcvu9p" else ""),
        "",
    ]
    for pipeline, run in runs.items():
        points = [p for p in run["points"] if "skipped" not in p]
        met = sum(1 for p in points if p["clock_met"])
        lines += [f"## `--pipelines {pipeline}`: {met} of {len(points)} points meet {clock:g} MHz, "
                  f"{len(run['front'])} on the front", ""]
        front = run["front"]
        if not front:  # what explore drew before it chose pipelines as build does: the front with the clock ignored
            front = pareto_front([{**p, "clock_met": True} for p in points])
            lines += ["None meets the clock; the front it would draw with the clock ignored (the clock column "
                      "says by how much each misses):", ""]
        table = format_front(front, run["settings"]).splitlines()
        lines += [line for line in table if line.startswith("|")] + [""]
    lines += ["![the auto sweep: online error against area and time per sample](explore_front.png)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both sweeps and write the page and the plot."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs"), help="folder for explore_front.md and explore_front.png")
    parser.add_argument("--target", default="xcvu9p")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codesign-explore-front-") as tmp:
        runs = {pipeline: _sweep(Path(tmp), pipeline, args.target) for pipeline in ("auto", "ii1")}
        seconds = time.perf_counter() - started
        (out / "explore_front.md").write_text(render(runs, seconds, args.target))
        shutil.copyfile(Path(runs["auto"]["out"]) / "pareto.png", out / "explore_front.png")
    print(f"wrote {out / 'explore_front.md'} and {out / 'explore_front.png'} ({seconds:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
