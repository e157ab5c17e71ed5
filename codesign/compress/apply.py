"""quantize_(model, config): replace the nn.Linear layers of any torch module with quantized ones, in place.

    from codesign.compress import quantize_, KMeansConfig, QERConfig
    quantize_(model, KMeansConfig(bits=4))                                  # every linear but tied heads
    quantize_(model, QERConfig("srr", rank=32), calibration=batches, filter="model.layers.*.mlp.*")

filter: a shell-style pattern on the module's qualified name, or a predicate (name, module) -> bool;
by default every linear layer except one whose weight is shared with another module (a head tied to the
token embeddings; an untied head is quantized). Linear layers are nn.Linear and transformers' Conv1D
(GPT-2's, weight stored [in, out]), which becomes a QuantizedLinear computing the same. Methods that
weight their error by the layer's input second moment (registry's needs_covariance: scaled QER, SRR,
error feedback) get it from forward hooks over `calibration`: a tensor batch, a dict of keyword inputs,
or an iterable of those (tuples are passed as positional inputs).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import Any

import torch

from codesign.compress.block_tune import BlockTuneConfig, tune_block
from codesign.compress.e2e_tune import EndToEndConfig, tune_end_to_end
from codesign.compress.gptq import ErrorFeedbackConfig
from codesign.compress.integer import AsymIntConfig, IntConfig
from codesign.compress.kmeans import KMeansConfig
from codesign.compress.linear import QuantizedLinear, as_linear, is_linear_layer
from codesign.compress.model_guard import ModelGuardConfig, check_guarded_config, srr_model_guard
from codesign.compress.registry import needs_covariance, quantizer_for
from codesign.compress.sequential import sequential_replacements

__all__ = ["quantize_", "select_linears"]

Filter = None | str | Callable[[str, torch.nn.Module], bool]


def _shared_weights(model: torch.nn.Module) -> set[int]:
    """ids of parameters reachable under more than one module (tied weights)."""
    owners: dict[int, int] = {}
    for module in model.modules():
        for param in module.parameters(recurse=False):
            owners[id(param)] = owners.get(id(param), 0) + 1
    return {pid for pid, count in owners.items() if count > 1}


def select_linears(model: torch.nn.Module, filter: Filter = None) -> dict[str, torch.nn.Module]:
    """Qualified name -> linear layer (nn.Linear or Conv1D) quantize_ replaces; ValueError when none is there or matches."""
    linears = {n: m for n, m in model.named_modules() if n and is_linear_layer(m)}
    if not linears:
        raise ValueError(f"the model ({type(model).__name__}) has no linear layers to quantize "
                         "(nn.Linear or transformers' Conv1D)")
    if filter is None:
        tied = _shared_weights(model)
        chosen = {n: m for n, m in linears.items() if id(m.weight) not in tied}
        if not chosen:
            raise ValueError(f"every linear layer of the model ({len(linears)}, e.g. {next(iter(linears))!r}) shares its "
                             "weight with another module (tied to an embedding): pass filter= to choose some")
        return chosen
    if isinstance(filter, str):
        chosen = {n: m for n, m in linears.items() if fnmatch.fnmatchcase(n, filter)}
        what = f"pattern {filter!r}"
    elif callable(filter):
        chosen = {n: m for n, m in linears.items() if filter(n, m)}
        what = "the filter"
    else:
        raise ValueError(f"filter must be a name pattern or a predicate (name, module) -> bool, got {type(filter).__name__}")
    if not chosen:
        raise ValueError(f"{what} matches none of the model's {len(linears)} linear layers "
                         f"(e.g. {next(iter(linears))!r})")
    return chosen


def _batches(calibration: Any) -> Iterable[Any]:
    if isinstance(calibration, (torch.Tensor, dict, tuple)):
        return [calibration]
    try:
        return iter(calibration)
    except TypeError:
        raise ValueError(f"calibration must be a tensor, a dict of inputs or an iterable of them, "
                         f"got {type(calibration).__name__}") from None


def _run(model: torch.nn.Module, batch: Any) -> None:
    if isinstance(batch, dict):
        model(**batch)
    elif isinstance(batch, tuple):
        model(*batch)
    else:
        model(batch)


def _calibration_run(model: torch.nn.Module, calibration: Any) -> Callable[[], None]:
    """run(): the model's forward pass over every calibration batch; a batch that does not fit is a one-line error."""
    seen = []

    def run() -> None:
        for i, batch in enumerate(_batches(calibration)):
            seen.append(i)
            try:
                _run(model, batch)
            except (RuntimeError, TypeError, ValueError, IndexError) as exc:
                shape = tuple(batch.shape) if isinstance(batch, torch.Tensor) else type(batch).__name__
                first = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
                raise ValueError(f"calibration batch {i} {shape} does not fit the model: {first}") from None
        if not seen:
            raise ValueError("the calibration data is empty")

    return run


