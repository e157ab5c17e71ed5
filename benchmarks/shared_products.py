"""Shared products measured: Yosys resources and clock and the co-simulated cycles of shared against unshared placements.

Each row is one ``codesign build kan_online --target T [--config C] --pipeline P --synth [--cosim]`` whose
report.json is read back (the builds are kept in ``--work``; a rerun builds only rows without a report,
``--redo`` rebuilds all). The rows: the default KAN (2, 4, 1) on xcvu9p at auto's registers with 1, 2 and 4
products per multiplier (with the operand register, CUTS bit 15, which auto keeps where it shares, and at 2
without it); a KAN (4, 8, 1) on xc7z020 (220 DSPs) at 125 MHz, as ``auto`` chooses it (it
shares, the design needing 360 DSPs unshared) and the same placement unshared; and, estimate only (its
Yosys synthesis, some 900k LUTs, is out of reach here), the KAN (16, 64, 5) at G = 32 on xcvu9p, auto and
unshared. Writes docs/shared_products.json and the table between the ``shared-products`` markers of
docs/shared_products.md.

    nice -n 10 python benchmarks/shared_products.py --work build/shared_products
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from doc_sections import write_sections

from codesign.config import load_spec
from codesign.fpga.boards import find_board
from codesign.fpga.estimate import estimate
from codesign.fpga.placement import Pipeline, parse_pipeline

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "kan_4-8-1_125": "[spec]\nwidths = [4, 8, 1]\ngrid_size = 8\nspline_order = 3\nclock_mhz = 125.0\n",
    "kan_16-64-5_G32": "[spec]\nwidths = [16, 64, 5]\ngrid_size = 32\nspline_order = 3\n",
}
# name, target, config (a CONFIGS key or None for the default spec), pipeline ("auto", a placement, or
# "unshared:NAME": NAME's placement with share 1), synthesize (else estimate only)
ROWS = [
    ("kan_2-4-1_share1", "xcvu9p", None, "0x6:0x235d:2", True),
    ("kan_2-4-1_share2_no_operand_register", "xcvu9p", None, "0x6:0x235d:2:2", True),
    ("kan_2-4-1_share2", "xcvu9p", None, "0x6:0xa35d:2:2", True),
    ("kan_2-4-1_share4", "xcvu9p", None, "0x6:0xa35d:2:4", True),
    ("kan_4-8-1_xc7z020_auto", "xc7z020", "kan_4-8-1_125", "auto", True),
    ("kan_4-8-1_xc7z020_unshared", "xc7z020", "kan_4-8-1_125", "unshared:kan_4-8-1_xc7z020_auto", True),
    ("kan_16-64-5_G32_auto", "xcvu9p", "kan_16-64-5_G32", "auto", False),
    ("kan_16-64-5_G32_unshared", "xcvu9p", "kan_16-64-5_G32", "unshared:kan_16-64-5_G32_auto", False),
]


def _config_path(work: Path, key: str | None) -> Path | None:
    if key is None:
        return None
    path = work / f"{key}.toml"
    path.write_text(CONFIGS[key])
    return path


def _placement(pipeline: str, rows: dict[str, dict[str, Any]]) -> str:
    """The pipeline text a row builds: as given, or another row's placement (PHASES:CUTS:SPLIT:SHARE) unshared."""
    if not pipeline.startswith("unshared:"):
        return pipeline
    placement = parse_pipeline(rows[pipeline.split(":", 1)[1]]["placement"])
    assert isinstance(placement, Pipeline), placement  # a shared placement is always in the four-field form
    return replace(placement, share=1).text


def _estimate_row(target: str, config: Path | None, pipeline: str) -> dict[str, Any]:
    spec = load_spec("kan_online", str(config) if config else None)
    board = find_board(target)
    result = estimate(spec, board, parse_pipeline(pipeline))
    return {"placement": result["pipeline_placement"]["text"], "parameters": spec.num_parameters, "estimate": result}


def _build_row(work: Path, name: str, target: str, config: Path | None, pipeline: str) -> dict[str, Any]:
    out = work / name
    report = out / "report.json"
    if not report.is_file():
        cmd = [sys.executable, "-m", "codesign.cli", "build", "kan_online", "--target", target, "--pipeline", pipeline,
               "--synth", "--cosim", "--samples", "500", "--out", str(out), "--force"]
        if config:
            cmd[5:5] = ["--config", str(config)]
        print(" ".join(cmd[2:]), flush=True)
        start = time.monotonic()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if not report.is_file():
            print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"shared_products: {name} failed (exit {done.returncode})")
        print(f"  {time.monotonic() - start:.0f} s", flush=True)
    data = json.loads(report.read_text())
    return {"placement": data["rtl"]["pipeline"]["text"], "parameters": data["parameters"], "estimate": data["estimate"],
            "synth": data.get("synth"), "cosim": data.get("cosim")}


def _row_text(name: str, row: dict[str, Any]) -> str:
    e, s, c = row["estimate"], row.get("synth"), row.get("cosim")
    share = e.get("sharing", {}).get("share", 1)
    yosys = (f"{s['lut']:,} | {s['ff']:,} | {s['dsp']:,} | {s['clock_mhz_estimate']:g} | {s['latency_ns']:g}"
             if s else "— | — | — | — | —")
    cosim = ("bit-exact" if c["bit_exact"] else "**differs**") if c else "—"
    fit = max(e["utilization_percent"].values())
    return (f"| {name} | {row['parameters']:,} | `{row['placement']}` | {share} | {e['ii']} | {e['update_latency_cycles']} | "
            f"{cosim} | {yosys} | {e['lut']:,} | {e['dsp']:,} | {fit:.0f} % | {e['clock_mhz_estimate']:g} | {e['latency_ns']:g} |")


def main() -> int:
    """Build (or read back) every row, then write the json and the doc's table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "shared_products")
    parser.add_argument("--redo", action="store_true", help="rebuild every row")
    args = parser.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    for name, target, config_key, pipeline, synthesize in ROWS:
        config = _config_path(work, config_key)
        placement = _placement(pipeline, rows)
        if args.redo:
            (work / name / "report.json").unlink(missing_ok=True)
        row = _build_row(work, name, target, config, placement) if synthesize else _estimate_row(target, config, placement)
        rows[name] = {"target": target, "config": CONFIGS.get(config_key or "", "default spec"), "pipeline": placement, **row}
    (ROOT / "docs" / "shared_products.json").write_text(json.dumps(rows, indent=1) + "\n")
    header = ("| row | parameters | placement | share | II | update cycles | co-sim | Yosys LUT | Yosys FF | Yosys DSP | "
              "Yosys MHz | Yosys pred. + update ns | analytic LUT | analytic DSP | analytic fullest | analytic MHz | "
              "analytic pred. + update ns |\n|" + "---|" * 17 + "\n")
    table = header + "\n".join(_row_text(name, row) for name, row in rows.items()) + "\n"
    write_sections(ROOT / "docs" / "shared_products.md", {"shared-products": table}, "shared_products")
    return 0


if __name__ == "__main__":
    sys.exit(main())
