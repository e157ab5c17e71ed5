"""Where does SRR lose to scaled QER on the whole of Gemma-3-270M? Validation perplexity with SRR's layers swapped in by kind and by depth.

    python benchmarks/gemma_srr_ablation.py --threads 1 --stats /tmp/gemma_stats_16384.pt

Both methods on the act-order error-feedback k-means base (3 bits, rank 32, group 64, covariances of
16384 calibration tokens from the original model), every linear but the tied head. The model then runs
with scaled QER everywhere except the named subset of layers, which take SRR's result (the layers where
SRR's guard kept k = 0 are the same in both). Each subset is scored on the validation slice (the last
400 train-split articles, never the held-out split) against the all-scaled model on the same windows,
with a paired 95 % interval over windows.

--block-guard adds SRR with its choices made per block rather than per layer: in each block, starting
from scaled QER everywhere, each kind of layer (q and k, v, o, gate and up, down) takes SRR's result
when that lowers the block's output error on --guard-windows calibration windows (the block run on
the original model's hidden states, each token's output divided by its RMS, as the next block's input
norm sees it: block_tune's "normalized" objective), and keeps scaled otherwise.

--model-guard adds SRR with its choices made on the whole model (codesign.compress.model_guard): units of
one layer kind in one third of the depth take SRR's result when that lowers the mean next-token NLL (--objective
nll) or KL to the original model (kl) on --guard-windows windows of the train text after the calibration tokens (which no quantizer
calibrated on) by more than --confidence standard errors of the paired per-window difference.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from codesign.compress.model import compress_linears
from codesign.compress.model_guard import choose_by_model
from codesign.llm import perplexity, swapped, token_stream
from codesign.llm.long_context import paired_ratio_interval

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compress_models import row_spec  # noqa: E402  (one parser of the row names)
from gemma_ef_calibration import model_with_stats, validation_tokens  # noqa: E402  (one definition of the validation slice)

KINDS = {"q, k": ("q_proj", "k_proj"), "v": ("v_proj",), "o": ("o_proj",), "gate, up": ("gate_proj", "up_proj"),
         "down": ("down_proj",)}


def block_of(name: str) -> int:
    """The decoder block index in a linear's module path."""
    return int(name.split("layers.")[1].split(".")[0])


def record_block_calls(model: torch.nn.Module, windows: list[torch.Tensor]) -> list[list[tuple[tuple, dict]]]:
    """Each decoder block's (args, kwargs) for every window, on the original model."""
    blocks = model.base_model.layers
    calls: list[list[tuple[tuple, dict]]] = [[] for _ in blocks]
    hooks = [block.register_forward_pre_hook(
        lambda m, args, kwargs, b=b: calls[b].append((args, kwargs)),
        with_kwargs=True) for b, block in enumerate(blocks)]
    try:
        with torch.no_grad():
            for window in windows:
                model.base_model(input_ids=window[None], use_cache=False)  # no cache to grow on replay
    finally:
        for h in hooks:
            h.remove()
    return calls


def block_error(model: torch.nn.Module, b: int, calls: list[tuple[tuple, dict]], targets: list[torch.Tensor],
                modules: dict[str, torch.nn.Module]) -> float:
    """Mean squared error of block b's RMS-normalized outputs with `modules` swapped in, against targets."""
    def unit(x: torch.Tensor) -> torch.Tensor:
        return x * x.pow(2).mean(-1, keepdim=True).clamp(min=1e-30).rsqrt()

    block = model.base_model.layers[b]
    total = 0.0
    with torch.no_grad(), swapped(model, modules):
        for (args, kwargs), target in zip(calls, targets):
            out = block(*args, **kwargs)
            out = out[0] if isinstance(out, (tuple, list)) else out
            total += float((unit(out.float()) - unit(target.float())).pow(2).mean())
    return total / len(targets)


