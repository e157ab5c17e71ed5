"""Memory and time of end-to-end tuning: the resident memory it adds over the quantized model, and its seconds.

    python benchmarks/e2e_tune_memory.py --model smollm2-135m --windows 4 --epochs 1

Every linear (Gemma: but the tied head) is quantized calibration-free (k-means, group 64, --bits), then
codesign.compress.e2e_tune.tune_end_to_end runs --epochs over --windows windows of 512 train-split tokens (one
held aside). A thread samples the process's resident set every 20 ms; the figure is its peak during tuning less
the resident set just before, so it counts what tuning holds (teacher log-probabilities, the trainable values,
what the backward pass keeps) and not the models. To compare two versions of the code, run the same command in
both checkouts (the tuning is deterministic: the holdout KL it prints must agree).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import torch

from codesign.compress.e2e_tune import EndToEndConfig, tune_end_to_end
from codesign.compress.model import compress_linears
from codesign.compress.pipeline import linear_names, load_model
from codesign.llm import token_stream

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compress_models import row_spec  # noqa: E402  (one parser of the row names)

PAGE = 4096


def resident_bytes() -> int:
    """The process's resident set now (Linux /proc)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * PAGE


class PeakSampler:
    """The peak resident set seen by a thread sampling every `period` seconds while in the `with` block."""

    def __init__(self, period: float = 0.02) -> None:
        self.period, self.peak, self._stop = period, 0, threading.Event()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, resident_bytes())
            time.sleep(self.period)

    def __enter__(self) -> PeakSampler:
        self.peak = resident_bytes()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, resident_bytes())


def main() -> int:
    """Quantize, tune end to end, print the memory tuning added and its time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--bits", type=int, default=3)
    parser.add_argument("--windows", type=int, default=4, help="windows of 512 train-split tokens (one held aside)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.model == "minilm":
        parser.error("--model: end-to-end tuning distills next-token distributions; minilm is not a causal LM")
    if args.windows < 2:
        parser.error("--windows: need 2 or more (one is held aside)")
    torch.set_num_threads(args.threads)
    model, tokenizer = load_model(args.model)
    names = linear_names(args.model, model)
    replacements, _ = compress_linears(model, row_spec("kmeans", args.bits, 0), None, names)
    tokens = token_stream(tokenizer, "train", 512 * args.windows)
    windows = [tokens[s:s + 512] for s in range(0, tokens.numel() - 511, 512)]
    weights = sum(m.qweight.shape[0] * m.qweight.shape[1] for m in replacements.values())
    before = resident_bytes()
    start = time.perf_counter()
    with PeakSampler() as sampler:
        result = tune_end_to_end(model, replacements, windows, EndToEndConfig(epochs=args.epochs))
    seconds = time.perf_counter() - start
    print(f"{args.model}, {len(names)} linears ({weights / 1e6:.1f} M weights), {args.bits} bits, {len(windows)} windows, "
          f"{args.epochs} epoch(s), {args.threads} thread(s): tuning added {(sampler.peak - before) / 2**30:.2f} GiB "
          f"of resident memory at its peak (process before tuning {before / 2**30:.2f} GiB); {seconds:.1f} s; "
          f"holdout KL {result['holdout_before']:.5f} -> {result['holdout_after']:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
