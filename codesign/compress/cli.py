"""`codesign compress MODEL --method M --bits B [--rank R] --out DIR [--force]`: the subcommand and its handler."""

from __future__ import annotations

import argparse
import json
import os

__all__ = ["add_compress_parser", "run_compress", "format_report"]

_DESCRIPTION = (
    "Compress every linear layer (untied nn.Linear and GPT-2's Conv1D) of a packaged model (minilm, gemma3-270m, "
    "smollm2-135m, qwen2.5-coder-0.5b) "
    "or of a local transformers model folder (save_pretrained of the model and its tokenizer) with one method, evaluate it on "
    "held-out Wikipedia text (MiniLM: cosine of sentence embeddings to the original's; Gemma: perplexity), "
    "report size, error and time, and save the compressed model (model.safetensors + compressed.json) to --out."
)


def format_report(report: dict) -> str:
    """A short human-readable summary of a compress_model report."""
    lines = [
        f"model {report['model']}: {report['method']}{' + error feedback' if report.get('error_feedback') else ''}"
        f"{' (sequential)' if report.get('sequential') else ''}"
        f" {report['bits']}-bit, group {report['group_size']}"
        + (f" rank {report['rank']}" if report.get("rank") is not None else ""),
        f"  layers {report['layers']}, weights {report['weights']:,}",
        f"  size of the compressed linear layers {report['bytes']:,} B vs {report['fp16_bytes']:,} B fp16 "
        f"({report['fp16_bytes'] / report['bytes']:.2f}x smaller, {report['bits_per_weight']:.3f} bits/weight)",
        *([_whole_model_line(report)] if "model_bytes" in report else []),
        f"  mean relative weight error {report['mean_relative_error']:.4f}"
        + (f", activation error {report['mean_activation_error']:.4f}" if report.get("mean_activation_error") else ""),
        f"  time {report['compression_seconds']:.1f} s (calibration {report['calibration_seconds']:.1f} s)",
    ]
    losses = report.get("qat_losses")
    if losses:
        lines.append(f"  QAT {len(losses)} steps{' with WinQ' if report.get('winq') else ''}: distillation loss "
                     f"{losses[0]:.4f} -> {losses[-1]:.4f}")
    if "e2e_holdout_kl_after" in report:
        lines.append(f"  end-to-end tuning, {report['e2e_tune']} epochs: next-token KL to the original on held-aside "
                     f"calibration text {report['e2e_holdout_kl_before']:.4f} -> {report['e2e_holdout_kl_after']:.4f}")
    if report.get("guard_layers") == 0:
        lines.append("  model guard: SRR's criterion kept no preserved subspace (k = 0 on every layer): nothing to choose")
    elif "guard_score_chosen" in report:
        lines.append(f"  model guard: SRR's preserved subspace kept on {report['guard_chosen']:.0f} of the "
                     f"{report['guard_layers']:.0f} layers that had one; {report['guard_objective']} on text held aside from "
                     f"calibration {report['guard_score_fallback']:.4f} (scaled QER there) -> {report['guard_score_chosen']:.4f}")
    metric = report.get("metric", {})
    if "cosine_mean" in metric:
        lines.append(f"  embedding cosine vs original: mean {metric['cosine_mean']:.4f}, min {metric['cosine_min']:.4f} "
                     f"over {metric['n_sentences']} held-out sentences")
    if metric.get("sentence_tokens", 256) < 256:
        lines.append(f"  sentences cut at {metric['sentence_tokens']} tokens (the model's positions)")
    if "perplexity" in metric:
        change = ""
        if len(metric.get("window_nll", ())) > 1:  # the paired interval needs more than one window to resample
            from codesign.llm.long_context import paired_ratio_interval

            low, high = paired_ratio_interval(metric["window_nll"], metric["reference_window_nll"], metric["window_tokens"])
            change = (f"; {metric['perplexity'] / metric['reference_perplexity'] - 1:+.1%}, 95 % CI {low - 1:+.1%} … "
                      f"{high - 1:+.1%} over {len(metric['window_nll'])} windows")
        lines.append(f"  perplexity {metric['perplexity']:.3f} (original {metric['reference_perplexity']:.3f}{change}) "
                     f"over {metric['n_tokens']} held-out tokens, context {metric['context']}")
    if "out" in report:
        lines.append(f"  saved to {report['out']}")
    return "\n".join(lines)