def block_guard(model, names, scaled, srr, kept, windows) -> list[str]:
    """The layers that take SRR's result when each block chooses per layer kind on its normalized output error."""
    calls = record_block_calls(model, windows)
    chosen: list[str] = []
    for b, block_calls in enumerate(calls):
        block = model.base_model.layers[b]
        with torch.no_grad():
            targets = [(lambda o: o[0] if isinstance(o, (tuple, list)) else o)(block(*a, **k)) for a, k in block_calls]
        inside = [n for n in names if block_of(n) == b]
        current = {n: scaled[n] for n in inside}
        best = block_error(model, b, block_calls, targets, current)
        for label, kinds in KINDS.items():
            group = [n for n in inside if n in kept and n.endswith(kinds)]
            if not group:
                continue
            trial = {**current, **{n: srr[n] for n in group}}
            error = block_error(model, b, block_calls, targets, trial)
            print(f"  block {b} {label}: SRR {100 * (error / best - 1):+.1f} %", flush=True)
            if error < best:
                best, current = error, trial
                chosen += group
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", type=int, default=3)
    parser.add_argument("--base", default="ef-act", help="the error-feedback suffix of both rows (default ef-act)")
    parser.add_argument("--calib-tokens", type=int, default=16384)
    parser.add_argument("--val-tokens", type=int, default=8192)
    parser.add_argument("--stats", type=Path, default=None, help="file caching the covariances (written if absent)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--block-guard", action="store_true", help="also SRR with its choices made per block")
    parser.add_argument("--model-guard", action="store_true", help="also SRR with its choices made on the whole model")
    parser.add_argument("--objective", default="nll", help="the model guard's objective, nll or kl (default nll)")
    parser.add_argument("--confidence", type=float, default=2.0, help="the model guard's standard errors (default 2)")
    parser.add_argument("--guard-windows", type=int, default=8, help="calibration windows of 512 tokens the guards use")
    parser.add_argument("--subsets", action="store_true", default=None,
                        help="score SRR on each layer kind and depth alone (the default without --block-guard)")
    args = parser.parse_args()
    model, tokenizer, names, stats = model_with_stats(args.threads, args.calib_tokens, args.stats)
    start = time.perf_counter()
    scaled, _ = compress_linears(model, row_spec(f"qer-scaled+{args.base}", args.bits, 0), stats, names)
    srr, _ = compress_linears(model, row_spec(f"srr+{args.base}", args.bits, 0), stats, names)
    print(f"both methods built in {time.perf_counter() - start:.0f} s", flush=True)
    kept = [n for n in names if srr[n].qweight.preserved_rank > 0]
    print(f"SRR kept k > 0 on {len(kept)} of {len(names)} linears: "
          + ", ".join(f"{label} {sum(n.endswith(kinds) for n in kept)}" for label, kinds in KINDS.items()))
    val = validation_tokens(tokenizer, args.val_tokens)
    base = perplexity(model, val, context=512)
    with swapped(model, scaled):
        all_scaled = perplexity(model, val, context=512)
    print(f"validation, {base.n_scored} tokens: reference {base.perplexity:.3f}, all scaled {all_scaled.perplexity:.3f}")
    depth = max(block_of(n) for n in names) + 1
    thirds = [range(i * depth // 3, (i + 1) * depth // 3) for i in range(3)]
    subsets = {"every layer SRR kept": kept}
    if args.subsets or (args.subsets is None and not (args.block_guard or args.model_guard)):
        subsets |= {f"{label} only": [n for n in kept if n.endswith(kinds)] for label, kinds in KINDS.items()}
        subsets |= {f"blocks {r.start}-{r.stop - 1} only": [n for n in kept if block_of(n) in r] for r in thirds}
    tokens = token_stream(tokenizer, "train", 512 * args.guard_windows)
    windows = [tokens[s:s + 512] for s in range(0, tokens.numel(), 512)]
    if args.block_guard:
        subsets["the block guard's choices"] = block_guard(model, names, scaled, srr, kept, windows)
    if args.model_guard:  # scored on the train text after the calibration tokens, which no quantizer saw
        start = time.perf_counter()
        after = token_stream(tokenizer, "train", args.calib_tokens + 512 * args.guard_windows)[args.calib_tokens:]
        unseen = [after[s:s + 512] for s in range(0, after.numel(), 512)]
        chosen, _ = choose_by_model(model, scaled, {n: srr[n] for n in kept}, unseen, confidence=args.confidence, objective=args.objective,
                                    progress=lambda line: print(f"  model guard: {line} ({time.perf_counter() - start:.0f} s)",
                                                                flush=True))
        subsets["the model guard's choices"] = chosen
    print("| SRR on | layers | perplexity | vs all scaled (95 % CI, paired over windows) |")
    print("|---|---|---|---|")
    for label, chosen in subsets.items():
        if not chosen:
            print(f"| {label} | 0 | - | - |")
            continue
        with swapped(model, {**scaled, **{n: srr[n] for n in chosen}}):
            got = perplexity(model, val, context=512)
        low, high = paired_ratio_interval(got.window_nll, all_scaled.window_nll, got.window_tokens)
        print(f"| {label} | {len(chosen)} | {got.perplexity:.3f} | {got.perplexity / all_scaled.perplexity - 1:+.1%} "
              f"({low - 1:+.1%} … {high - 1:+.1%}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
