"""`codesign sim FOLDER` on an unchanged build: the Verilator model built (cold) against taken from codesign's cache (warm).

    python benchmarks/cosim_cache.py                      # builds kan_online --cosim --samples 500 in a temporary folder
    python benchmarks/cosim_cache.py --samples 500 --warm 3
    PYTHONPATH=OTHER_TREE python benchmarks/cosim_cache.py   # the same runs on another checkout

The build and every `codesign sim` run as their own processes (the command a user types), with
``$CODESIGN_CACHE_DIR`` pointing at a fresh folder, so nothing kept by earlier runs is used.
Rows: "cold, empty cache" (the Verilator runtime library and the model are compiled); "model
built" (the model compiled again, the runtime library kept: what every co-simulation in a new
folder cost before ``verilator-bin/``); "warm" (the model from ``verilator-bin/``, only the bench
runs). Each row gives the wall seconds of the whole command and the ``build_seconds`` that
report.json records; the last column is the cold row's wall time over the row's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import codesign
from codesign.fpga.simulator import BIN_CACHE


def _codesign(args: list[str], env: dict[str, str]) -> float:
    """Run `codesign ARGS` as a process; its wall seconds (a failure stops the benchmark with its output)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "codesign.cli", *args], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"codesign {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    """Build once, then time `codesign sim` cold, with the model rebuilt, and warm; print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=500, help="task samples of the build's stream (plus 512 corner samples)")
    ap.add_argument("--warm", type=int, default=2, help="warm runs")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="codesign_cosim_cache_") as scratch:
        cache, folder = Path(scratch) / "cache", Path(scratch) / "b1"
        env = {**os.environ, "CODESIGN_CACHE_DIR": str(cache)}
        _codesign(["build", "kan_online", "--samples", str(args.samples), "--out", str(folder)], env)
        shutil.rmtree(cache)  # the C-simulation and anything else the build kept: the first sim starts from nothing
        rows = []

        def sim(label: str) -> None:
            seconds = _codesign(["sim", str(folder)], env)
            cosim = json.loads((folder / "report.json").read_text())["cosim"]
            assert cosim["bit_exact"], cosim
            rows.append((label, seconds, cosim["build_seconds"], cosim.get("build_cached")))

        sim("cold, empty cache")
        shutil.rmtree(cache / BIN_CACHE)
        shutil.rmtree(folder / "rtl" / "cosim" / "sim_build")
        sim("model built (runtime library kept)")
        for k in range(args.warm):
            sim(f"warm {k + 1}")
        samples = json.loads((folder / "report.json").read_text())["cosim"]["samples"]
    print(f"`codesign sim` of an unchanged kan_online build ({samples:,} samples; codesign {codesign.__version__} at "
          f"{Path(codesign.__file__).parent.parent}; {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs)")
    print()
    print("| run | wall s | build_seconds | model from the cache | cold / this |")
    print("|---|---|---|---|---|")
    cold = rows[0][1]
    for label, seconds, build_seconds, cached in rows:
        print(f"| {label} | {seconds:.1f} | {build_seconds:.2f} | {'yes' if cached else 'no'} | {cold / seconds:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
