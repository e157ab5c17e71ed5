"""End to end on a real model: load, calibrate, compress every linear, evaluate, save — `codesign compress`.

Models: a local transformers folder (a causal LM is scored like Gemma, an encoder like MiniLM), or
the packaged ones (from codesign.llm, offline): "minilm" (all-MiniLM-L6-v2; metric: cosine of sentence
embeddings to the original's on held-out Wikipedia sentences) and "gemma3-270m" (Gemma-3-270M
dequantized from its Q4_K_M GGUF; metric: perplexity on the held-out Wikipedia token stream), and
"smollm2-135m" / "qwen2.5-coder-0.5b" (GGUFs shipped in PyPI wheels, codesign.llm.wheel_models; scored like Gemma).
Calibration data comes from the train split, evaluation from the test split (codesign.llm.wiki).
The linears are every nn.Linear and transformers' Conv1D (GPT-2's) whose weight no other module shares
(Gemma's lm_head, tied to the token embeddings, is not compressed; an untied head is), as quantize_
chooses them. A causal LM is scored in windows of `context` tokens, by default the model's trained
length (its config's max_position_embeddings or the like) up to 512; a longer context given is refused,
and an encoder's sentences are cut to its positions. `blocks` restricts a run to the
linears of some transformer blocks and `layers` to the linears whose names match shell-style patterns
(the rest of the model stays as it is).

QAT methods (kmeans-qat, int-qat, lcqat-vq, optionally with WinQ) train the chosen linears by
distillation: the loss is the masked relative squared error of the last hidden states to the original
model's (codesign.compress.qat.distillation_loss), on `qat_batch` train-split sentences per step
(MiniLM) or one window of `qat_tokens` train-split tokens per step (Gemma); then every trained layer
is exported to its storage format.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from codesign.compress.apply import select_linears
from codesign.compress.block_tune import BlockTuneConfig, tune_block
from codesign.compress.checkpoint import (
    COMPRESSED_FILES,
    CONFIG,
    FORMAT,
    MANIFEST,
    QUANT_METHOD,
    TENSORS,
    state_bytes,
    write_compressed,
)
from codesign.compress.e2e_tune import EndToEndConfig, tune_end_to_end
from codesign.compress.linear import QuantizedLinear, as_linear
from codesign.compress.model import (
    CalibrationStats,
    MethodSpec,
    collect_statistics,
    compress_linears,
    layer_reports,
    spec_dict,
)
from codesign.compress.model_guard import ModelGuardConfig, srr_model_guard
from codesign.compress.qat import distillation_loss, qat_model, train_qat
from codesign.compress.sequential import sequential_replacements
from codesign.outputs import OutputFolder

__all__ = ["MODELS", "DEFAULT_CONTEXT", "Budget", "check_model", "load_model", "model_config", "position_limit",
           "fit_budget", "is_encoder", "n_blocks", "linear_names", "calibrate", "evaluate", "reference_metric",
           "distillation_objective", "compress_sequentially", "compress_model"]

MODELS = ("minilm", "gemma3-270m", "smollm2-135m", "qwen2.5-coder-0.5b")
DEFAULT_CONTEXT = 512
_BLOCK_INDEX = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d+)\.")
# config keys that hold the positions a model was trained on (the first one present counts)
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx", "max_seq_len")


@dataclass(frozen=True)
class Budget:
    """Data sizes: calibration and evaluation sentences (encoders) or tokens (causal LMs), and their lengths.

    context: a causal LM's perplexity and calibration window; None: the model's trained length, at most
    DEFAULT_CONTEXT (fit_budget decides). sentence_tokens: an encoder's sentences are cut at this many tokens
    (fit_budget lowers it to the model's positions).
    """

    calib_sentences: int = 128
    eval_sentences: int = 256
    calib_tokens: int = 2048
    eval_tokens: int = 4096
    context: int | None = None
    qat_batch: int = 8
    qat_tokens: int = 128
    sentence_tokens: int = 256


def _local_folder(name: str) -> Path | None:
    """The folder of a local transformers model (save_pretrained output: config.json and a tokenizer), else None."""
    path = Path(name)
    return path if name not in MODELS and (path / "config.json").is_file() else None


def _compressed_by_codesign(folder: Path) -> str | None:
    """The file that shows codesign compressed the folder (its manifest, or config.json's quantization_config), else None."""
    for name, says in ((MANIFEST, lambda d: d.get("format") == FORMAT),
                       (CONFIG, lambda d: (d.get("quantization_config") or {}).get("quant_method") == QUANT_METHOD)):
        try:
            if says(json.loads((folder / name).read_text())):
                return name
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            pass
    return None


def check_model(name: str) -> None:
    """ValueError unless name is a packaged model or a local transformers model folder (not one codesign compressed)."""
    if name not in MODELS and _local_folder(name) is None:
        hint = " (a folder without config.json)" if Path(name).is_dir() else ""
        raise ValueError(f"unknown model {name!r}{hint}: choose one of {', '.join(MODELS)} or give a local "
                         "transformers model folder (save_pretrained of the model and its tokenizer)")
    shown_by = None if name in MODELS else _compressed_by_codesign(Path(name))
    if shown_by:
        raise ValueError(f"{name} holds a model codesign already compressed ({shown_by}): compress the original "
                         "model's folder; load this one with codesign.compress.load_compressed (or transformers' "
                         "from_pretrained once codesign is imported)")


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' loading messages and progress bars off inside the block (codesign says what matters in one line)."""
    from transformers.utils import logging

    verbosity, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


@functools.lru_cache(maxsize=4)
def _local_config(folder: str):
    from transformers import AutoConfig

    try:
        with _quiet_transformers():
            return AutoConfig.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{folder} is not a loadable transformers model ({str(exc).splitlines()[0][:160]})") from None


def _is_causal(config) -> bool:
    # GPT-2 and a few others name their causal LM class ...LMHeadModel
    return any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in (config.architectures or []))


@functools.lru_cache(maxsize=2)
def _load_local(folder: str) -> tuple[torch.nn.Module, object]:
    """(model in float32 eval mode, tokenizer) of a local transformers folder: a causal LM or an encoder."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer

    config = _local_config(folder)
    try:
        with _quiet_transformers():
            tokenizer = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"{folder} is not a loadable transformers model with its tokenizer "
                         f"({str(exc).splitlines()[0][:160]})") from None
    loader = AutoModelForCausalLM if _is_causal(config) else AutoModel
    try:
        with _quiet_transformers():
            model, info = loader.from_pretrained(folder, dtype=torch.float32, output_loading_info=True)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ValueError(f"{folder}: transformers cannot load its weights "
                         f"({str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__})") from None
    # AutoModel adds a pooler a task checkpoint (BertForMaskedLM) lacks; mean-pooled embeddings never use it
    missing = sorted(k for k in info.get("missing_keys") or () if not k.startswith("pooler."))
    if missing:  # transformers starts them from random values: compressing those would measure nothing
        raise ValueError(f"{folder}: {len(missing)} weights of the {type(model).__name__} are missing from its files "
                         f"(e.g. {missing[0]}); transformers would start them random")
    model.eval().requires_grad_(False)
    return model, tokenizer


def model_config(name: str):
    """The transformers config of a model: a local folder's read without its weights, a packaged model's as loaded."""
    check_model(name)
    if name in MODELS:
        return load_model(name)[0].config
    return _local_config(str(Path(name).resolve()))


def is_encoder(name: str) -> bool:
    """True for a sentence encoder (metric: embedding cosine), False for a causal LM (metric: perplexity)."""
    if name in MODELS:
        return name == "minilm"
    return not _is_causal(model_config(name))


def position_limit(config) -> tuple[int, str] | None:
    """(positions the model was trained on, the config key that says so), or None when its config names none."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for key in _POSITION_KEYS:
        value = getattr(text, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, key
    return None


def fit_budget(name: str, budget: Budget) -> tuple[Budget, str | None]:
    """The budget fitted to the model's positions, and a one-line note when a default was shortened for it.

    A causal LM's context, when not given, is the model's trained length up to DEFAULT_CONTEXT; a context
    given longer than that length is a ValueError. An encoder's sentences are cut at its positions.
    """
    if budget.context is not None and (isinstance(budget.context, bool) or not isinstance(budget.context, int)
                                       or budget.context < 2):
        raise ValueError(f"--context must be an integer of at least 2 tokens, got {budget.context!r}")
    limit = position_limit(model_config(name))
    context = DEFAULT_CONTEXT if budget.context is None else budget.context
    if limit is None:
        return dataclasses.replace(budget, context=context), None
    positions, key = limit
    note = None
    if is_encoder(name):
        if positions < budget.sentence_tokens:
            note = (f"{name} takes {positions} positions ({key} in its config): sentences are cut at {positions} "
                    f"tokens (not {budget.sentence_tokens})")
        return dataclasses.replace(budget, context=context, sentence_tokens=min(budget.sentence_tokens, positions)), note
    if budget.context is not None and budget.context > positions:
        raise ValueError(f"--context {budget.context} is longer than the {positions} positions {name} was trained on "
                         f"({key} in its config): give --context {positions} or less")
    if budget.context is None and positions < context:
        if positions < 2:
            raise ValueError(f"{name} was trained on {positions} position ({key} in its config): too short to score")
        context = positions
        note = (f"{name} was trained on {positions} positions ({key} in its config): perplexity and calibration "
                f"windows of {positions} tokens (not the default {DEFAULT_CONTEXT})")
    return dataclasses.replace(budget, context=context), note


def load_model(name: str) -> tuple[torch.nn.Module, object]:
    """(model, tokenizer): a packaged model from the llm harness or a local transformers folder (cached per process)."""
    check_model(name)
    from codesign.llm import load_gemma, load_minilm
    from codesign.llm.wheel_models import WHEEL_MODELS, load_wheel_model

    if name not in MODELS:
        return _load_local(str(Path(name).resolve()))
    if name in WHEEL_MODELS:
        return load_wheel_model(name)
    return load_minilm() if name == "minilm" else load_gemma()


def n_blocks(model: torch.nn.Module) -> int:
    """Number of transformer blocks (decoder or encoder layers) of a transformers model."""
    return int(model.config.num_hidden_layers)


def linear_names(
    name: str, model: torch.nn.Module, blocks: Sequence[int] | None = None, layers: Sequence[str] | None = None
) -> list[str]:
    """The linears a method replaces (quantize_'s default: every untied linear layer), narrowed to `blocks` and `layers`."""
    names = list(select_linears(model))
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


def _calibration_run(name: str, model: torch.nn.Module, tokenizer, budget: Budget,
                     names: Sequence[str]) -> Callable[[], None]:
    from codesign.llm import sentence_embeddings, token_stream, wiki_sentences
    from codesign.llm.perplexity import logit_chunks

    if is_encoder(name):
        sentences = wiki_sentences("train", budget.calib_sentences)
        return lambda: sentence_embeddings(model, tokenizer, sentences, batch_size=32, max_length=budget.sentence_tokens)
    tokens = token_stream(tokenizer, "train", budget.calib_tokens)
    head = model.get_output_embeddings()
    # the body alone unless an untied head is compressed: then it sees the hidden states too, a chunk at a time
    through_head = any(model.get_submodule(n) is head for n in names)

    def run() -> None:
        for start in range(0, tokens.numel(), budget.context):
            hidden = model.base_model(input_ids=tokens[start : start + budget.context][None]).last_hidden_state
            if through_head:
                for _ in logit_chunks(model, hidden[0]):
                    pass

    return run


def calibrate(
    name: str, model: torch.nn.Module, tokenizer, names, budget: Budget, inputs: bool = True, outputs: bool = False
) -> CalibrationStats:
    """Per-layer input (and output) second moments on the train split; block importance with outputs."""
    budget, _ = fit_budget(name, budget)
    run = _calibration_run(name, model, tokenizer, budget, names)
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
    if is_encoder(name):
        return tuple(wiki_sentences("test", budget.eval_sentences))
    return token_stream(tokenizer, "test", budget.eval_tokens)


@functools.lru_cache(maxsize=4)
def reference_metric(name: str, budget: Budget):
    """The original model's reference: sentence embeddings (MiniLM) or perplexity (Gemma); cached."""
    from codesign.llm import perplexity, sentence_embeddings

    budget, _ = fit_budget(name, budget)
    model, tokenizer = load_model(name)
    data = _eval_data(name, budget)
    if is_encoder(name):
        return sentence_embeddings(model, tokenizer, list(data), max_length=budget.sentence_tokens)
    return perplexity(model, data, context=budget.context)


def evaluate(name: str, model: torch.nn.Module, tokenizer, budget: Budget) -> dict:
    """The model's metric on held-out Wikipedia text, next to the original's."""
    from codesign.llm import embedding_similarity, perplexity

    budget, _ = fit_budget(name, budget)
    reference = reference_metric(name, budget)
    data = _eval_data(name, budget)
    if is_encoder(name):
        sim = embedding_similarity(reference, model, tokenizer, list(data), max_length=budget.sentence_tokens)
        return {"cosine_mean": sim.mean_cosine, "cosine_min": sim.min_cosine, "n_sentences": sim.n_sentences,
                "sentence_tokens": budget.sentence_tokens}
    result = perplexity(model, data, context=budget.context)
    return {
        "perplexity": result.perplexity,
        "reference_perplexity": reference.perplexity,
        "n_tokens": result.n_scored,
        "context": budget.context,
        # per window of `context` tokens, for paired intervals between rows scored on the same tokens
        "window_nll": list(result.window_nll),
        "reference_window_nll": list(reference.window_nll),
        "window_tokens": list(result.window_tokens),
    }


def _print_progress(i: int, n: int, layer: str) -> None:
    print(f"  [{i + 1}/{n}] {layer}", file=sys.stderr, flush=True)


def distillation_objective(name: str, model: torch.nn.Module, tokenizer, budget: Budget,
                            steps: int) -> Callable[[torch.nn.Module, int], torch.Tensor]:
    """loss(student, step): distance of the student's last hidden states to the original's on train-split batch `step`."""
    from codesign.llm import token_stream, wiki_sentences

    budget, _ = fit_budget(name, budget)
    batches = []
    with torch.no_grad():
        if is_encoder(name):
            sentences = wiki_sentences("train", steps * budget.qat_batch)
            for i in range(steps):
                enc = tokenizer(sentences[i * budget.qat_batch: (i + 1) * budget.qat_batch], padding=True,
                                truncation=True, max_length=min(64, budget.sentence_tokens), return_tensors="pt")
                batches.append((dict(enc), model(**enc).last_hidden_state, enc["attention_mask"]))
        else:
            tokens = token_stream(tokenizer, "train", steps * budget.qat_tokens)
            for i in range(steps):
                ids = tokens[i * budget.qat_tokens: (i + 1) * budget.qat_tokens][None]
                batches.append(({"input_ids": ids}, model.base_model(input_ids=ids).last_hidden_state,
                                torch.ones_like(ids)))

    def loss(student: torch.nn.Module, step: int) -> torch.Tensor:
        inputs, target, mask = batches[step]
        body = student if is_encoder(name) else student.base_model
        return distillation_loss(body(**inputs).last_hidden_state, target, mask)

    return loss


def _train_and_export(name: str, model: torch.nn.Module, tokenizer, spec: MethodSpec, names: Sequence[str],
                      budget: Budget, verbose: bool) -> tuple[dict[str, torch.nn.Module], list, dict]:
    """QAT of the named linears by distillation, then each trained layer in its storage format."""
    start = time.perf_counter()
    objective = distillation_objective(name, model, tokenizer, budget, spec.qat_steps)
    student = qat_model(model, spec.qat_config(), names)
    every = max(1, spec.qat_steps // 10)

    def on_step(step: int, loss: float) -> None:
        if verbose and ((step + 1) % every == 0 or step == 0):
            print(f"  step {step + 1}/{spec.qat_steps}: loss {loss:.4f} ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)

    losses = train_qat(student, objective, spec.qat_steps, lr=spec.qat_lr, on_step=on_step)  # trains a copy
    seconds = (time.perf_counter() - start) / max(len(names), 1)
    modules = dict(model.named_modules())
    built = {n: (student.get_submodule(n).export(), seconds) for n in names}
    reports = layer_reports({n: modules[n] for n in names}, built)
    return {n: m for n, (m, _) in built.items()}, reports, {"qat_losses": losses}


def compress_sequentially(name: str, model: torch.nn.Module, tokenizer, spec: MethodSpec, names: Sequence[str],
                          budget: Budget, progress: Callable[[int, int, str], None] | None = None,
                          ) -> tuple[dict[str, torch.nn.Module], list]:
    """The named linears quantized block by block on the train split (codesign.compress.sequential), with their reports."""
    budget, _ = fit_budget(name, budget)
    config = spec.layer_config()
    seconds: dict[str, float] = {}

    def build(layer: str, linear: torch.nn.Linear, cov: torch.Tensor) -> torch.nn.Module:
        start = time.perf_counter()
        module = QuantizedLinear.from_linear(linear, config, cov)
        seconds[layer] = time.perf_counter() - start
        return module

    run = _calibration_run(name, model, tokenizer, budget, names)
    tune = None
    if spec.block_tune:
        config_tune = BlockTuneConfig(epochs=spec.block_tune, objective=spec.block_objective)

        def tune(block: torch.nn.Module, layers: list, forward, targets: list) -> None:
            start = time.perf_counter()
            errors = tune_block(block, layers, forward, targets, config_tune)
            if progress is not None:
                print(f"  block tuned: holdout error {errors['holdout_before']:.4g} -> {errors['holdout_after']:.4g} "
                      f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
    replacements, covariances = sequential_replacements(model, names, build, run, progress, tune)
    stats = CalibrationStats(input_cov=covariances, output_cov={}, block_importance={}, n_rows=0)
    modules = dict(model.named_modules())
    built = {n: (replacements[n], seconds[n]) for n in names}
    return replacements, layer_reports({n: modules[n] for n in names}, built, stats)


def _tune_end_to_end(name: str, model: torch.nn.Module, tokenizer, spec: MethodSpec,
                     replacements: dict[str, torch.nn.Module], budget: Budget, verbose: bool) -> dict:
    """Distil the original's next-token distribution into the replacements' stored scales on the calibration text."""
    windows = _train_windows(tokenizer, 0, budget.calib_tokens, budget.context)
    start = time.perf_counter()

    def say(line: str) -> None:
        if verbose:
            print(f"  end-to-end: {line} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    result = tune_end_to_end(model, replacements, windows, EndToEndConfig(epochs=spec.e2e_tune), say)
    return {"e2e_holdout_kl_before": result["holdout_before"], "e2e_holdout_kl_after": result["holdout_after"]}


def _train_windows(tokenizer, first: int, count: int, context: int) -> list:
    """Train-split tokens first .. first + count as windows of `context` token ids (a last one of 1 token dropped)."""
    from codesign.llm import token_stream

    tokens = token_stream(tokenizer, "train", first + count)[first:]
    return [tokens[s : s + context] for s in range(0, tokens.numel() - 1, context)]


def _guard_srr(model: torch.nn.Module, tokenizer, spec: MethodSpec, replacements: dict[str, torch.nn.Module],
               stats: CalibrationStats, budget: Budget, verbose: bool) -> tuple[dict[str, torch.nn.Module], dict]:
    """SRR's replacements after the whole-model guard (codesign.compress.model_guard), and its summary."""
    start = time.perf_counter()

    def say(line: str) -> None:
        if verbose:
            print(f"  model guard: {line} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)

    guard = ModelGuardConfig(objective=spec.model_guard)
    # the train text right after the calibration tokens: no quantizer calibrated on it
    windows = _train_windows(tokenizer, budget.calib_tokens, guard.windows * budget.context, budget.context)
    guarded, summary = srr_model_guard(model, replacements, stats.input_cov, spec.layer_config(), windows, guard, say)
    return guarded, {**summary, "guard_objective": guard.objective}


def compress_model(
    name: str,
    spec: MethodSpec,
    out: Path | str | None = None,
    force: bool = False,
    budget: Budget = Budget(),
    progress: Callable[[int, int, str], None] | None = _print_progress,
    evaluate_metric: bool = True,
    blocks: Sequence[int] | None = None,
    stats: CalibrationStats | None = None,
    layers: Sequence[str] | None = None,
) -> tuple[dict, dict[str, torch.nn.Module]]:
    """Compress every linear (or those of `blocks` / matching `layers`); returns (report, replacements); saves to `out`.

    stats: precomputed calibration statistics (from `calibrate`) to reuse across runs; computed when
    None and the method needs them. The budget is fitted to the model's positions first (fit_budget; its
    note goes to stderr with the progress).
    """
    check_model(name)
    if spec.e2e_tune and is_encoder(name):
        raise ValueError(f"--e2e-tune distils a causal LM's next-token distribution; {name} is a sentence encoder")
    if spec.model_guard and is_encoder(name):
        raise ValueError(f"--model-guard scores a causal LM's next-token distribution; {name} is a sentence encoder")
    folder = OutputFolder(out, "compress", force=force, expected=COMPRESSED_FILES) if out is not None else None
    budget, note = fit_budget(name, budget)  # a context the model cannot take fails before its weights load
    model, tokenizer = load_model(name)
    if note is not None and progress is not None:
        print(f"codesign: note: {note}", file=sys.stderr, flush=True)
    names = linear_names(name, model, blocks, layers)
    modules = dict(model.named_modules())
    # a Conv1D (GPT-2) is seen as the equivalent nn.Linear throughout, and put back afterwards
    views = {n: as_linear(modules[n]) for n in names if not isinstance(modules[n], torch.nn.Linear)}
    from codesign.llm import swapped

    with swapped(model, views):
        return _compress_loaded(name, model, tokenizer, names, spec, folder, budget, progress, evaluate_metric, blocks,
                                stats, layers)


def _compress_loaded(name: str, model: torch.nn.Module, tokenizer, names: list[str], spec: MethodSpec,
                     folder: OutputFolder | None, budget: Budget, progress: Callable[[int, int, str], None] | None,
                     evaluate_metric: bool, blocks: Sequence[int] | None, stats: CalibrationStats | None,
                     layers: Sequence[str] | None) -> tuple[dict, dict[str, torch.nn.Module]]:
    """compress_model on the loaded model whose chosen layers are all nn.Linear, with the fitted budget."""
    modules = dict(model.named_modules())
    spec.check_layers({n: tuple(modules[n].weight.shape) for n in names})
    start = time.perf_counter()
    if spec.sequential:
        pass  # calibration and quantization interleave, block by block
    elif stats is not None:
        _check_stats(spec, stats, names)
    elif spec.needs_input_covariance or spec.needs_output_covariance:
        stats = calibrate(name, model, tokenizer, names, budget, inputs=spec.needs_input_covariance,
                          outputs=spec.needs_output_covariance)
    calib_seconds = time.perf_counter() - start
    training: dict = {}
    if spec.is_qat:
        replacements, reports, training = _train_and_export(name, model, tokenizer, spec, names, budget,
                                                            verbose=progress is not None)
    elif spec.sequential:
        replacements, reports = compress_sequentially(name, model, tokenizer, spec, names, budget, progress)
    else:
        replacements, reports = compress_linears(model, spec, stats, names, progress)
    if spec.model_guard:  # the model still holds its original linears: the reference
        replacements, training = _guard_srr(model, tokenizer, spec, replacements, stats, budget,
                                            verbose=progress is not None)
    if spec.e2e_tune:  # the model still holds its original linears: the teacher
        training = _tune_end_to_end(name, model, tokenizer, spec, replacements, budget, verbose=progress is not None)
    if spec.model_guard or spec.e2e_tune:
        seconds = {r.name: r.seconds for r in reports}  # the errors are of the final weights (sequential: no covariances)
        reports = layer_reports({n: modules[n] for n in names}, {n: (replacements[n], seconds[n]) for n in names}, stats)
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
        **training,
        # the whole model's tensors (what model.safetensors holds) against the original's in the dtype it was loaded in
        "original_model_bytes": state_bytes(model),
        "original_dtype": str(next(p.dtype for p in model.parameters() if p.is_floating_point())).replace("torch.", ""),
    }
    from codesign.llm import swapped

    if evaluate_metric:
        reference_metric(name, budget)  # the original's, computed before any layer is swapped
    with swapped(model, replacements):
        report["model_bytes"] = state_bytes(model)
        if evaluate_metric:
            report["metric"] = evaluate(name, model, tokenizer, budget)
        if folder is not None:
            report["out"] = str(folder.target)
            with folder.writing() as work:
                write_compressed(model, work, {"model": name, "spec": spec_dict(spec), "report": report})
                report["saved_bytes"] = (work / TENSORS).stat().st_size
    return report, replacements
