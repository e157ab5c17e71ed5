"""Perplexity of the calibration-free grids on a validation slice (train split, never the held-out text).

    nice python benchmarks/kmeans_grid_validation.py --model qwen2.5-coder-0.5b --blocks 0,12,23 --bits 3 --threads 1

The slice is benchmarks/gemma_ef_calibration.py's: the first --val-tokens tokens of the last 400
train-split articles (calibration text is the first train-split tokens; none is needed here). Each
variant quantizes the linears of --blocks and scores the model in windows of 512 tokens: k-means by
default (each layer keeps the zero-point or the symmetric grid by weight error; at 3 bits 0.0 exact and
Lloyd weighted toward large weights), variants of it, and min-max round to nearest (AsymIntConfig).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from codesign.compress import AsymIntConfig, KMeansConfig, quantize
from codesign.compress.pipeline import linear_names, load_model
from codesign.llm import perplexity, swapped, token_stream
from codesign.llm.wiki import wiki_articles

VALIDATION_ARTICLES = 400


def main() -> int:
    """Print one line per variant."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--blocks", default=None, help="comma list of blocks (default: all)")
    parser.add_argument("--bits", type=int, default=3)
    parser.add_argument("--val-tokens", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", default="default,zero,symmetric,rtn",
                        help="comma list of: default, zero, symmetric, uniform (zero points, uniform levels), "
                             "uniform-noclip (the same without the range search), noclip (the default without it), "
                             "free-zero (0.0 not kept on the grid, Lloyd unweighted), exact-zero (0.0 kept), ends (the "
                             "lowest and highest level kept at the range's ends, Lloyd unweighted), magnitude (Lloyd "
                             "weighted toward large weights, magnitude_weight=3), flat (Lloyd unweighted, "
                             "magnitude_weight=0), ends-noclip (ends without the range search), lloyd-only (Lloyd "
                             "levels, no refit, no range search), uniform-start (min-max, no refit, no range search), rtn")
    args = parser.parse_args()
    try:
        every = _variants(args.bits)
    except ValueError as exc:
        parser.error(str(exc))
    unknown = [v for v in args.variants.split(",") if v not in every]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}: choose from {', '.join(every)}")
    variants = [every[v] for v in args.variants.split(",")]
    torch.set_num_threads(args.threads)
    try:
        model, tokenizer = load_model(args.model)
        blocks = None if args.blocks is None else [int(b) for b in args.blocks.split(",")]
        names = linear_names(args.model, model, blocks)
    except (ValueError, IndexError) as exc:
        parser.error(str(exc))
    skip = len(wiki_articles("train")) - VALIDATION_ARTICLES
    val = token_stream(tokenizer, "train", args.val_tokens, skip_articles=skip)
    reference = perplexity(model, val, context=512).perplexity
    print(f"{args.model}, blocks {args.blocks or 'all'}, {args.bits} bits, {args.val_tokens} validation tokens: "
          f"reference {reference:.3f}", flush=True)
    modules = dict(model.named_modules())
    for label, config in variants:
        start = time.perf_counter()
        replacements = {}
        for name in names:
            linear = modules[name]
            dense = torch.nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
            dense.weight.data = quantize(linear.weight.detach().float(), config).dequantize()
            if linear.bias is not None:
                dense.bias.data = linear.bias.detach().clone()
            replacements[name] = dense.requires_grad_(False)
        seconds = time.perf_counter() - start
        with swapped(model, replacements):
            ppl = perplexity(model, val, context=512).perplexity
        print(f"| {label} | {ppl:.3f} | {100 * (ppl / reference - 1):+.1f} % | {seconds:.0f} s |", flush=True)
    return 0


def _variants(bits: int) -> dict[str, tuple[str, KMeansConfig | AsymIntConfig]]:
    """Every variant by name: (label, config) at `bits` (ValueError for a width the quantizers refuse)."""
    return {"default": ("k-means, default", KMeansConfig(bits=bits)),
            "zero": ("k-means, zero points", KMeansConfig(bits=bits, zero_point=True)),
            "symmetric": ("k-means, symmetric", KMeansConfig(bits=bits, zero_point=False)),
            "uniform": ("zero points, uniform levels", KMeansConfig(bits=bits, zero_point=True, lloyd=False)),
            "uniform-noclip": ("zero points, uniform levels, no range search",
                               KMeansConfig(bits=bits, zero_point=True, lloyd=False, clip_ratios=(1.0,))),
            "noclip": ("k-means, default without the range search", KMeansConfig(bits=bits, clip_ratios=(1.0,))),
            "free-zero": ("k-means, fractional zero points and free levels, Lloyd unweighted (exact_zero=False, "
                          "magnitude_weight=0)", KMeansConfig(bits=bits, exact_zero=False, magnitude_weight=0.0)),
            "exact-zero": ("k-means, 0.0 kept exact (exact_zero=True)", KMeansConfig(bits=bits, exact_zero=True)),
            "ends": ("k-means, the end levels kept at the range's ends, Lloyd unweighted (keep_ends=True, "
                     "magnitude_weight=0)", KMeansConfig(bits=bits, keep_ends=True, magnitude_weight=0.0)),
            "magnitude": ("k-means, Lloyd weighted toward large weights (magnitude_weight=3)",
                          KMeansConfig(bits=bits, magnitude_weight=3.0)),
            "flat": ("k-means, Lloyd unweighted (magnitude_weight=0)", KMeansConfig(bits=bits, magnitude_weight=0.0)),
            "ends-noclip": ("k-means, end levels at the unclipped range's ends, Lloyd unweighted (keep_ends=True, "
                            "clip_ratios=(1.0,), magnitude_weight=0)",
                            KMeansConfig(bits=bits, keep_ends=True, clip_ratios=(1.0,), magnitude_weight=0.0)),
            "lloyd-only": ("k-means, Lloyd levels without refits or range search (refits=0, clip_ratios=(1.0,))",
                           KMeansConfig(bits=bits, refits=0, clip_ratios=(1.0,))),
            "uniform-start": ("the uniform start alone: min-max, no refit, no range search (lloyd=False, refits=0, "
                              "clip_ratios=(1.0,))",
                              KMeansConfig(bits=bits, zero_point=True, lloyd=False, refits=0, clip_ratios=(1.0,))),
            "rtn": ("min-max RTN (AsymIntConfig)", AsymIntConfig(bits=bits))}


if __name__ == "__main__":
    sys.exit(main())
