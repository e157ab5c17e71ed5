"""Calibration-free quantizers at equal bits per weight: perplexity against bits per weight over group sizes.

The k-means grid stores a float16 scale and a uint8 zero point per group, HQQ a float16 scale and zero point, so
at one group size the two differ in bits per weight and no group size that divides every layer gives both the
same. Across group sizes (rows of benchmarks/compress_models.py run with --group-size 32, 64, 128) each method
traces a curve; this script reads k-means' curve at every peer row's bits per weight and pairs the two on the same
held-out windows:

    python benchmarks/compress_models.py --model qwen2.5-coder-0.5b --blocks $(seq -s, 0 23) --group-size 32 \\
        --rows kmeans:3,int-asym:3,hqq:3,kmeans:4,int-asym:4,hqq:4 --threads 2 --eval-tokens 2048 \\
        --calib-tokens 4096 --context 512 --out docs/compress_models_qwen.json      # and --group-size 128
    python benchmarks/compress_frontier.py docs/compress_models_qwen.json --model qwen2.5-coder-0.5b \\
        --plot docs/compress_frontier_qwen.png

Between two k-means rows the per-window NLL is interpolated linearly in bits per weight. Where the curve is
convex (NLL falling ever more slowly as bits are added, which the three group sizes let one check: the script
says whether each curve is) the chord lies above it, so an interpolated k-means figure errs against k-means.
A k-means row at the peer's own bits per weight (RTN stores the same per-group values) is used as it is.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from compress_models import KMEANS_GRID, _blocks_label, _same_spec, row_spec

from codesign.llm.long_context import paired_ratio_interval

PEERS = ("int-asym", "hqq")
NAMES = {"kmeans": "k-means", "int-asym": "RTN (int-asym)", "hqq": "HQQ"}


def calibration_free(rows: list[dict], model: str, blocks: str) -> dict[tuple[str, int], list[dict]]:
    """{(method, bits): rows by bits per weight}: the calibration-free rows of one model and block set, one per group size."""
    found: dict[tuple[str, int], dict[int, dict]] = {}
    for r in rows:
        method, group = r["method"], r.get("group_size", 64)
        if (method in ("kmeans", *PEERS) and r["model"] == model and _blocks_label(r.get("blocks")) == blocks
                and (method != "kmeans" or r.get("kmeans_grid") == KMEANS_GRID)  # today's grid only
                and _same_spec(r, method, row_spec(method, r["bits"], 0, group_size=group), hqq_axis=1)
                and "window_nll" in r["metric"]):
            found.setdefault((method, r["bits"]), {})[group] = r  # the last row of a group size
    return {key: sorted(by_group.values(), key=lambda r: r["bits_per_weight"]) for key, by_group in found.items()}


def _window_nll(row: dict) -> list[float]:
    return list(row["metric"]["window_nll"])


def at_bits(curve: list[dict], bpw: float) -> tuple[list[float], str] | None:
    """(per-window NLL of the curve at `bpw`, how it was read) or None outside the curve's range."""
    for r in curve:
        if abs(r["bits_per_weight"] - bpw) < 5e-3:
            return _window_nll(r), f"group {r['group_size']}, measured"
    for low, high in zip(curve, curve[1:], strict=False):
        if low["bits_per_weight"] < bpw < high["bits_per_weight"]:
            t = (bpw - low["bits_per_weight"]) / (high["bits_per_weight"] - low["bits_per_weight"])
            nll = [(1 - t) * a + t * b for a, b in zip(_window_nll(low), _window_nll(high), strict=True)]
            return nll, f"between groups {high['group_size']} and {low['group_size']}"
    return None


def convexity(curve: list[dict]) -> str:
    """Whether the mean NLL falls ever more slowly with bits per weight across the curve's rows."""
    if len(curve) < 3:
        return "(fewer than 3 group sizes: not checked)"
    points = [(r["bits_per_weight"], sum(_window_nll(r)) / r["metric"]["n_tokens"]) for r in curve]
    slopes = [(y2 - y1) / (x2 - x1) for (x1, y1), (x2, y2) in zip(points, points[1:], strict=False)]
    return "convex" if all(a <= b for a, b in zip(slopes, slopes[1:], strict=False)) else "NOT convex"


