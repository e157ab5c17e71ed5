"""Decode-step cost of each attention method per context length: KV bytes read and attention FLOPs (analytic).

    python benchmarks/attention_decode_cost.py [--lengths 512,2048,4096,8192,16384,32768] [--out docs/attention_decode_cost.md]

For one decode step (one new query token) of Gemma-3-270M's attention (4 query heads, 1 KV head,
head_dim 256; 3 global layers with the whole context, 15 sliding-window layers with the last 512
positions), counted from the shapes by codesign.attention.decode_cost (its docstring gives every
count), not timed: the KV bytes read by the replaced global layers and by the whole model (the
sliding layers read their window in fp16, whatever the method), and the FLOPs of the global
layers' attention. The low-rank rows are the rank × bits choices of docs/attention_kv_budget.md;
Bernoulli qKᵀ rows read the given share of the key features. GPU time is in
benchmarks/gpu_attention_decode.py (needs a GPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codesign.attention.decode_cost import (
    GEMMA3_270M,
    Cost,
    bernoulli_cost,
    dense_cost,
    local_cost,
    lowrank_cost,
    santa_cost,
    sliding_bytes,
)
from codesign.attention.kv_budget import parse_choices

LOWRANK = {  # label: choices (docs/attention_kv_budget.md)
    "low-rank KV, ranks by KL, 1/2 of the channels (fp16)": "5:64x16:192x16,11:64x16:256x16,17:128x16:64x16",
    "low-rank KV, ranks and bits by KL, 1/4": "5:128x8:256x4,11:128x8:256x4,17:256x4:256x4",
    "low-rank KV, ranks and bits by KL, 1/6": "5:64x4:192x4,11:128x4:256x4,17:128x4:256x4",
}
WINDOW = GEMMA3_270M.window


def costs(n: int) -> dict[str, Cost]:
    """{method: cost in the global layers} for one decode step at n positions."""
    out = {"dense": dense_cost(n)}
    for ratio in (16, 32):
        out[f"SANTA systematic, S = n/{ratio}"] = santa_cost(n, ratio)
    out["Bernoulli qKᵀ, half the key features"] = bernoulli_cost(n, 0.5)
    out["Bernoulli qKᵀ, half the key features, + SANTA systematic n/16"] = bernoulli_cost(n, 0.5, 16)
    for label, text in LOWRANK.items():
        out[label] = lowrank_cost(n, parse_choices(text))
    out[f"control: exact, only the last {WINDOW} keys"] = local_cost(n, WINDOW)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="512,2048,4096,8192,16384,32768")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [f"Command: `python benchmarks/attention_decode_cost.py --lengths {args.lengths}` (analytic: counted from the "
             "shapes, not timed)", ""]
    for n in [int(v) for v in args.lengths.split(",")]:
        by_method = costs(n)
        dense_bytes, dense_flops = by_method["dense"].bytes, by_method["dense"].flops
        sliding = sliding_bytes(n)
        lines += [f"### {n:,} positions", "",
                  "| attention on the global layers | KV bytes read (global layers) | vs dense | whole model, vs dense "
                  "| attention FLOPs (global layers) | vs dense |", "|---|---:|---:|---:|---:|---:|"]
        for name, cost in by_method.items():
            b, f = cost.bytes, cost.flops
            lines.append(f"| {name} | {b / 1024:,.0f} KiB | {b / dense_bytes:.3f} | {(b + sliding) / (dense_bytes + sliding):.3f} "
                         f"| {f / 1e6:,.1f} M | {f / dense_flops:.2f} |")
        lines.append("")
    text = "# Decode-step cost per attention method (Gemma-3-270M shapes)\n\n" + "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
