"""slang lint of every RTL form codesign emits: errors and warnings per class, waived or not.

Emits each variant of codesign.fpga.lint.lint_variants (both learners, every pipeline form, the
co-simulation suite's shapes), elaborates its bare and AXI tops under slang -Weverything and prints,
per class, how many findings (deduplicated per top), and the waiver of rtl/lint_waivers.toml that
covers it. Exit status 1 when any error or unwaived warning remains.

    python benchmarks/rtl_lint.py                # every variant
    python benchmarks/rtl_lint.py --folder DIR   # one emitted RTL folder (or a build folder's rtl/)
    python benchmarks/rtl_lint.py --list         # also every unwaived finding, one per line
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

from codesign.fpga.lint import count_by_class, emit_variant, lint_folder, lint_variants, load_waivers, unwaived


def main() -> int:
    """Lint the variants (or one folder) and print the count per class."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, help="an emitted RTL folder (rtl_manifest.json inside)")
    parser.add_argument("--list", action="store_true", help="print every unwaived finding")
    args = parser.parse_args()
    waivers = load_waivers()
    totals: Counter[tuple[str, str]] = Counter()
    open_findings = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.folder is not None:
            folder = args.folder / "rtl" if (args.folder / "rtl" / "rtl_manifest.json").is_file() else args.folder
            if not (folder / "rtl_manifest.json").is_file():
                print(f"error: {args.folder} holds no rtl_manifest.json", file=sys.stderr)
                return 2
            folders = [("folder", folder)]
        else:
            folders = [(name, emit_variant(spec, pipe, Path(tmp) / name)) for name, spec, pipe in lint_variants()]
        for name, folder in folders:
            for top, findings in lint_folder(folder).items():
                c = count_by_class(findings)
                totals.update(c)
                left = unwaived(findings, waivers)
                open_findings += [(name, top, f) for f in left]
                errors = sum(v for (s, _), v in c.items() if s == "error")
                print(f"{name:28s} {top:16s} errors {errors:3d}  warnings {sum(c.values()) - errors:4d}  unwaived {len(left):3d}")
    print(f"\n{'severity':8s} {'class':26s} {'count':>6s}  waiver")
    for (severity, kind), n in sorted(totals.items()):
        reason = waivers.get(kind, {}).get("reason", "") if severity == "warning" else ""
        print(f"{severity:8s} {kind:26s} {n:6d}  {reason or '(none)'}")
    print(f"\n{len(open_findings)} finding(s) neither fixed nor waived")
    if args.list:
        for name, top, f in open_findings:
            print(f"{name} {top}: {f}")
    return 1 if open_findings else 0


if __name__ == "__main__":
    sys.exit(main())