def frontier_table(curves: dict[tuple[str, int], list[dict]]) -> str:
    """Markdown: each peer row beside k-means read at its bits per weight, the paired ratio with its 95 % interval."""
    out = ["| bits | peer row | bits/weight | peer perplexity | k-means at that bits/weight | k-means / peer (95 % CI) |",
           "|---|---|---|---|---|---|"]
    for (method, bits), rows in sorted(curves.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if method not in PEERS or ("kmeans", bits) not in curves:
            continue
        for peer in rows:
            m = peer["metric"]
            read = at_bits(curves[("kmeans", bits)], peer["bits_per_weight"])
            head = (f"| {bits} | {NAMES[method]}, group {peer['group_size']} | {peer['bits_per_weight']:.2f} | "
                    f"{m['perplexity']:.3f} ({100 * (m['perplexity'] / m['reference_perplexity'] - 1):+.1f} %) |")
            if read is None:
                out.append(head + " outside the k-means rows' range | |")
                continue
            nll, how = read
            counts = m["window_tokens"]
            ppl = math.exp(sum(nll) / sum(counts))
            low, high = paired_ratio_interval(nll, _window_nll(peer), counts)
            ratio = ppl / m["perplexity"]
            out.append(head + f" {ppl:.3f} ({100 * (ppl / m['reference_perplexity'] - 1):+.1f} %; {how}) | "
                       f"{100 * (ratio - 1):+.1f} % ({100 * (low - 1):+.1f} … {100 * (high - 1):+.1f}) |")
    return "\n".join(out)


def plot(curves: dict[tuple[str, int], list[dict]], model: str, path: Path) -> None:
    """Perplexity change against bits per weight, one panel per code width, one line per method."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    widths = sorted({bits for _, bits in curves})
    fig, axes = plt.subplots(1, len(widths), figsize=(5 * len(widths), 4), squeeze=False)
    for ax, bits in zip(axes[0], widths, strict=True):
        for method, style in (("kmeans", "o-"), ("int-asym", "s--"), ("hqq", "^-.")):
            rows = curves.get((method, bits), [])
            if not rows:
                continue
            xs = [r["bits_per_weight"] for r in rows]
            ys = [100 * (r["metric"]["perplexity"] / r["metric"]["reference_perplexity"] - 1) for r in rows]
            ax.plot(xs, ys, style, label=NAMES[method])
            for r, x, y in zip(rows, xs, ys, strict=True):
                ax.annotate(f"g{r['group_size']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_title(f"{model}, {bits}-bit codes", fontsize=10)
        ax.set_xlabel("bits per weight (scales and zero points included)")
        ax.set_ylabel("perplexity change vs float (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    """Print the equal-bits table (and draw the curves) of one model's calibration-free rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path, help="JSON rows of benchmarks/compress_models.py")
    parser.add_argument("--model", required=True)
    parser.add_argument("--blocks", default="0-23", help="the compressed blocks as the summary labels them (default 0-23)")
    parser.add_argument("--plot", type=Path, default=None, help="PNG of perplexity change against bits per weight")
    args = parser.parse_args()
    if not args.rows.is_file():
        print(f"compress_frontier: {args.rows} does not exist", file=sys.stderr)
        return 2
    try:
        rows = json.loads(args.rows.read_text())
    except json.JSONDecodeError as error:
        print(f"compress_frontier: {args.rows} is not JSON rows ({error})", file=sys.stderr)
        return 2
    curves = calibration_free(rows, args.model, args.blocks)
    if ("kmeans", 3) not in curves and ("kmeans", 4) not in curves:
        print(f"compress_frontier: no calibration-free k-means rows of {args.model} (blocks {args.blocks}) in {args.rows}",
              file=sys.stderr)
        return 2
    for (method, bits), rows in sorted(curves.items()):
        groups = ", ".join(f"g{r['group_size']} {r['bits_per_weight']:.2f}" for r in rows)
        print(f"{NAMES[method]}, {bits} bits: {groups}; NLL against bits per weight {convexity(rows)}")
    print(frontier_table(curves))
    if args.plot:
        plot(curves, args.model, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
