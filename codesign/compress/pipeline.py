"""End to end on a real model: load, calibrate, compress every linear, evaluate, save — `codesign compress`.

Models (from codesign.llm, offline): "minilm" (all-MiniLM-L6-v2; metric: cosine of sentence
embeddings to the original's on held-out Wikipedia sentences) and "gemma3-270m" (Gemma-3-270M
dequantized from its Q4_K_M GGUF; metric: perplexity on the held-out Wikipedia token stream).
Calibration data comes from the train split, evaluation from the test split (codesign.llm.wiki).
Gemma's lm_head (tied to the token embeddings) is not compressed. `blocks` restricts a run to the
linears of some transformer blocks and `layers` to the linears whose names match shell-style patterns
(the rest of the model stays as it is).
"""

from __future__ import annotations

import fnmatch
import functools
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch

from codesign.compress.model import (
    CalibrationStats,
    MethodSpec,
    collect_statistics,
    compress_linears,
    prepare_out_dir,
    save_compressed,
    spec_dict,
)

__all__ = ["MODELS", "Budget", "load_model", "n_blocks", "linear_names", "calibrate", "evaluate", "reference_metric", "compress_model"]

MODELS = ("minilm", "gemma3-270m")
_BLOCK_INDEX = re.compile(r"(?:^|\.)(?:layers|layer)\.(\d+)\.")


@dataclass(frozen=True)
class Budget:
    """Data sizes: calibration and evaluation sentences (MiniLM) or tokens (Gemma), Gemma's context window."""

    calib_sentences: int = 128
    eval_sentences: int = 256
    calib_tokens: int = 2048
    eval_tokens: int = 4096
    context: int = 512


def _check_model(name: str) -> None:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}: choose one of {', '.join(MODELS)}")


def load_model(name: str) -> tuple[torch.nn.Module, object]:
    """(model, tokenizer) from the llm harness (cached per process; restore any swapped modules)."""
    _check_model(name)
    from codesign.llm import load_gemma, load_minilm

    return load_minilm() if name == "minilm" else load_gemma()


def n_blocks(model: torch.nn.Module) -> int:
    """Number of transformer blocks (decoder or encoder layers) of a transformers model."""
    return int(model.config.num_hidden_layers)


def linear_names(
    name: str, model: torch.nn.Module, blocks: Optional[Sequence[int]] = None, layers: Optional[Sequence[str]] = None
) -> list[str]:
    """The linears a method replaces: every nn.Linear except lm_head, narrowed to `blocks` and to `layers` patterns."""
    from codesign.llm import linear_replacements

    names = list(linear_replacements(model, lambda n, m: m))
    if blocks is not None:
        count = n_blocks(model)
        chosen = set()
        for b in blocks:
            if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < count:
                raise ValueError(f"block {b!r} does not exist: {name} has blocks 0..{count - 1}")
            chosen.add(b)
        if not chosen:
            raise ValueError("no blocks chosen")
        names = [n for n in names if (m := _BLOCK_INDEX.search(n)) is not None and int(m.group(1)) in chosen]
    if layers is not None:
        if not layers:
            raise ValueError("no layer patterns given")
        for pattern in layers:
            if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
                raise ValueError(f"layer pattern {pattern!r} matches no linear layer of {name}"
                                 + (" in the chosen blocks" if blocks is not None else ""))
        names = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in layers)]
    return names


def _calibration_run(name: str, model: torch.nn.Module, tokenizer, budget: Budget) -> Callable[[], None]:
    from codesign.llm import sentence_embeddings, token_stream, wiki_sentences

    if name == "minilm":
        sentences = wiki_sentences("train", budget.calib_sentences)
        return lambda: sentence_embeddings(model, tokenizer, sentences, batch_size=32)
    tokens = token_stream(tokenizer, "train", budget.calib_tokens)

    def run() -> None:
        for start in range(0, tokens.numel(), budget.context):
            model.base_model(input_ids=tokens[start : start + budget.context][None])

    return run


def calibrate(
    name: str, model: torch.nn.Module, tokenizer, names, budget: Budget, inputs: bool = True, outputs: bool = False
) -> CalibrationStats:
    """Per-layer input (and output) second moments on the train split; block importance with outputs."""
    run = _calibration_run(name, model, tokenizer, budget)
    return collect_statistics(model, run, names, inputs=inputs, outputs=outputs, blocks=outputs)


def _check_stats(spec: MethodSpec, stats: CalibrationStats, names: Sequence[str]) -> None:
    wanted = [(spec.needs_input_covariance, stats.input_cov, "input"),
              (spec.needs_output_covariance, stats.output_cov, "output")]
    for needed, table, kind in wanted:
        missing = [n for n in names if needed and n not in table]
        if missing:
            raise ValueError(f"the given calibration statistics lack the {kind} covariance of {missing[0]}")


