"""Held-aside error of block tuning on chosen Gemma-3-270M blocks: group scales (and levels) alone, or codes too.

    python benchmarks/gemma_block_tune_probe.py --blocks 2,9 --codes 0          # scales and levels only
    python benchmarks/gemma_block_tune_probe.py --blocks 2,9 --codes 2e-3       # codes too, at this step
    python benchmarks/gemma_block_tune_probe.py --blocks 9 --codes 5e-3 --calib-tokens 32768

Only the named blocks are quantized (k-means, 3 bits, group 64, error feedback in act order) and tuned
(8 epochs, normalized objective), each under the original blocks before it; the figure per block is
the tuning's own held-aside calibration error before and after (train split only).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from codesign.compress.block_tune import BlockTuneConfig, tune_block
from codesign.compress.linear import QuantizedLinear
from codesign.compress.model import MethodSpec
from codesign.compress.pipeline import Budget, _calibration_run, linear_names, load_model
from codesign.compress.sequential import sequential_replacements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="2,9")
    parser.add_argument("--codes", type=float, default=0.0, help="Adam step of the codes' positions (0: codes fixed)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--calib-tokens", type=int, default=16384)
    args = parser.parse_args()
    torch.set_num_threads(1)
    blocks = [int(b) for b in args.blocks.split(",")]
    model, tokenizer = load_model("gemma3-270m")
    names = [n for n in linear_names("gemma3-270m", model) if any(f".layers.{b}." in n for b in blocks)]
    config = MethodSpec("kmeans", 3, error_feedback=True, act_order=True).layer_config()
    tuning = BlockTuneConfig(epochs=args.epochs, codes=args.codes > 0, code_lr=args.codes or 2e-3)

    def tune(block, layers, forward, targets) -> None:
        start = time.perf_counter()
        e = tune_block(block, layers, forward, targets, tuning)
        print(f"| {layers[0].__class__.__name__} block | {e['holdout_before']:.5g} | {e['holdout_after']:.5g} | "
              f"{100 * (1 - e['holdout_after'] / e['holdout_before']):.1f} % | {time.perf_counter() - start:.0f} |", flush=True)

    print(f"blocks {blocks}, codes {'trained, step ' + str(args.codes) if args.codes else 'fixed'}, "
          f"{args.calib_tokens} calibration tokens")
    print("| block | held-aside error before | after | less | time (s) |\n|---|---|---|---|---|")
    sequential_replacements(model, names, lambda name, linear, cov: QuantizedLinear.from_linear(linear, config, cov),
                            _calibration_run("gemma3-270m", model, tokenizer, Budget(calib_tokens=args.calib_tokens)),
                            None, tune)
    return 0


if __name__ == "__main__":
    sys.exit(main())