def _input_covariances(model: torch.nn.Module, linears: dict[str, torch.nn.Linear], calibration: Any) -> dict:
    """E[x xᵀ] (float64) of each linear's input over the calibration batches (model.collect_statistics' hooks)."""
    from codesign.compress.model import collect_statistics  # noqa: PLC0415 - model.py imports this package's layers

    return collect_statistics(model, _calibration_run(model, calibration), list(linears), inputs=True).input_cov


def _token_windows(calibration: Any, what: str) -> list[torch.Tensor]:
    """The calibration's token-id sequences (each row of a [B, T] batch, or a batch's input_ids), 1-D each."""
    windows: list[torch.Tensor] = []
    for batch in _batches(calibration):
        ids = batch.get("input_ids") if isinstance(batch, dict) else batch
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dim() not in (1, 2):
            raise ValueError(f"{what} scores next tokens: calibration must be [B, T] or [T] integer tensors "
                             "(or dicts with input_ids)")
        windows.extend(ids.reshape(-1, ids.shape[-1]))
    return windows


def _lm_windows(model: torch.nn.Module, calibration: Any, what: str) -> list[torch.Tensor]:
    """The calibration token windows `what` scores the model's next-token distribution on; a causal LM only."""
    if not hasattr(model, "base_model") or getattr(model, "get_output_embeddings", lambda: None)() is None:
        raise ValueError(f"{what} needs a transformers causal LM (a model with base_model and an output head)")
    if calibration is None:
        raise ValueError(f"{what} scores the model on the calibration text: pass calibration= (token ids)")
    return _token_windows(calibration, what)


def _e2e_windows(model: torch.nn.Module, config: Any, calibration: Any) -> list[torch.Tensor]:
    """The token windows end-to-end tuning distils on, after checking that the model and config allow it."""
    grid = config.base if isinstance(config, ErrorFeedbackConfig) else config
    if not isinstance(grid, (IntConfig, AsymIntConfig, KMeansConfig)):
        raise ValueError(f"e2e_tune applies to the scalar grids (IntConfig, AsymIntConfig, KMeansConfig, with or "
                         f"without error feedback), not {type(grid).__name__}")
    windows = _lm_windows(model, calibration, "e2e_tune")
    if len(windows) < 2:
        raise ValueError("e2e_tune needs at least 2 calibration sequences (one is held aside)")
    return windows