@functools.lru_cache(maxsize=4)
def _eval_data(name: str, budget: Budget):
    from codesign.llm import token_stream, wiki_sentences

    model, tokenizer = load_model(name)
    if name == "minilm":
        return tuple(wiki_sentences("test", budget.eval_sentences))
    return token_stream(tokenizer, "test", budget.eval_tokens)


@functools.lru_cache(maxsize=4)
def reference_metric(name: str, budget: Budget):
    """The original model's reference: sentence embeddings (MiniLM) or perplexity (Gemma); cached."""
    from codesign.llm import perplexity, sentence_embeddings

    model, tokenizer = load_model(name)
    data = _eval_data(name, budget)
    if name == "minilm":
        return sentence_embeddings(model, tokenizer, list(data))
    return perplexity(model, data, context=budget.context)


def evaluate(name: str, model: torch.nn.Module, tokenizer, budget: Budget) -> dict:
    """The model's metric on held-out Wikipedia text, next to the original's."""
    from codesign.llm import embedding_similarity, perplexity

    reference = reference_metric(name, budget)
    data = _eval_data(name, budget)
    if name == "minilm":
        sim = embedding_similarity(reference, model, tokenizer, list(data))
        return {"cosine_mean": sim.mean_cosine, "cosine_min": sim.min_cosine, "n_sentences": sim.n_sentences}
    result = perplexity(model, data, context=budget.context)
    return {
        "perplexity": result.perplexity,
        "reference_perplexity": reference.perplexity,
        "n_tokens": result.n_scored,
        "context": budget.context,
    }


def _print_progress(i: int, n: int, layer: str) -> None:
    print(f"  [{i + 1}/{n}] {layer}", file=sys.stderr, flush=True)


def compress_model(
    name: str,
    spec: MethodSpec,
    out: Optional[Path | str] = None,
    force: bool = False,
    budget: Budget = Budget(),
    progress: Optional[Callable[[int, int, str], None]] = _print_progress,
    evaluate_metric: bool = True,
    blocks: Optional[Sequence[int]] = None,
    stats: Optional[CalibrationStats] = None,
    layers: Optional[Sequence[str]] = None,
) -> tuple[dict, dict[str, torch.nn.Module]]:
    """Compress every linear (or those of `blocks` / matching `layers`); returns (report, replacements); saves to `out`.

    stats: precomputed calibration statistics (from `calibrate`) to reuse across runs; computed when
    None and the method needs them.
    """
    _check_model(name)
    if out is not None and Path(out).exists() and not force and (not Path(out).is_dir() or any(Path(out).iterdir())):
        raise FileExistsError(f"output folder {out} exists and is not empty (pass --force to replace it)")
    model, tokenizer = load_model(name)
    names = linear_names(name, model, blocks, layers)
    modules = dict(model.named_modules())
    spec.check_layers({n: tuple(modules[n].weight.shape) for n in names})
    start = time.perf_counter()
    if stats is not None:
        _check_stats(spec, stats, names)
    elif spec.needs_input_covariance or spec.needs_output_covariance:
        stats = calibrate(name, model, tokenizer, names, budget, inputs=spec.needs_input_covariance,
                          outputs=spec.needs_output_covariance)
    calib_seconds = time.perf_counter() - start
    replacements, reports = compress_linears(model, spec, stats, names, progress)
    total_seconds = time.perf_counter() - start
    n_weights = sum(r.shape[0] * r.shape[1] for r in reports)
    size = sum(r.bytes for r in reports)
    act = [r.activation_error for r in reports if r.activation_error is not None]
    report = {
        "model": name,
        **spec_dict(spec),
        "blocks": None if blocks is None else sorted(set(blocks)),
        "layer_patterns": None if layers is None else list(layers),
        "layers": len(reports),
        "weights": n_weights,
        "bytes": size,
        "fp16_bytes": sum(r.fp16_bytes for r in reports),
        "bits_per_weight": 8 * size / n_weights,
        "calibration_seconds": calib_seconds,
        "compression_seconds": total_seconds,
        "mean_relative_error": sum(r.relative_error for r in reports) / len(reports),
        "mean_activation_error": sum(act) / len(act) if act else None,
    }
    if evaluate_metric:
        from codesign.llm import swapped

        reference_metric(name, budget)  # the original's, computed before any layer is swapped

        with swapped(model, replacements):
            report["metric"] = evaluate(name, model, tokenizer, budget)
    if out is not None:
        target = prepare_out_dir(out, force)
        save_compressed(target, replacements, {"model": name, "spec": spec_dict(spec), "report": report})
        report["out"] = str(target)
    return report, replacements
