"""Yosys resource counts of a few calibration specs on another family's part: the check of that family's model.

Synthesizes the named specs of benchmarks/estimator_calibration.py's sweep for ``--target`` (cached
in ``--work``; a rerun resumes) and writes their Yosys counts to
``tests/estimate/yosys_reference_<target>.json``, which tests/estimate/test_family_resources.py
compares with the analytic estimate (the DSP, LUTRAM and FF counts a family's model_checked names).

    python benchmarks/family_resources.py --target xc7z020
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from estimator_calibration import run_sweep, save_reference, sweep

ROOT = Path(__file__).resolve().parents[1]
SPECS = ("kan 1-1 G5", "kan 1-1 G8 w20", "mlp 1-4-1", "kan 1-2 G8", "mlp 2-8-1", "kan 1-2-1 G8", "kan 1-1 G5 deep",
         "kan 2-2-1 G8")


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="xc7z020")
    ap.add_argument("--work", default=str(ROOT / "build" / "family_resources"), help="cache folder (resumes)")
    args = ap.parse_args()
    rows = [row for row in sweep() if row["name"] in SPECS]
    results = run_sweep(rows, Path(args.work), args.target, jobs=1)
    path = ROOT / "tests" / "estimate" / f"yosys_reference_{args.target}.json"
    save_reference(results, path, args.target)
    print(f"wrote {path} ({len(results)} specs)", file=sys.stderr)


if __name__ == "__main__":
    main()