def quantize_(
    model: torch.nn.Module,
    config: Any,
    *,
    calibration: Any = None,
    filter: Filter = None,
    kernel: str = "auto",
    sequential: bool = False,
    block_tune: BlockTuneConfig | None = None,
    e2e_tune: EndToEndConfig | None = None,
    model_guard: ModelGuardConfig | None = None,
) -> torch.nn.Module:
    """Replace the chosen linear layers of `model` by QuantizedLinear(config) in place; returns the model.

    calibration: inputs for the methods that need activations (see the module docstring);
    kernel: "auto" (Triton where it runs), "triton" or "torch" for the new layers;
    sequential: calibrate block by block under the quantized blocks' outputs (codesign.compress.sequential);
    block_tune: then tune each quantized block's group scales to the original block's outputs
    (codesign.compress.block_tune; scalar grids with error feedback; implies sequential);
    e2e_tune: then tune every new layer's group scales to the original's next-token distribution on the
    calibration token ids (codesign.compress.e2e_tune; a transformers causal LM, scalar grids);
    model_guard: SRR (QERConfig('srr')) on a causal LM: keep its preserved subspaces only in the groups of layers
    where the model gains (next-token NLL or KL to the original) on the last calibration sequences (up to
    model_guard.windows, at most half), which are then held aside from the covariances (codesign.compress.model_guard).
    """
    quantizer_for(config)  # an unregistered config fails before any work
    chosen = select_linears(model, filter)
    linears = {name: as_linear(layer) for name, layer in chosen.items()}
    # a Conv1D is seen as the equivalent nn.Linear by everything below, and put back before its replacement goes in
    views = {name: linear for name, linear in linears.items() if linear is not chosen[name]}
    for name, linear in linears.items():
        group = getattr(config, "group_size", None) or getattr(getattr(config, "base", None), "group_size", None)
        if group and linear.in_features % group:
            raise ValueError(f"group size {group} does not divide layer {name}'s input size {linear.in_features}")
    if block_tune is not None and not (isinstance(config, ErrorFeedbackConfig)
                                       and isinstance(config.base, (IntConfig, AsymIntConfig, KMeansConfig))):
        raise ValueError("block_tune applies to error feedback on a scalar grid (IntConfig, AsymIntConfig, KMeansConfig), "
                         f"not {type(config).__name__}")
    windows: list[torch.Tensor] = []
    if model_guard is not None:
        check_guarded_config(config)
        if sequential:
            raise ValueError("model_guard chooses between layers built from one set of covariances: not sequential")
    if e2e_tune is not None or model_guard is not None:
        calibration = list(_batches(calibration)) if calibration is not None else None  # read twice: a generator once
        windows = (_e2e_windows(model, config, calibration) if e2e_tune is not None
                   else _lm_windows(model, calibration, "model_guard"))
    if model_guard is not None:  # its windows are held aside: scored on its own calibration text SRR looks too good
        held = min(model_guard.windows, len(windows) // 2)
        if held < 1:
            raise ValueError("model_guard needs at least 2 calibration sequences (it holds some aside to score on)")
        calibration, windows = [w[None] for w in windows[:-held]], windows[-held:]
    sequential = sequential or block_tune is not None
    if sequential and not needs_covariance(config):
        raise ValueError(f"sequential=True applies to the methods that calibrate on inputs, not {type(config).__name__}")
    if needs_covariance(config) and calibration is None:
        raise ValueError(f"{type(config).__name__} weights its error by the activations: pass calibration=")

    def build(name: str, linear: torch.nn.Linear, cov: torch.Tensor | None) -> torch.nn.Module:
        return QuantizedLinear.from_linear(linear, config, cov, kernel=kernel).to(linear.weight.device)

    from codesign.llm.swap import replace_modules, swapped  # noqa: PLC0415 - as checkpoint.py, on first use

    with swapped(model, views):
        if sequential:
            tune = None if block_tune is None else (
                lambda block, layers, forward, targets: tune_block(block, layers, forward, targets, block_tune))
            built, _ = sequential_replacements(model, list(linears), build, _calibration_run(model, calibration),
                                               tune=tune)
        else:
            covariances = _input_covariances(model, linears, calibration) if needs_covariance(config) else {}
            built = {name: build(name, linear, covariances.get(name)) for name, linear in linears.items()}
            if model_guard is not None:  # the model still holds its original linears: the reference
                built, _ = srr_model_guard(model, built, covariances, config, windows, model_guard)
        if e2e_tune is not None:  # the model still holds its original linears: the teacher
            tune_end_to_end(model, built, windows, e2e_tune)
    replace_modules(model, built)
    return model
