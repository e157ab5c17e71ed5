"""How much calibration error feedback needs on Gemma-3-270M, and in which order, scored on a validation slice (not the held-out split).

    python benchmarks/gemma_ef_calibration.py --calib-tokens 1024,16384 --threads 1
    python benchmarks/gemma_ef_calibration.py --variants --method kmeans --bits 4 --threads 1
    python benchmarks/gemma_ef_calibration.py --options act,act+search,act+refit,act+search+refit --method kmeans \
        --bits 4,3 --threads 1 --stats /tmp/gemma_stats_16384.pt

All 126 linears but the tied head, group 64. Without --variants: asymmetric integer (or --method),
round to nearest, then error feedback with the input covariances of the first N train-split tokens
for each N given. With --variants: error feedback on 16384 calibration tokens four ways: one pass
over the original model's covariances or sequential (block by block, each block under the blocks
quantized before it), each in column order or in act order. With --options: one-pass error feedback
on 16384 calibration tokens with each '+'-joined set of options (act: act order, search: group scale
search before the feedback, refit: least-squares group scales after it, refitN: N rounds of feedback
and refit, wbook: Hessian-diagonal-weighted k-means levels, seq: sequential, tuneN: N epochs of
block-wise tuning of the stored scales and levels, which runs sequentially, with mse: on the plain
squared error of the block outputs rather than the RMS-normalized one; "plain": none),
for each of the comma-listed --bits. --stats caches the covariances in a file (with their token count). The
validation slice is the first 2048 tokens of the last 400 train-split articles (after any calibration
text), so a choice made here never looks at the held-out tokens the tables report.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import torch

from codesign.compress.model import CalibrationStats, MethodSpec, compress_linears
from codesign.compress.pipeline import Budget, calibrate, compress_sequentially, linear_names, load_model
from codesign.llm import perplexity, swapped, token_stream, wiki_articles

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compress_models import EF_FLAGS, row_spec  # noqa: E402  (one parser of the error-feedback flags)

VALIDATION_ARTICLES = 400
VARIANT_CALIB_TOKENS = 16384  # the calibration of the --variants runs (the tables' setting)


def validation_tokens(tokenizer, count: int) -> torch.Tensor:
    """The validation slice: the first `count` tokens of the last VALIDATION_ARTICLES train-split articles."""
    return token_stream(tokenizer, "train", count, skip_articles=len(wiki_articles("train")) - VALIDATION_ARTICLES)


def model_with_stats(threads: int, calib_tokens: int, path: Path | None,
                     name: str = "gemma3-270m") -> tuple[torch.nn.Module, object, list[str], CalibrationStats]:
    """A benchmark model (Gemma by default), its tokenizer, its linears' names and their covariances: read from path
    when it holds them for calib_tokens, else computed (and saved there)."""
    torch.set_num_threads(threads)
    model, tokenizer = load_model(name)
    names = linear_names(name, model)
    return model, tokenizer, names, cached_stats(model, tokenizer, names, calib_tokens, path, name)


def cached_stats(model, tokenizer, names: list[str], calib_tokens: int, path: Path | None,
                 name: str = "gemma3-270m") -> CalibrationStats:
    """Input covariances of a model's linears over the first calib_tokens train tokens: read from path, else computed
    (and written there when path is given)."""
    if path is not None and path.exists():
        cached = torch.load(path)
        if cached.pop("calib_tokens", 16384) != calib_tokens:
            raise SystemExit(f"{path} holds covariances of another calibration token count")
        return CalibrationStats(**cached)
    stats = calibrate(name, model, tokenizer, names, Budget(calib_tokens=calib_tokens), inputs=True)
    if path is not None:
        torch.save({**dataclasses.asdict(stats), "calib_tokens": calib_tokens}, path)
    return stats


def option_spec(method: str, bits: int, options: str) -> MethodSpec:
    """The error-feedback MethodSpec of a '+'-joined option set ("plain" for none), read as the table's row flags."""
    return row_spec(f"{method}+ef" + ("" if options == "plain" else "-" + options.replace("+", "-")), bits, qat_steps=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calib-tokens", default="1024,16384",
                        help="comma list of calibration token counts; with --variants or --options one count "
                             f"(default {VARIANT_CALIB_TOKENS})")
    parser.add_argument("--val-tokens", type=int, default=2048)
    parser.add_argument("--bits", default="4", help="bit width, or a comma list of them (with --options)")
    parser.add_argument("--method", default="int-asym", help="the grid (int-asym, int, kmeans); default int-asym")
    parser.add_argument("--variants", action="store_true",
                        help=f"compare one-pass / sequential error feedback, column / act order "
                             f"(one --calib-tokens count, default {VARIANT_CALIB_TOKENS})")
    parser.add_argument("--options", default=None,
                        help=f"comma list of error-feedback option sets, each a '+'-joined subset of {', '.join(EF_FLAGS)} "
                             f"or 'plain' (one --calib-tokens count, default {VARIANT_CALIB_TOKENS})")
    parser.add_argument("--stats", type=Path, default=None,
                        help="file caching the one-pass runs' covariances (written if absent; refused if of another token count)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    counts = [int(c) for c in args.calib_tokens.split(",")]
    option_tokens = counts[0] if len(counts) == 1 else VARIANT_CALIB_TOKENS  # the --variants / --options runs
    model, tokenizer = load_model("gemma3-270m")
    names = linear_names("gemma3-270m", model)
    val = validation_tokens(tokenizer, args.val_tokens)
    reference = perplexity(model, val, context=512).perplexity
    print(f"reference perplexity on {args.val_tokens} validation tokens: {reference:.3f}", flush=True)

    def block_started(done: int, total: int, name: str) -> None:
        if name.endswith(".q_proj"):
            print(f"  {done}/{total} layers, {name.rsplit('.', 2)[0]} ({time.perf_counter() - begun:.0f} s)", flush=True)

    begun = time.perf_counter()

    def score(spec: MethodSpec, stats, label: str) -> None:
        start = time.perf_counter()
        if spec.sequential:
            replacements, layers = compress_sequentially("gemma3-270m", model, tokenizer, spec, names,
                                                          Budget(calib_tokens=option_tokens), block_started)
        else:
            replacements, layers = compress_linears(model, spec, stats, names)
        with swapped(model, replacements):
            ppl = perplexity(model, val, context=512).perplexity
        errors = [r.activation_error for r in layers if r.activation_error is not None]
        act = f"{sum(errors) / len(errors):.4f}" if errors else "-"
        print(f"| {label} | {ppl:.3f} | {100 * (ppl / reference - 1):+.1f} % | {act} | "
              f"{time.perf_counter() - start:.0f} |", flush=True)

    widths = [int(b) for b in args.bits.split(",")]
    if len(widths) > 1 and args.options is None:
        raise SystemExit("several --bits go with --options")

    def variant_stats() -> CalibrationStats:
        if args.stats is not None and args.stats.exists():
            cached = torch.load(args.stats)
            count = cached.pop("calib_tokens", VARIANT_CALIB_TOKENS)  # files without it were all written at the default
            if count != option_tokens:
                raise SystemExit(f"{args.stats} holds covariances of {count} calibration tokens, not {option_tokens}")
            return CalibrationStats(**cached)
        stats = calibrate("gemma3-270m", model, tokenizer, names, Budget(calib_tokens=option_tokens), inputs=True)
        if args.stats is not None:
            torch.save({**dataclasses.asdict(stats), "calib_tokens": option_tokens}, args.stats)
        return stats

    if args.variants or args.options is not None:
        print(f"{option_tokens} calibration tokens")
    print(f"| {args.method}, {args.bits} bits, group 64 | perplexity | vs reference | act. error (in-sample) | time (s) |")
    print("|---|---|---|---|---|")
    if args.options is not None:
        specs = [(bits, o, option_spec(args.method, bits, o)) for o in args.options.split(",") for bits in widths]
        stats = variant_stats() if any(not s.sequential for _, _, s in specs) else None
        begun = time.perf_counter()
        for bits, options, spec in specs:
            score(spec, stats, f"{bits} bits, error feedback, {options}")
        return 0
    args.bits = widths[0]
    if args.variants:
        stats = variant_stats()
        for sequential in (False, True):
            for act_order in (False, True):
                spec = MethodSpec(args.method, args.bits, error_feedback=True, act_order=act_order, sequential=sequential)
                score(spec, stats, f"error feedback, {'sequential' if sequential else 'one pass'}, "
                                   f"{'act' if act_order else 'column'} order")
        return 0
    score(MethodSpec(args.method, args.bits), None, "round to nearest")
    for count in counts:
        stats = calibrate("gemma3-270m", model, tokenizer, names, Budget(calib_tokens=count), inputs=True)
        score(MethodSpec(args.method, args.bits, error_feedback=True), stats, f"error feedback, {count} calibration tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
