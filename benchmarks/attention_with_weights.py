"""Attention compression composed with weight compression on Gemma-3-270M at long context, in one table.

    python benchmarks/attention_with_weights.py [--lengths 4096,8192] [--contexts 3,2]
        [--kv 5:128x8:256x4,11:128x8:256x4,17:256x4:256x4] [--out docs/attention_with_weights.md]

Weights (codesign.compress.quantize_, every linear but the tied head, no calibration): as loaded
(float32); 8-bit asymmetric integer, group 64 (AsymIntConfig(8, 64)); 4-bit k-means, group 32
(KMeansConfig(4, 32)). Attention on the global layers (5, 11, 17): dense; SANTA systematic with
S = n/16; the low-rank KV cache with --kv's rank x latent bits per layer and side
(LAYER:KEYRANKxBITS:VALUERANKxBITS, projections from 8,192 train tokens of the model it runs in).
Protocol: codesign.llm.long_context (held-out contexts, last 512 tokens scored). Every row is
compared with the uncompressed model under exact attention on the same tokens: the perplexity
ratio with a paired 95 % bootstrap interval over documents, and the KL divergence per token from
that model's next-token distribution and top-1 agreement with it (evaluate(..., references=)).
Needs the llm extra.
"""

from __future__ import annotations

import argparse
import copy
import time
import warnings
from pathlib import Path

import torch

CALIB_TOKENS = 8192


def attention_methods(model, cores: dict, lowrank_label: str) -> dict:
    """The attention rows for one model: dense, SANTA n/16 and the low-rank cache with `cores` on the global layers."""
    from codesign.attention.gemma import SantaCore, gemma_attention_replacements

    return {"dense": None,
            "SANTA systematic, S = n/16": lambda: gemma_attention_replacements(
                model, lambda i: SantaCore(16, "systematic", seed=i), layers="global"),
            lowrank_label: lambda: gemma_attention_replacements(model, lambda i: cores[i], layers="global")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="4096,8192")
    parser.add_argument("--contexts", default="3,2")
    parser.add_argument("--kv", default="5:128x8:256x4,11:128x8:256x4,17:256x4:256x4",
                        help="the 1/4 choice of docs/attention_kv_budget.md by default")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*deprecated.*")

    from codesign.attention.gemma import collect_kv_moments, gemma_global_layers
    from codesign.attention.kv_budget import byte_fraction, latent_cores, parse_choices
    from codesign.compress import AsymIntConfig, KMeansConfig, quantize_
    from codesign.llm import load_gemma, token_stream
    from codesign.llm.long_context import TailScores, evaluate, long_contexts, reference_tails, report_cells

    started = time.perf_counter()
    original, tokenizer = load_gemma()
    glob = gemma_global_layers(original)
    kv = parse_choices(args.kv)
    if set(kv) != {(i, side) for i in glob for side in ("key", "value")}:
        parser.error(f"--kv must give keys and values of the global layers {glob}")
    dim = original.config.head_dim
    kv_label = (f"low-rank KV, {byte_fraction(kv, dim):.3f} of fp16 bytes "
                f"({byte_fraction(kv, dim, scales=True):.3f} with scales)")
    weights = {"float32 (as loaded)": None, "int8 asym, group 64": AsymIntConfig(bits=8, group_size=64),
               "k-means 4-bit, group 32": KMeansConfig(bits=4, group_size=32)}
    lengths = [int(v) for v in args.lengths.split(",")]
    counts = [int(v) for v in args.contexts.split(",")]
    contexts = {length: long_contexts(tokenizer, "test", length, count) for length, count in zip(lengths, counts)}
    references = {length: reference_tails(original, cs, 512) for length, cs in contexts.items()}
    print(f"references: {time.perf_counter() - started:.0f} s", flush=True)
    scores: dict[int, dict[str, TailScores]] = {length: {} for length in lengths}
    for weight_name, config in weights.items():
        t0 = time.perf_counter()
        model = original if config is None else quantize_(copy.deepcopy(original), config, kernel="torch")
        moments = collect_kv_moments(model, token_stream(tokenizer, "train", CALIB_TOKENS), context=512)
        cores = latent_cores({i: moments[i] for i in glob}, kv)
        methods = attention_methods(model, cores, kv_label)
        for length in lengths:
            got = evaluate(model, contexts[length], 512, methods, fidelity=True, references=references[length])
            for attention, s in got.items():
                scores[length][f"{weight_name} | {attention}"] = s
        print(f"{weight_name}: {time.perf_counter() - t0:.0f} s", flush=True)
        if model is not original:
            del model

    lines = [f"Command: `python benchmarks/attention_with_weights.py --lengths {args.lengths} --contexts {args.contexts} "
             f"--kv {args.kv}`", "",
             "Every row against the uncompressed model with exact attention on the same tokens (its first row). Read "
             "perplexity with the control of docs/attention_long_context_control.md (lost distant history lowers it on "
             "these contexts); the KL and top-1 columns are not fooled that way.", ""]
    for length, count in zip(lengths, counts):
        by_name = scores[length]
        base = by_name["float32 (as loaded) | dense"]
        lines += [f"### {length:,}-token held-out contexts: {count}, last 512 tokens scored "
                  f"({torch.unique(base.document).numel()} documents)", "",
                  "| weights | attention (global layers) | perplexity (95 % CI) | vs uncompressed (95 % CI, paired) "
                  "| KL from uncompressed, nats/token (95 % CI) | top-1 agrees |", "|---|---|---|---|---|---|"]
        for name, s in by_name.items():
            weight_name, attention = name.split(" | ")
            lines.append(f"| {weight_name} | {attention} | " + " | ".join(report_cells(s, base, agree_interval=False))
                         + " |")
        lines.append("")
        print("\n".join(lines[-len(by_name) - 4:]), flush=True)
    lines.append(f"Total run time: {time.perf_counter() - started:.0f} s (torch threads: {torch.get_num_threads()}).")
    if args.out:
        args.out.write_text("# Attention compression with weight compression (Gemma-3-270M, long context)\n\n"
                            + "\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
