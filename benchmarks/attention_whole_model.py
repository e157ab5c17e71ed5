"""The whole KV cache of Gemma-3-270M within 1/6 of its fp16 bytes: low-rank latents on every layer, 4k and 8k context.

    python benchmarks/attention_whole_model.py [--lengths 4096,8192] [--contexts 3,2] [--budget-length 8192]
        [--calib-tokens 4096] [--key-candidates 256x4,32x8+192x4,...] [--value-candidates 256x4,192x4]
        [--mixed 32x8+64x4,...] [--scale-bits 16] [--out docs/attention_whole_model.md]

docs/attention_accuracy.md compresses the three global layers only; the 15 sliding-window layers keep
their 512-position window in fp16, so at 8k the whole cache stays at 0.365 of fp16. Here every layer is
compressed, and everything is chosen on the train split:
1. Projections from the second moments of --calib-tokens train tokens (as attention_accuracy.py).
2. The sliding-window layers take one setting for all 15 of them per side: keys from --key-candidates,
   values from --value-candidates (RANKxBITS, or mixed WIDTHxBITS+WIDTHxBITS: int8 on the strongest latent
   channels, int4 on the next). The KL of each side alone at each setting is reported too: on this model the
   keys are the side that needs int8 on their strongest channels.
3. For each such pair, the global layers get what is left of 1/6 of the whole fp16 cache at
   --budget-length positions, allocated by measured sensitivity (codesign.attention.kv_budget: the KL
   cost of each global layer's keys or values alone at rank {32, 64, 128, 192, 256} x latent
   {16, 8, 4} bits and at the --mixed precisions (int8 on the strongest latent channels, int4 on
   the next), least summed cost under the budget, scales counted), as in attention_accuracy.py.
4. Of the pairs that fit, the one of least mean KL from the exact model with every layer replaced, on
   2 train contexts of 2,048 tokens (the last 512 scored).
5. Held-out (test split) contexts of each length, as in attention_accuracy.py: perplexity with a 95 %
   bootstrap interval over documents, the paired ratio to dense, KL from dense, top-1 agreement; beside
   the global-only 1/6 row of docs/attention_accuracy.json for comparison. The bytes are those of a
   decode step at each length (a shorter context holds relatively more sliding-window positions).
Needs the llm extra.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import torch

WINDOW = 512
GLOBAL_ROW = "low-rank, ranks and bits by KL, 1/6 of the bytes"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="4096,8192")
    parser.add_argument("--contexts", default="3,2", help="held-out contexts per length")
    parser.add_argument("--budget-length", type=int, default=8192, help="positions at which the whole cache is <= 1/6")
    parser.add_argument("--calib-tokens", type=int, default=4096, help="train tokens for the KV second moments")
    parser.add_argument("--choices-from", type=Path, default=Path("docs/attention_accuracy.json"),
                        help=f"the JSON of attention_accuracy.py whose {GLOBAL_ROW!r} row is shown for comparison")
    parser.add_argument("--key-candidates", default="256x4,32x8+224x4,32x8+192x4,32x8+160x4,16x8+176x4",
                        help="RANKxBITS or WIDTHxBITS+WIDTHxBITS of the sliding layers' keys")
    parser.add_argument("--value-candidates", default="256x4,192x4", help="the same for their values")
    parser.add_argument("--ranks", default="32,64,128,192", help="global ranks below full whose sensitivity is measured")
    parser.add_argument("--bits", default="16,8,4", help="global latent bits whose sensitivity is measured")
    parser.add_argument("--mixed", default="32x8+64x4,32x8+96x4,64x8+64x4,32x8+128x4,32x8+160x4,64x8+128x4,32x8+192x4,32x8+224x4",
                        help="mixed-precision global choices whose sensitivity is measured too (WIDTHxBITS+...; '' for none)")
    parser.add_argument("--scale-bits", type=int, default=16, choices=(32, 16),
                        help="how each latent scale is stored: float16 (default) or float32 (as attention_accuracy.py)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here (and the numbers to .json)")
    args = parser.parse_args()
    lengths, counts = [int(v) for v in args.lengths.split(",")], [int(v) for v in args.contexts.split(",")]
    if len(lengths) != len(counts):
        parser.error("--lengths and --contexts need as many entries")

    from codesign.attention.kv_budget import choice_text, parse_choice

    def settings(text: str, name: str) -> list:
        try:
            return [parse_choice(c) for c in text.split(",")]
        except ValueError:
            parser.error(f"--{name} {text!r}: expected RANKxBITS or WIDTHxBITS+WIDTHxBITS,... (e.g. 256x4,32x8+192x4)")

    keys, values = settings(args.key_candidates, "key-candidates"), settings(args.value_candidates, "value-candidates")
    scale_bits = args.scale_bits
    try:
        mixed = [parse_choice(text) for text in args.mixed.split(",") if text]
    except ValueError:
        parser.error(f"--mixed {args.mixed!r}: expected WIDTHxBITS+WIDTHxBITS,... (e.g. 32x8+96x4)")
    warnings.filterwarnings("ignore", message=".*deprecated.*")

    from codesign.attention.decode_cost import AttentionShape, dense_cost, lowrank_cost, sliding_bytes, sliding_lowrank_bytes
    from codesign.attention.gemma import ExactCore, collect_kv_moments, gemma_attention_replacements, gemma_global_layers
    from codesign.attention.kv_budget import (
        allocate_by_cost,
        format_choices,
        latent_bits,
        latent_cores,
        parse_choices,
        side_costs,
    )
    from codesign.attention.lowrank_kv import LATENT_GROUP
    from codesign.llm import load_gemma, token_stream
    from codesign.llm.long_context import evaluate, long_contexts, report_cells, report_numbers

    torch.manual_seed(0)
    started = time.perf_counter()
    model, tokenizer = load_gemma()
    shape = AttentionShape.of(model.config)
    glob = gemma_global_layers(model)
    sliding = [i for i in range(len(model.get_decoder().layers)) if i not in glob]
    dim = shape.head_dim
    reference_choice = parse_choices(json.loads(args.choices_from.read_text())["choices"][GLOBAL_ROW])
    moments = dict(enumerate(collect_kv_moments(model, token_stream(tokenizer, "train", args.calib_tokens), context=WINDOW)))
    calibration = long_contexts(tokenizer, "train", 2048, 2, skip_articles=400)

    def fp16_bytes(n: int) -> float:
        return dense_cost(n, shape).bytes + sliding_bytes(n, shape)

    def whole(n: int, global_choice: dict, sliding_choice: dict | None) -> float:
        """Whole-model KV bytes at n positions over fp16's: global layers at their choice, sliding ones at theirs."""
        kept = lowrank_cost(n, global_choice, shape, scale_bits).bytes
        kept += sliding_bytes(n, shape) if sliding_choice is None else sliding_lowrank_bytes(n, sliding_choice, shape, scale_bits)
        return kept / fp16_bytes(n)

    def uniform(key, value) -> dict:
        return {(layer, side): key if side == "key" else value for layer in sliding for side in ("key", "value")}

    def replacements(global_choice: dict, sliding_choice: dict | None):
        """The attention of every layer the choices name, storing its cache at them; the other layers as loaded."""
        choices = global_choice | (sliding_choice or {})
        cores = latent_cores({layer: moments[layer] for layer in sorted({g[0] for g in choices})}, choices, scale_bits)
        return lambda: {name: m for name, m in gemma_attention_replacements(model, lambda i: cores.get(i, ExactCore())).items()
                        if m.layer_idx in cores}

    ranks = [int(v) for v in args.ranks.split(",")] + [dim]
    kl = side_costs(model, calibration, WINDOW, {g: moments[g] for g in glob},
                    [(r, b) for r in ranks for b in [int(v) for v in args.bits.split(",")]] + mixed,
                    scale_bits=scale_bits)["kl"]
    print(f"global sensitivities measured: {time.perf_counter() - started:.0f} s", flush=True)
    n_budget = args.budget_length
    pairs: dict[str, tuple[dict, dict]] = {}  # label: (global choice, sliding choice)
    left_out: dict[str, str] = {}
    for key in keys:
        for value in values:
            label = f"keys {choice_text(key)}, values {choice_text(value)}"
            chosen_sliding = uniform(key, value)
            spare = fp16_bytes(n_budget) / 6 - sliding_lowrank_bytes(n_budget, chosen_sliding, shape, scale_bits)
            budget = int(spare * 8 / (shape.kv_heads * n_budget))  # latent bits per position over the global layers
            try:
                pairs[label] = (allocate_by_cost(kl, budget, scales=True, scale_bits=scale_bits), chosen_sliding)
            except ValueError as exc:
                left_out[label] = str(exc)
    if not pairs:
        parser.error(f"no sliding-layer setting leaves the global layers a budget at {n_budget} positions: {left_out}")
    # each sliding-layer setting of one side alone (the other side in fp16 latents at full rank, global layers exact)
    full = (dim, 16)
    alone = {f"keys {choice_text(k)}": uniform(k, full) for k in keys} | {f"values {choice_text(v)}": uniform(full, v)
                                                                         for v in values}
    train = evaluate(model, calibration, WINDOW, {"dense": None} | {label: replacements(*pair) for label, pair in pairs.items()}
                     | {f"alone: {label}": replacements({}, choice) for label, choice in alone.items()}, fidelity=True)
    alone_kl = {label: float(train.pop(f"alone: {label}").kl.mean()) for label in alone}
    train_kl = {label: float(s.kl.mean()) for label, s in train.items() if label != "dense"}
    best = min(pairs, key=train_kl.__getitem__)
    global_choice, sliding_choice = pairs[best]
    print(f"chosen: {best}, global {format_choices(global_choice)} (train KL {train_kl}); "
          f"{time.perf_counter() - started:.0f} s", flush=True)

    lines = [f"Command: `python benchmarks/attention_whole_model.py --lengths {args.lengths} --contexts {args.contexts} "
             f"--budget-length {n_budget} --calib-tokens {args.calib_tokens} --key-candidates {args.key_candidates} "
             f"--value-candidates {args.value_candidates} --ranks {args.ranks} --bits {args.bits} --mixed '{args.mixed}' "
             f"--scale-bits {scale_bits}`", "",
             f"Latent scales are stored in float{scale_bits} (one per token and {LATENT_GROUP} latent channels).", "",
             f"## Choices (train split): the whole cache within 1/6 of fp16 at {n_budget:,} positions", "",
             "Per setting of the sliding-window layers (all 15 alike), the global layers' allocation of what is left "
             "and the mean KL per token from the exact model with every layer replaced (2 train contexts of 2,048 "
             "tokens, last 512 scored):", "",
             "| sliding-window layers | global layers (LAYER:KEYS:VALUES) | whole-model KV bytes / fp16 at "
             + ", ".join(f"{n:,}" for n in lengths) + " | train KL, nats/token |", "|---|---|---|---|"]
    for label, (g, sl) in pairs.items():
        fractions = ", ".join(f"{whole(n, g, sl):.3f}" for n in lengths)
        lines.append(f"| {label} | `{format_choices(g)}` | {fractions} | {train_kl[label]:.4f}"
                     + (" (chosen)" if label == best else "") + " |")
    lines += [f"| {label} | left out: {why} | | |" for label, why in left_out.items()]
    lines += ["", "Each side of the sliding-window layers alone (the other side in fp16 latents at full rank, the global "
              "layers exact), mean KL per token on the same train contexts:", "",
              "| sliding-window layers | bits per position (scales included) | train KL, nats/token |", "|---|---|---|"]
    for label, choice in alone.items():
        side = "key" if label.startswith("keys") else "value"
        lines.append(f"| {label} | {latent_bits(choice[(sliding[0], side)], scales=True, scale_bits=scale_bits)} | "
                     f"{alone_kl[label]:.4f} |")
    bits_per_side = {side: latent_bits(sliding_choice[(sliding[0], side)], scales=True, scale_bits=scale_bits)
                     for side in ("key", "value")}
    lines += ["", f"Sliding-window layers: {bits_per_side['key']} bits per position for the keys and "
              f"{bits_per_side['value']} for the values (scales included), against {dim * 16} in fp16.", ""]
    caches = {"dense": None,  # label: (global choice, sliding choice) of the row's cache
              f"global layers only, {GLOBAL_ROW.split(', ')[-1]} (the choice of docs/attention_accuracy.md)": (reference_choice, None),
              f"every layer: sliding {best}; global {format_choices(global_choice)}": (global_choice, sliding_choice)}
    methods = {label: None if cache is None else replacements(*cache) for label, cache in caches.items()}
    record: dict = {"command": lines[0], "budget_length": n_budget, "chosen": best,
                    "global_choice": format_choices(global_choice), "train_kl": train_kl, "one_side_alone_train_kl": alone_kl,
                    "pairs": {label: format_choices(g) for label, (g, _) in pairs.items()}, "left_out": left_out,
                    "lengths": {}}
    for length, count in zip(lengths, counts):
        t0 = time.perf_counter()
        scores = evaluate(model, long_contexts(tokenizer, "test", length, count), WINDOW, methods, fidelity=True)
        dense = scores["dense"]
        docs = int(torch.unique(dense.document).numel())
        lines += [f"## {length:,}-token held-out contexts: {count}, last {WINDOW} tokens scored "
                  f"({dense.nll.numel():,} tokens, {docs} documents)", "",
                  "| KV cache | whole-model KV bytes / fp16 | perplexity (95 % CI) | vs dense (95 % CI, paired) "
                  "| KL from dense, nats/token (95 % CI) | top-1 agrees with dense |", "|---|---|---|---|---|---|"]
        entry = {}
        for label, s in scores.items():
            cache = caches[label]
            fraction = 1.0 if cache is None else whole(length, *cache)
            lines.append(f"| {label} | {fraction:.3f} | " + " | ".join(report_cells(s, dense, agree_interval=False)) + " |")
            entry[label] = report_numbers(s, dense) | {"whole_model_bytes_vs_dense": fraction}
        record["lengths"][length] = {"contexts": count, "tail": WINDOW, "documents": docs, "rows": entry}
        lines += ["", f"({time.perf_counter() - t0:.0f} s)", ""]
        print("\n".join(lines[-len(scores) - 6:]), flush=True)
    lines.append(f"Total run time: {time.perf_counter() - started:.0f} s (torch threads: {torch.get_num_threads()}).")
    if args.out:
        args.out.write_text("# The whole KV cache of Gemma-3-270M within 1/6 of fp16: low-rank latents on every layer\n\n"
                            + "\n".join(lines) + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
