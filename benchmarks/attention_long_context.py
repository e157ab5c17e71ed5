"""Long-context perplexity of Gemma-3-270M with SANTA and the low-rank KV cache on its global layers.

    python benchmarks/attention_long_context.py [--lengths 512,2048,4096,8192] [--contexts 8,4,4,3]
        [--tail 512] [--calib-tokens 8192] [--layers global|all] [--fidelity] [--out docs/attention_long_context.md]

Protocol: codesign.llm.long_context. Held-out (test split) articles joined into contexts of each
length; the prefix prefilled exactly, the last --tail tokens (half the context at 512) run through
each method and scored; 95 % intervals by bootstrap over documents (2,000 resamples), for the
perplexity and, paired, for its ratio to dense on the same tokens. The methods replace the global
layers (5, 11, 17) unless --layers all; the sliding-window layers keep their 512-token window.
Low-rank projections: second moments of pre-RoPE keys and values over --calib-tokens tokens of
the train split (512-token windows), ranks allocated over the replaced layers' heads, K and V
together (codesign.attention.fit_gemma_projections). KV bytes are per decode step, relative to an
fp16 cache: of the replaced layers, and of the whole model at that context (sliding layers hold
min(L, 512) positions). --fidelity adds, per method, the mean KL divergence per scored token from
dense's next-token distribution and how often their most likely tokens agree (95 % intervals by the
same bootstrap): the measure the joined-articles protocol cannot flatter (docs/attention_long_context_control.md).
Needs the llm extra.
"""

from __future__ import annotations

import argparse
import shlex
import time
import warnings
from pathlib import Path

import torch

WINDOW = 512


