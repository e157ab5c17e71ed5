"""Accuracy and decode cost of attention-side compression on Gemma-3-270M, from 512 to 8k context.

    python benchmarks/attention_accuracy.py [--lengths 512,4096,8192] [--contexts 6,3,2] [--calib-tokens 4096]
        [--out docs/attention_accuracy.md]

1. The SANTA estimator on real attention: the query of the last position of a 512-token window of
   held-out text and the keys/values of global layer 5 (every head); RMS error of the estimate and its
   bias relative to ‖o‖ over 2000 Philox streams, per variant and S, with the multinomial theory
   √(Σ_j p_j ‖v_j − o‖² / S) / ‖o‖.
2. Low-rank KV choices from measured sensitivity (train split only, codesign.attention.kv_budget):
   second moments of pre-RoPE keys and values over --calib-tokens train tokens; the KL cost of each
   global layer's keys or values alone at rank {32, 64, 128, 192, 256} × latent {16, 8, 4} bits, on 2
   train contexts of 2,048 tokens; choices of least summed cost under a budget: ranks only (fp16) at
   1/2 and 1/4 of the channels (50 % and 75 % compression), ranks and bits at 1/4 of the fp16 bytes,
   and at 1/6 of them counting the float32 scales of the int8/int4 latents.
3. Held-out (test split) contexts of each length (codesign.llm.long_context): the prefix prefilled
   exactly, the last 512 tokens (half the context at 512) scored with each method on the global layers
   (the sliding-window layers keep their exact 512-token window); perplexity with a 95 % bootstrap
   interval over documents, its paired ratio to dense, the mean KL per token from dense's next-token
   distribution and top-1 agreement. Methods: SANTA (three variants), Bernoulli qKᵀ sampling of the
   score stage (alone and under SANTA), the low-rank choices, and the control that attends to the last
   512 keys only. Decode-step KV bytes read (replaced layers, scales included; and the whole model)
   and attention FLOPs per step, relative to dense, from codesign.attention.decode_cost.
Needs the llm extra. GPU decode timing: benchmarks/gpu_attention_decode.py.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import torch

WINDOW = 512


def capture_layer(model, tokens: torch.Tensor, layer: int):
    """(q [1, Hq, D] of the last position, rotated keys and values [1, Hkv, n, D]) of one layer."""
    from codesign.attention.gemma import ExactCore, apply_rope, gemma_attention_replacements
    from codesign.llm import swapped

    seen = {}

    class Capture(ExactCore):
        def attend(self, block, q, k, v, cos, sin, key_pos, q_pos, mask, cache):
            seen["q"], seen["k"], seen["v"] = q[:, :, -1], apply_rope(k, cos, sin), v
            return super().attend(block, q, k, v, cos, sin, key_pos, q_pos, mask, cache)

    with torch.no_grad(), swapped(model, gemma_attention_replacements(model, lambda i: Capture() if i == layer else ExactCore())):
        model.get_decoder()(input_ids=tokens[None])
    return seen["q"].double(), seen["k"].double(), seen["v"].double()


def santa_error_table(q, k, v, scale: float, seeds: int = 2000) -> list[str]:
    """Markdown rows: RMS error and bias of each variant over `seeds` Philox streams, per S."""
    from codesign.attention import philox_uniform, sample_counts, sample_points

    n = k.shape[2]
    group = q.shape[1] // k.shape[1]
    probs = torch.softmax(torch.einsum("hd,hnd->hn", q[0], k[0].repeat_interleave(group, 0)) * scale, -1)
    values = v[0].repeat_interleave(group, 0)  # [Hq, n, D]
    exact = torch.einsum("hn,hnd->hd", probs, values)
    spread = (probs[..., None] * (values - exact[:, None]) ** 2).sum((1, 2))  # Σ_j p_j ‖v_j - o‖² per head
    norm = exact.norm(dim=-1)
    heads = q.shape[1]
    visible = torch.ones(seeds, heads, n, dtype=torch.bool)
    rows = ["| S | S/n | variant | RMS error / ‖o‖ | multinomial theory | bias / ‖o‖ |", "|---|---|---|---|---|---|"]
    for divisor in (64, 16, 8, 4):
        s = max(1, n // divisor)
        theory = float((torch.sqrt(spread / s) / norm).mean())
        # the draws of santa_attention for a batch of `seeds` copies of this query (stream r * Hq + h)
        uniforms = philox_uniform(1000 + s, torch.arange(seeds * heads * s).view(seeds, heads, s))
        for variant in ("multinomial", "stratified", "systematic"):
            points = sample_points(variant, uniforms, torch.full((seeds, heads), s))
            counts = sample_counts(probs.expand(seeds, heads, n), visible, points)
            draws = torch.einsum("rhn,hnd->rhd", counts.double(), values) / s
            rms = float((((draws - exact) ** 2).sum(-1).mean(0).sqrt() / norm).mean())
            bias = float(((draws.mean(0) - exact).norm(dim=-1) / norm).mean())
            rows.append(f"| {s} | 1/{divisor} | {variant} | {rms:.4f} | {theory:.4f} | {bias:.4f} |")
    return rows


def measured_choices(model, tokenizer, moments: dict, dim: int, args) -> dict:
    """{label: choices} of least summed KL (train split) under each budget; a budget below the choices is left out."""
    from codesign.attention.kv_budget import allocate_by_cost, side_costs
    from codesign.llm.long_context import long_contexts

    calibration = long_contexts(tokenizer, "train", 2048, 2, skip_articles=400)
    choices = [(r, b) for r in [int(v) for v in args.ranks.split(",")] + [dim] for b in [int(v) for v in args.bits.split(",")]]
    kl = side_costs(model, calibration, 512, moments, choices)["kl"]
    fp16 = {g: {c: cost for c, cost in by_choice.items() if c[1] == 16} for g, by_choice in kl.items()}
    full_bits = 2 * len(moments) * dim * 16
    budgets = {  # label: (costs, budget in bits per token, scales counted)
        "low-rank, ranks by KL, 1/2 of the channels (fp16)": (fp16, full_bits // 2, False),
        "low-rank, ranks by KL, 1/4 of the channels (fp16)": (fp16, full_bits // 4, False),
        "low-rank, ranks and bits by KL, 1/4 of the bytes": (kl, full_bits // 4, True),
        "low-rank, ranks and bits by KL, 1/6 of the bytes": (kl, full_bits // 6, True),
    }
    chosen = {}
    for label, (by_group, budget, scales) in budgets.items():
        try:
            chosen[label] = allocate_by_cost(by_group, budget, scales=scales)
        except ValueError as exc:  # the measured choices cannot go that low
            print(f"{label}: left out ({exc})", flush=True)
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="512,4096,8192")
    parser.add_argument("--contexts", default="6,3,2", help="held-out contexts per length")
    parser.add_argument("--calib-tokens", type=int, default=4096, help="train tokens for the KV second moments")
    parser.add_argument("--ranks", default="32,64,128,192", help="ranks below full whose sensitivity is measured")
    parser.add_argument("--bits", default="16,8,4", help="latent bits whose sensitivity is measured")
    parser.add_argument("--choices-from", type=Path, default=None,
                        help="take the low-rank choices from an earlier run's .json instead of measuring them again")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here (and the numbers to .json)")
    args = parser.parse_args()
    lengths, counts = [int(v) for v in args.lengths.split(",")], [int(v) for v in args.contexts.split(",")]
    if len(lengths) != len(counts):
        parser.error("--lengths and --contexts need as many entries")
    warnings.filterwarnings("ignore", message=".*deprecated.*")

    from codesign.attention.decode_cost import (
        AttentionShape,
        bernoulli_cost,
        dense_cost,
        local_cost,
        lowrank_cost,
        santa_cost,
        sliding_bytes,
    )
    from codesign.attention.gemma import (
        BernoulliQueryCore,
        LocalCore,
        SantaCore,
        collect_kv_moments,
        gemma_attention_replacements,
        gemma_global_layers,
    )
    from codesign.attention.kv_budget import format_choices, latent_cores, parse_choices
    from codesign.llm import load_gemma, token_stream
    from codesign.llm.long_context import evaluate, long_contexts, report_cells, report_numbers

    torch.manual_seed(0)
    started = time.perf_counter()
    model, tokenizer = load_gemma()
    shape = AttentionShape.of(model.config)
    glob = gemma_global_layers(model)
    dim = shape.head_dim
    lines = [f"Command: `python benchmarks/attention_accuracy.py --lengths {args.lengths} --contexts {args.contexts} "
             f"--calib-tokens {args.calib_tokens} --ranks {args.ranks} --bits {args.bits}"
             + (f" --choices-from {args.choices_from}" if args.choices_from else "") + "`", ""]

    test = token_stream(tokenizer, "test", WINDOW)
    q, k, v = capture_layer(model, test, layer=glob[0])
    lines += [f"## SANTA estimator on layer {glob[0]} (global), n = {k.shape[2]} keys, {q.shape[1]} query heads", ""]
    lines += santa_error_table(q, k, v, model.config.query_pre_attn_scalar ** -0.5) + [""]
    print("\n".join(lines), flush=True)

    all_moments = collect_kv_moments(model, token_stream(tokenizer, "train", args.calib_tokens), context=WINDOW)
    moments = {i: all_moments[i] for i in glob}
    if args.choices_from:
        chosen = {label: parse_choices(text) for label, text in json.loads(args.choices_from.read_text())["choices"].items()}
    else:
        chosen = measured_choices(model, tokenizer, moments, dim, args)
    print(f"low-rank choices ready: {time.perf_counter() - started:.0f} s", flush=True)

    bernoulli_cores: dict[str, list] = {}

    def on_global(make_core):
        return lambda: gemma_attention_replacements(model, make_core, layers="global")

    def bernoulli(label: str, density: float, ratio: int | None):
        bernoulli_cores[label] = []

        def make(i: int):
            inner = SantaCore(ratio, "systematic", seed=i) if ratio else None
            bernoulli_cores[label].append(BernoulliQueryCore(density, inner, seed=1000 + i))
            return bernoulli_cores[label][-1]
        return on_global(make)

    # label: attention replacements (None: the model as loaded), and the decode-step cost at n positions given the
    # share of key features read (measured for the Bernoulli rows)
    methods = {"dense": None}
    costs = {"dense": lambda n, features: dense_cost(n, shape)}
    for var, r in (("systematic", 16), ("systematic", 32), ("stratified", 16), ("multinomial", 16)):
        label = f"SANTA {var}, S = n/{r}"
        methods[label] = on_global(lambda i, r=r, var=var: SantaCore(r, var, seed=i))
        costs[label] = lambda n, features, r=r: santa_cost(n, r, shape)
    for density, ratio in ((0.75, None), (0.5, None), (0.75, 16)):
        label = f"Bernoulli qKᵀ, {density:g} of the key features" + (f", + SANTA systematic n/{ratio}" if ratio else "")
        methods[label] = bernoulli(label, density, ratio)
        costs[label] = lambda n, features, ratio=ratio: bernoulli_cost(n, features, ratio, shape)

    def lowrank(choice: dict):
        cores = latent_cores(moments, choice)
        return on_global(lambda i: cores[i])

    for label, choice in chosen.items():
        methods[label] = lowrank(choice)
        costs[label] = lambda n, features, choice=choice: lowrank_cost(n, choice, shape)
    control = f"control: exact, only the last {WINDOW} keys"
    methods[control] = on_global(lambda i: LocalCore(WINDOW))
    costs[control] = lambda n, features: local_cost(n, WINDOW, shape)

    lines += ["## Low-rank choices (train split: second moments and sensitivities)", "",
              "Rank × latent bits of each global layer's keys and values, least summed KL under each budget "
              "(codesign.attention.kv_budget):", ""]
    lines += [f"- {label}: `{format_choices(choice)}`" for label, choice in chosen.items()] + [""]
    lines += [("Read with the control row: on joined articles exact attention over only the last 512 keys scores "
               "below full attention, so a perplexity below dense can mean lost distant history; the KL from dense "
               "and the top-1 agreement are not fooled that way (docs/attention_long_context_control.md)."), ""]
    record: dict = {"command": lines[0], "choices": {k: format_choices(c) for k, c in chosen.items()}, "lengths": {}}
    for length, count in zip(lengths, counts):
        tail = min(512, length // 2)
        t0 = time.perf_counter()
        for cores in bernoulli_cores.values():
            cores.clear()
        rows = methods if length > WINDOW else {k: m for k, m in methods.items() if k != control}
        scores = evaluate(model, long_contexts(tokenizer, "test", length, count), tail, rows, fidelity=True)
        dense = scores["dense"]
        base = dense_cost(length, shape)
        sliding = sliding_bytes(length, shape)
        docs = int(torch.unique(dense.document).numel())
        lines += [f"## {length:,}-token held-out contexts: {count}, last {tail} tokens scored "
                  f"({dense.nll.numel():,} tokens, {docs} documents)", "",
                  "| attention on the global layers | KV bytes / dense (global layers; whole model) | attention FLOPs "
                  "/ dense | perplexity (95 % CI) | vs dense (95 % CI, paired) | KL from dense, nats/token (95 % CI) "
                  "| top-1 agrees with dense |", "|---|---|---|---|---|---|---|"]
        entry = {}
        for label, s in scores.items():
            cores = bernoulli_cores.get(label)
            features = sum(c.features_read for c in cores) / sum(c.rows for c in cores) if cores else None
            c = costs[label](length, features)
            read, whole, flops = c.bytes / base.bytes, (c.bytes + sliding) / (base.bytes + sliding), c.flops / base.flops
            lines.append(f"| {label} | {read:.3f}; {whole:.3f} | {flops:.2f} | "
                         + " | ".join(report_cells(s, dense, agree_interval=False)) + " |")
            entry[label] = report_numbers(s, dense) | {"kv_bytes_vs_dense": read, "whole_model_bytes_vs_dense": whole,
                                                       "flops_vs_dense": flops, "key_features_read": features}
        record["lengths"][length] = {"contexts": count, "tail": tail, "documents": docs, "rows": entry}
        lines += ["", f"({time.perf_counter() - t0:.0f} s)", ""]
        print("\n".join(lines[-len(scores) - 6:]), flush=True)
    lines.append(f"Total run time: {time.perf_counter() - started:.0f} s (torch threads: {torch.get_num_threads()}).")
    if args.out:
        args.out.write_text("# Attention compression on Gemma-3-270M: accuracy and decode cost, 512 to 8k context\n\n"
                            + "\n".join(lines) + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
