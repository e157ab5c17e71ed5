"""Accuracy of attention-side compression on Gemma-3-270M: SANTA error vs S, perplexity with SANTA and low-rank KV.

    python benchmarks/attention_accuracy.py [--tokens 2048] [--context 512] [--calib-tokens 2048] [--out docs/attention_accuracy.md]

1. SANTA estimator on real attention: the query of the last position of a `context`-token window
   of held-out text and the keys/values of global layer 5 (every head); RMS error of the estimate
   relative to ‖o‖ and its bias (‖mean - o‖ / ‖o‖) over 2000 seeds, per variant and S, with the theory
   √(Σ_j p_j ‖v_j - o‖² / S) / ‖o‖.
2. Perplexity on the first --tokens tokens of the held-out split (chunked windows of --context
   tokens, see codesign.llm.perplexity): dense; SANTA at S = n/4, n/8, n/16 (n: keys the query
   sees) for systematic and multinomial sampling, n/8 for stratified; low-rank KV at 25/50/75 % compression (keys projected before RoPE,
   float16 latent), at 50 % with int8 and int4 latents, and at 50 % with keys projected after RoPE.
   Projections come from --calib-tokens tokens of the train split.
Needs the llm extra (pip install 'codesign[llm]'); prints markdown tables and writes them to --out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048, help="held-out tokens for perplexity")
    parser.add_argument("--context", type=int, default=512, help="window length (chunked)")
    parser.add_argument("--calib-tokens", type=int, default=2048, help="train tokens for the KV projections")
    parser.add_argument("--out", type=Path, default=None, help="write the tables (markdown) here")
    args = parser.parse_args()

    from codesign.attention.gemma import LowRankCore, SantaCore, collect_kv_moments, fit_gemma_projections, gemma_attention_replacements
    from codesign.llm import load_gemma, perplexity, swapped, token_stream

    torch.manual_seed(0)
    started = time.perf_counter()
    model, tokenizer = load_gemma()
    test = token_stream(tokenizer, "test", args.tokens)
    lines = [f"Command: `python benchmarks/attention_accuracy.py --tokens {args.tokens} --context {args.context} "
             f"--calib-tokens {args.calib_tokens}`", ""]

    q, k, v = capture_layer(model, test[: args.context], layer=5)
    scale = model.config.query_pre_attn_scalar ** -0.5
    lines += [f"### SANTA estimator on Gemma-3-270M layer 5 (global), n = {k.shape[2]} keys, 4 query heads", ""]
    lines += santa_error_table(q, k, v, scale) + [""]
    print("\n".join(lines), flush=True)

    def ppl(make_core=None) -> tuple[float, float]:
        t0 = time.perf_counter()
        if make_core is None:
            result = perplexity(model, test, context=args.context)
        else:
            with swapped(model, gemma_attention_replacements(model, make_core)):
                result = perplexity(model, test, context=args.context)
        return result.perplexity, time.perf_counter() - t0

    dense, seconds = ppl()
    rows = [f"### Perplexity, {args.tokens} held-out tokens, chunked windows of {args.context}", "",
            "| attention | KV bytes read per decode step (rel.) | perplexity | vs dense | eval s |", "|---|---|---|---|---|",
            f"| dense | 1 | {dense:.3f} | — | {seconds:.0f} |"]
    print(rows[-1], flush=True)
    santa_settings = [("systematic", r) for r in (4, 8, 16)] + [("stratified", 8)] + [("multinomial", r) for r in (4, 8, 16)]
    for variant, ratio in santa_settings:
        value, seconds = ppl(lambda i, r=ratio, var=variant: SantaCore(r, var, seed=i))
        reads = f"K + V/{ratio}: {0.5 + 0.5 / ratio:.3f}"
        rows.append(f"| SANTA {variant}, S = n/{ratio} | {reads} | {value:.3f} | {value / dense - 1:+.1%} | {seconds:.0f} |")
        print(rows[-1], flush=True)
    calibration = token_stream(tokenizer, "train", args.calib_tokens)
    moments = collect_kv_moments(model, calibration, context=args.context)
    settings = [(0.75, 16, "pre"), (0.5, 16, "pre"), (0.25, 16, "pre"), (0.5, 8, "pre"), (0.5, 4, "pre"), (0.5, 16, "post")]
    for keep, bits, mode in settings:
        projections = fit_gemma_projections(moments, keep, rope_mode=mode)
        value, seconds = ppl(lambda i, p=projections, b=bits: LowRankCore(p[i], bits=b))
        size = keep * bits / 16
        latent = {16: "fp16", 8: "int8", 4: "int4"}[bits]
        rows.append(f"| low-rank KV {1 - keep:.0%} compression, {latent} latent, keys {mode}-RoPE | "
                    f"{size:.3f} (+ scales) | {value:.3f} | {value / dense - 1:+.1%} | {seconds:.0f} |")
        print(rows[-1], flush=True)
    lines += rows + ["", f"Total run time: {time.perf_counter() - started:.0f} s "
                     f"(torch threads: {torch.get_num_threads()})."]
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