def _whole_model_line(report: dict) -> str:
    """The whole model: every tensor it holds (embeddings, norms, the layers left as they were) against the original's."""
    new, old = report["model_bytes"], report["original_model_bytes"]
    ratio = f"{old / new:.2f}x smaller" if new <= old else f"{new / old:.2f}x larger"
    saved = f"; model.safetensors {report['saved_bytes']:,} B" if "saved_bytes" in report else ""
    return (f"  size of the whole model {new:,} B vs {old:,} B the original's tensors ({report['original_dtype']}, "
            f"as loaded): {ratio}{saved}")


def physical_cores() -> int:
    """Physical cores this process may use (hyper-threads counted once), at least 1."""
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        cores, current = set(), {}
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            lines = cpuinfo.readlines()
        for line in lines:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("physical id", "core id"):
                current[key] = value.strip()
            if not line.strip() and current:
                cores.add((current.get("physical id"), current.get("core id")))
                current = {}
        if current:
            cores.add((current.get("physical id"), current.get("core id")))
        physical = len(cores) if cores and all(c[1] is not None for c in cores) else allowed
    except OSError:
        physical = allowed
    return max(1, min(physical, allowed))


def run_compress(args: argparse.Namespace) -> int:
    """Handler of `codesign compress`: validate, compress, print the report (JSON with --json)."""
    import torch

    before = torch.get_num_threads()
    # once: more threads than cores only wait (a lower count already set in this process is kept)
    torch.set_num_threads(args.threads or min(physical_cores(), before))
    try:
        return _compress(args)
    finally:
        torch.set_num_threads(before)  # a caller in the same process (a test, a notebook) keeps its own


def _compress(args: argparse.Namespace) -> int:
    from codesign.compress.model import MethodSpec
    from codesign.compress.pipeline import Budget, check_model, compress_model

    check_model(args.model)
    spec = MethodSpec(args.method, args.bits, args.rank, group_size=args.group_size, steps=args.steps, lr=args.lr,
                      winq=args.winq, error_feedback=args.error_feedback, act_order=args.act_order,
                      sequential=args.sequential, scale_search=args.scale_search,
                      refit_scales=args.refit_scales > 0, refit_rounds=max(args.refit_scales, 1),
                      weighted_codebook=args.weighted_codebook, block_tune=args.block_tune,
                      e2e_tune=args.e2e_tune, model_guard=args.model_guard)
    budget = Budget(calib_sentences=args.calib, eval_sentences=args.eval, calib_tokens=args.calib_tokens,
                    eval_tokens=args.eval_tokens, context=args.context)
    from codesign.llm import missing_llm_packages

    missing = missing_llm_packages()
    if missing:
        raise ValueError(f"codesign compress needs {', '.join(missing)}: pip install 'codesign[llm]'")
    from codesign.llm.wheel_models import WHEEL_MODELS, install_hint, missing_wheel_packages

    if args.model in WHEEL_MODELS and missing_wheel_packages(args.model):
        raise ValueError(f"model {args.model} is not installed: {install_hint(args.model)}")
    report, _ = compress_model(args.model, spec, out=args.out, force=args.force, budget=budget,
                               blocks=args.blocks, layers=args.layers)
    print(json.dumps(report, indent=1) if args.json else format_report(report))
    return 0


