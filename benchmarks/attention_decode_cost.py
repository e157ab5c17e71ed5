"""Decode-step cost of each attention method per context length: KV bytes read and attention FLOPs (analytic).

    python benchmarks/attention_decode_cost.py [--lengths 512,2048,4096,8192,16384,32768] [--out docs/attention_decode_cost.md]

For one decode step (one new query token) of Gemma-3-270M's attention (4 query heads, 1 KV head,
head_dim 256; 3 global layers with the whole context, 15 sliding-window layers with the last 512
positions), counted from the shapes, not timed:
- bytes: the keys, values (fp16), latents and their scales (float32 per 32 channels of an int8/int4
  latent) that the step reads, for the replaced global layers and for the whole model (the
  sliding layers read their window in fp16, whatever the method);
- FLOPs (2 per multiply-add) of the score and value stages in the global layers:
  dense 2·n·D per query head each; SANTA scores every key (2·n·D) and aggregates S = n/ratio
  sampled values (2·S·D); the pre-RoPE low-rank kernel rebuilds each key once per KV head
  (2·n·r_k·D, plus the rotation), then scores (2·n·D per query head), and aggregates value latents
  (2·n·r_v per query head) before one up-projection (2·r_v·D per query head); the control reads
  only the last 512 positions.
The low-rank rows are the rank × bits choices of docs/attention_kv_budget.md. GPU time is in
benchmarks/gpu_attention_decode.py (needs a GPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codesign.attention.kv_budget import byte_fraction, parse_choices

Q_HEADS, KV_HEADS, HEAD_DIM, GLOBAL_LAYERS, SLIDING_LAYERS, WINDOW = 4, 1, 256, (5, 11, 17), 15, 512
LOWRANK = {  # label: choices (docs/attention_kv_budget.md)
    "low-rank KV, ranks by KL, 1/2 of the channels (fp16)": "5:64x16:192x16,11:64x16:256x16,17:128x16:64x16",
    "low-rank KV, ranks and bits by KL, 1/4": "5:128x8:256x4,11:128x8:256x4,17:256x4:256x4",
    "low-rank KV, ranks and bits by KL, 1/6": "5:64x4:192x4,11:128x4:256x4,17:128x4:256x4",
}


def costs(n: int) -> dict[str, tuple[float, float]]:
    """{method: (bytes read by the global layers, FLOPs of their attention)} for one decode step at n positions."""
    dense_bytes = len(GLOBAL_LAYERS) * KV_HEADS * n * HEAD_DIM * 2 * 2
    dense_flops = len(GLOBAL_LAYERS) * Q_HEADS * 2 * (2 * n * HEAD_DIM)
    out = {"dense": (dense_bytes, dense_flops)}
    for ratio in (16, 32):
        s = max(1, n // ratio)
        out[f"SANTA systematic, S = n/{ratio}"] = (
            len(GLOBAL_LAYERS) * KV_HEADS * (n + s) * HEAD_DIM * 2,
            len(GLOBAL_LAYERS) * Q_HEADS * 2 * (n + s) * HEAD_DIM)
    for label, text in LOWRANK.items():
        choices = parse_choices(text)
        total_flops = 0.0
        for layer in GLOBAL_LAYERS:
            rk, rv = choices[(layer, "key")][0], choices[(layer, "value")][0]
            rebuild = KV_HEADS * 2 * n * rk * HEAD_DIM + KV_HEADS * 3 * n * HEAD_DIM  # up-projection + rotation
            total_flops += rebuild + Q_HEADS * (2 * n * HEAD_DIM + 2 * n * rv + 2 * rv * HEAD_DIM)
        out[label] = (byte_fraction(choices, HEAD_DIM, scales=True) * dense_bytes, total_flops)
    w = min(n, WINDOW)
    out[f"control: exact, only the last {WINDOW} keys"] = (dense_bytes * w / n, dense_flops * w / n)
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
        dense_bytes, dense_flops = by_method["dense"]
        sliding = SLIDING_LAYERS * KV_HEADS * min(n, WINDOW) * HEAD_DIM * 2 * 2
        lines += [f"### {n:,} positions", "",
                  "| attention on the global layers | KV bytes read (global layers) | vs dense | whole model, vs dense "
                  "| attention FLOPs (global layers) | vs dense |", "|---|---:|---:|---:|---:|---:|"]
        for name, (b, f) in by_method.items():
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