def kv_fractions(kind: str, ratio: float, keep: float, bits: int, length: int, n_global: int, n_sliding: int,
                 layers: str) -> tuple[float, float]:
    """(bytes read per decode step of the replaced layers, of the whole model), relative to fp16 dense; scales left out."""
    if kind == "dense":
        replaced = 1.0
    elif kind == "local":
        replaced = min(length, WINDOW) / length
    elif kind == "santa":
        replaced = 0.5 + 0.5 / ratio  # every key, 1/ratio of the values
    else:
        replaced = keep * bits / 16
    sliding_len = min(length, WINDOW)
    if layers == "all":
        return replaced, replaced
    total = n_global * length + n_sliding * sliding_len
    return replaced, (n_global * length * replaced + n_sliding * sliding_len) / total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="512,2048,4096,8192")
    parser.add_argument("--contexts", default="8,4,4,3", help="contexts per length")
    parser.add_argument("--tail", type=int, default=512, help="scored tokens per context (at most half the context)")
    parser.add_argument("--calib-tokens", type=int, default=8192)
    parser.add_argument("--layers", choices=("global", "all"), default="global")
    parser.add_argument("--rows", default="", help="only the rows whose label contains one of these (comma-separated)")
    parser.add_argument("--fidelity", action="store_true", help="also KL from dense and top-1 agreement per token")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lengths = [int(v) for v in args.lengths.split(",")]
    counts = [int(v) for v in args.contexts.split(",")]
    if len(lengths) != len(counts):
        parser.error("--lengths and --contexts need as many entries")
    warnings.filterwarnings("ignore", message=".*deprecated.*")

    from codesign.attention.gemma import (
        LocalCore,
        LowRankCore,
        SantaCore,
        collect_kv_moments,
        fit_gemma_projections,
        gemma_attention_replacements,
        gemma_global_layers,
    )
    from codesign.llm import load_gemma, token_stream
    from codesign.llm.long_context import evaluate, long_contexts, report_cells

    started = time.perf_counter()
    model, tokenizer = load_gemma()
    glob = gemma_global_layers(model)
    n_layers = len(model.get_decoder().layers)
    replaced = list(range(n_layers)) if args.layers == "all" else glob
    n_global, n_sliding = len(glob), n_layers - len(glob)
    moments = collect_kv_moments(model, token_stream(tokenizer, "train", args.calib_tokens), context=WINDOW)
    print(f"calibration moments: {time.perf_counter() - started:.0f} s", flush=True)

    def santa(ratio: int, variant: str):
        return lambda: gemma_attention_replacements(model, lambda i: SantaCore(ratio, variant, seed=i), layers=args.layers)

    def lowrank(keep: float, bits: int):
        by_layer = dict(zip(replaced, fit_gemma_projections([moments[i] for i in replaced], keep)))
        return lambda: gemma_attention_replacements(model, lambda i: LowRankCore(by_layer[i], bits=bits),
                                                    layers=args.layers)

    # (label, kind, ratio, keep, bits, factory)
    methods = [("dense", "dense", 1, 1.0, 16, None)]
    methods += [(f"SANTA {v}, S = n/{r}", "santa", r, 1.0, 16, santa(r, v))
                for v, r in (("systematic", 16), ("systematic", 32), ("stratified", 16), ("multinomial", 16))]
    methods += [(f"low-rank KV {1 - keep:.0%}, {'fp16' if bits == 16 else f'int{bits}'} latent", "lowrank", 1, keep, bits,
                 lowrank(keep, bits)) for keep, bits in ((0.5, 16), (0.25, 16), (0.5, 4))]

    methods.append((f"control: exact, only the last {WINDOW} keys", "local", 1, 1.0, 16,
                    lambda: gemma_attention_replacements(model, lambda i: LocalCore(WINDOW), layers=args.layers)))
    if args.rows:
        wanted = args.rows.split(",")
        methods = [m for m in methods if m[0] == "dense" or any(w in m[0] for w in wanted)]
    layer_note = ("the global layers (5, 11, 17); the sliding-window layers keep their exact 512-token window"
                  if args.layers == "global" else "every layer (the sliding-window layers keep their window)")
    lines = [f"Command: `python benchmarks/attention_long_context.py --lengths {args.lengths} --contexts {args.contexts} "
             f"--tail {args.tail} --calib-tokens {args.calib_tokens} --layers {args.layers}"
             + (f" --rows {shlex.quote(args.rows)}" if args.rows else "") + (" --fidelity" if args.fidelity else "") + "`", "",
             f"Methods replace {layer_note}. Perplexity of the last scored tokens of each context "
             "(codesign.llm.long_context), 95 % bootstrap intervals over documents; the ratio interval is paired "
             "(the same documents resampled for the method and for dense).", ""]
    for length, count in zip(lengths, counts):
        tail = min(args.tail, length // 2)
        t0 = time.perf_counter()
        contexts = long_contexts(tokenizer, "test", length, count)
        scores = evaluate(model, contexts, tail, {label: make for label, *_, make in methods}, fidelity=args.fidelity)
        dense = scores["dense"]
        docs = int(torch.unique(dense.document).numel())
        lines += [f"### {length:,}-token contexts: {count} contexts, last {tail} tokens scored ({dense.nll.numel():,} "
                  f"tokens, {docs} documents)", "",
                  "| attention | KV bytes read per decode step, replaced layers / whole model | perplexity (95 % CI) "
                  "| vs dense (95 % CI) |" + (" KL from dense, nats/token (95 % CI) | top-1 agrees with dense (95 % CI) |"
                                             if args.fidelity else ""),
                  "|---|---|---|---|" + ("---|---|" if args.fidelity else "")]
        for label, kind, ratio, keep, bits, _ in methods:
            part, whole = kv_fractions(kind, ratio, keep, bits, length, n_global, n_sliding, args.layers)
            lines.append(f"| {label} | {part:.3f} / {whole:.3f} | " + " | ".join(report_cells(scores[label], dense)) + " |")
        lines += ["", f"({time.perf_counter() - t0:.0f} s)", ""]
        print("\n".join(lines[-len(methods) - 6:]), flush=True)
    lines.append(f"Total run time: {time.perf_counter() - started:.0f} s (torch threads: {torch.get_num_threads()}).")
    if args.out:
        args.out.write_text("# Attention compression at long context (Gemma-3-270M)\n\n" + "\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
