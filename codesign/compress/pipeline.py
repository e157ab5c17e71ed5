"""End to end on a real model: load, calibrate, compress every linear, evaluate, save — `codesign compress`.

Models (from codesign.llm, offline): "minilm" (all-MiniLM-L6-v2; metric: cosine of sentence
embeddings to the original's on held-out Wikipedia sentences) and "gemma3-270m" (Gemma-3-270M
dequantized from its Q4_K_M GGUF; metric: perplexity on the held-out Wikipedia token stream).
Calibration data comes from the train split, evaluation from the test split (codesign.llm.wiki).
Gemma's lm_head (tied to the token embeddings) is not compressed.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch

from codesign.compress.model import (
    MethodSpec,
    collect_statistics,
    compress_linears,
    prepare_out_dir,
    save_compressed,
    spec_dict,
)

__all__ = ["MODELS", "Budget", "load_model", "linear_names", "calibrate", "evaluate", "reference_metric", "compress_model"]

MODELS = ("minilm", "gemma3-270m")


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


def linear_names(name: str, model: torch.nn.Module) -> list[str]:
    """The linears a method replaces (the harness's choice: every nn.Linear except lm_head)."""
    from codesign.llm import linear_replacements

    return list(linear_replacements(model, lambda n, m: m))


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


def calibrate(name: str, model: torch.nn.Module, tokenizer, spec: MethodSpec, names, budget: Budget):
    """Calibration statistics the method needs (None when it needs none)."""
    if not (spec.needs_input_covariance or spec.needs_output_covariance):
        return None
    run = _calibration_run(name, model, tokenizer, budget)
    return collect_statistics(
        model, run, names, inputs=spec.needs_input_covariance, outputs=spec.needs_output_covariance,
        blocks=spec.needs_output_covariance,
    )


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
) -> tuple[dict, dict[str, torch.nn.Module]]:
    """Compress every linear of a model; returns (report, replacements). Saves to `out` when given."""
    _check_model(name)
    if out is not None and Path(out).exists() and not force and (not Path(out).is_dir() or any(Path(out).iterdir())):
        raise FileExistsError(f"output folder {out} exists and is not empty (pass --force to replace it)")
    model, tokenizer = load_model(name)
    names = linear_names(name, model)
    modules = dict(model.named_modules())
    spec.check_layers({n: tuple(modules[n].weight.shape) for n in names})
    start = time.perf_counter()
    stats = calibrate(name, model, tokenizer, spec, names, budget)
    calib_seconds = time.perf_counter() - start
    replacements, layers = compress_linears(model, spec, stats, names, progress)
    total_seconds = time.perf_counter() - start
    n_weights = sum(r.shape[0] * r.shape[1] for r in layers)
    size = sum(r.bytes for r in layers)
    act = [r.activation_error for r in layers if r.activation_error is not None]
    report = {
        "model": name,
        **spec_dict(spec),
        "layers": len(layers),
        "weights": n_weights,
        "bytes": size,
        "fp16_bytes": sum(r.fp16_bytes for r in layers),
        "bits_per_weight": 8 * size / n_weights,
        "calibration_seconds": calib_seconds,
        "compression_seconds": total_seconds,
        "mean_relative_error": sum(r.relative_error for r in layers) / len(layers),
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