def _block_list(text: str) -> list[int]:
    try:
        return [int(b) for b in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma list of block indices, got {text!r}") from None


def _pattern_list(text: str) -> list[str]:
    patterns = [p for p in text.split(",") if p]
    if not patterns:
        raise argparse.ArgumentTypeError(f"must be a comma list of layer-name patterns, got {text!r}")
    return patterns


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def add_compress_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `compress` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser("compress", help="compress a packaged LLM's linear layers and evaluate it",
                              description=_DESCRIPTION)
    p.add_argument("model", help="minilm, gemma3-270m, smollm2-135m, qwen2.5-coder-0.5b, or a local transformers model folder")
    p.add_argument("--method", required=True,
                   help="int (symmetric, clipped), int-asym (min-max with zero point, round to nearest), kmeans, vq (2-bit), "
                        "qer-plain, qer-scaled, srr, lowrank (Swift-SVD at the memory of B bits); "
                        "QAT: kmeans-qat, int-qat, lcqat-vq (2-bit)")
    p.add_argument("--bits", required=True, type=int, help="1..8 (vq and lcqat-vq: 2)")
    p.add_argument("--rank", type=int, default=None, help="rank of the Q + L R correction (qer-*, srr; default 32)")
    p.add_argument("--group-size", type=int, default=64,
                   help="weights per fp16 scale along a row (a multiple of 8 dividing every layer's input; default 64)")
    p.add_argument("--steps", type=_positive, default=None, help="QAT training steps (default 40)")
    p.add_argument("--lr", type=float, default=None, help="QAT Adam learning rate (default 1e-4)")
    p.add_argument("--winq", action="store_true", help="QAT with WinQ (periodic resets, noise-injected gradients)")
    p.add_argument("--error-feedback", action="store_true",
                   help="choose the codes by GPTQ-style error feedback on calibration activations (int, int-asym, "
                        "kmeans, vq, and the base of qer-*/srr)")
    p.add_argument("--act-order", action="store_true",
                   help="with --error-feedback: quantize columns by decreasing activation energy (scalar grids)")
    p.add_argument("--scale-search", action="store_true",
                   help="with --error-feedback: search each group's scale (Hessian-diagonal-weighted error) first")
    p.add_argument("--refit-scales", type=_positive, nargs="?", const=1, default=0, metavar="ROUNDS",
                   help="with --error-feedback: refit the group scales by least squares under the Hessian after it; "
                        "ROUNDS (default 1) rounds of feedback + refit, each on the last round's scales")
    p.add_argument("--weighted-codebook", action="store_true",
                   help="with --error-feedback on k-means: fit the levels by Lloyd weighted by the Hessian diagonal")
    p.add_argument("--sequential", action="store_true",
                   help="calibrate block by block, each under the outputs of the blocks quantized before it "
                        "(GPTQ's order; about one more forward pass)")
    p.add_argument("--block-tune", type=_positive, nargs="?", const=8, default=0, metavar="EPOCHS",
                   help="with --error-feedback on int, int-asym or kmeans: tune each block's group scales (and "
                        "k-means levels) to the original block's outputs for EPOCHS passes (default 8); implies --sequential")
    p.add_argument("--e2e-tune", type=_positive, nargs="?", const=4, default=0, metavar="EPOCHS",
                   help="int, int-asym or kmeans on a causal LM: then tune every layer's group scales (and k-means "
                        "levels) together to the original's next-token distribution on the calibration text for "
                        "EPOCHS passes (default 4)")
    p.add_argument("--model-guard", nargs="?", const="nll", default="", metavar="OBJECTIVE",
                   help="srr on a causal LM: keep SRR's preserved subspaces only in the groups of layers where the "
                        "whole model gains on text held aside from calibration, in next-token NLL (default) or KL "
                        "to the original (scaled QER elsewhere)")
    p.add_argument("--out", required=True, help="output folder (refused if it holds anything codesign did not write; see --force)")
    p.add_argument("--force", action="store_true",
                   help="replace an earlier `codesign compress` result in --out (only what codesign wrote there)")
    p.add_argument("--blocks", type=_block_list, default=None,
                   help="compress only the linears of these transformer blocks, e.g. 0,8,17 (default: all)")
    p.add_argument("--layers", type=_pattern_list, default=None,
                   help="compress only linears whose names match these shell-style patterns, comma separated "
                        "(e.g. 'model.layers.0.mlp.*')")
    p.add_argument("--calib", type=_positive, default=128, help="MiniLM calibration sentences (default 128)")
    p.add_argument("--eval", type=_positive, default=256, help="MiniLM held-out sentences (default 256)")
    p.add_argument("--calib-tokens", type=_positive, default=2048, help="Gemma calibration tokens (default 2048)")
    p.add_argument("--eval-tokens", type=_positive, default=4096, help="Gemma held-out tokens (default 4096)")
    p.add_argument("--context", type=_positive, default=None,
                   help="a causal LM's perplexity and calibration window in tokens (default 512, or the model's "
                        "trained length when shorter; a longer one is refused)")
    p.add_argument("--threads", type=_positive, default=None,
                   help="torch threads (default: this machine's physical cores, never more)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run_compress)
    return p
