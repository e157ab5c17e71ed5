"""End-to-end distillation of a 3-bit causal LM's stored scales and levels: validation first, then the held-out text.

    python benchmarks/e2e_tune_validation.py --threads 1 --stats /tmp/gemma_stats_16384.pt
    python benchmarks/e2e_tune_validation.py --model smollm2-135m --row kmeans+ef-act-refit --calib-tokens 8192 \
        --heldout-tokens 0 --lr LR --epochs N

The base: k-means + error feedback in act order, group 64, every linear (Gemma: but the tied head), covariances
of 16384 calibration tokens (one pass, the table's row kmeans+ef-act:3). Then every layer's stored
scales and levels are tuned together to minimize KL(original ‖ quantized) on the calibration windows
(codesign.compress.e2e_tune; the last 1/8 of them pick the evaluation point). Perplexity of the base and
the tuned model on the validation slice (the last 400 train-split articles), then on the held-out split
(the tables' first 2048 tokens, and --heldout-tokens with a paired interval over 512-token windows).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

from codesign.compress.e2e_tune import EndToEndConfig, tune_end_to_end
from codesign.compress.model import compress_linears
from codesign.llm import perplexity, swapped, token_stream
from codesign.llm.long_context import paired_ratio_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compress_models import row_spec  # noqa: E402  (one parser of the row names)
from gemma_ef_calibration import model_with_stats, validation_tokens  # noqa: E402  (one definition of the validation slice)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="a causal LM of compress_models.py (default gemma3-270m)")
    parser.add_argument("--row", default="kmeans+ef-act", help="the base row (compress_models.py's names)")
    parser.add_argument("--bits", type=int, default=3)
    parser.add_argument("--calib-tokens", type=int, default=16384)
    parser.add_argument("--tune-tokens", type=int, default=None, help="tuning text (default: the calibration tokens)")
    parser.add_argument("--epochs", type=int, default=EndToEndConfig().epochs)
    parser.add_argument("--lr", type=float, default=EndToEndConfig().lr)
    parser.add_argument("--val-tokens", type=int, default=2048)
    parser.add_argument("--heldout-tokens", type=int, default=16384,
                        help="held-out tokens scored after the first 2048 (0: none, for runs that choose settings)")
    parser.add_argument("--stats", type=Path, default=None, help="file caching the covariances (written if absent)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.model == "minilm":
        parser.error("--model: end-to-end tuning distills next-token distributions; minilm is not a causal LM")
    model, tokenizer, names, stats = model_with_stats(args.threads, args.calib_tokens, args.stats, args.model)
    start = time.perf_counter()
    replacements, _ = compress_linears(model, row_spec(args.row, args.bits, 0), stats, names)
    print(f"{args.row}:{args.bits} built in {time.perf_counter() - start:.0f} s", flush=True)
    val = validation_tokens(tokenizer, args.val_tokens)
    reference = perplexity(model, val, context=512).perplexity
    with swapped(model, replacements):
        before = perplexity(model, val, context=512).perplexity
    print(f"validation ({args.val_tokens} tokens): reference {reference:.3f}, base {before:.3f} "
          f"({before / reference - 1:+.1%})", flush=True)
    tokens = token_stream(tokenizer, "train", args.tune_tokens or args.calib_tokens)
    windows = [tokens[s:s + 512] for s in range(0, tokens.numel() - 511, 512)]
    base = copy.deepcopy(replacements)
    start = time.perf_counter()
    config = EndToEndConfig(epochs=args.epochs, lr=args.lr)
    result = tune_end_to_end(model, replacements, windows, config,
                             progress=lambda line: print(f"  {line} ({time.perf_counter() - start:.0f} s)", flush=True))
    print(f"tuned in {time.perf_counter() - start:.0f} s: holdout KL {result['holdout_before']:.4f} -> "
          f"{result['holdout_after']:.4f}", flush=True)
    with swapped(model, replacements):
        after = perplexity(model, val, context=512).perplexity
    print(f"validation: tuned {after:.3f} ({after / reference - 1:+.1%}), base {before:.3f}", flush=True)
    for count in (2048, args.heldout_tokens) if args.heldout_tokens else ():
        held = token_stream(tokenizer, "test", count)
        ref = perplexity(model, held, context=512)
        scores = {}
        for label, modules in (("base", base), ("tuned", replacements)):
            with swapped(model, modules):
                scores[label] = perplexity(model, held, context=512)
        cells = []
        for label, other in (("base", ref), ("tuned", ref), ("tuned", scores["base"])):
            got = scores[label]
            low, high = paired_ratio_interval(got.window_nll, other.window_nll, got.window_tokens)
            cells.append(f"{label} / {'reference' if other is ref else 'base'} {got.perplexity / other.perplexity - 1:+.1%} "
                         f"(95 % CI {low - 1:+.1%} … {high - 1:+.1%})")
        print(f"held out ({ref.n_scored} tokens): reference {ref.perplexity:.3f}, base {scores['base'].perplexity:.3f}, "
              f"tuned {scores['tuned'].perplexity:.3f}; " + "; ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
