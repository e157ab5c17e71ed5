"""Sequential calibration: each block's layers quantized under the inputs of the already quantized blocks before it.

GPTQ-style error feedback minimises a layer's output error under its input second moment E[x xᵀ].
Measured on the original model, that moment ignores the error every earlier quantized layer has
added to the layer's input; GPTQ therefore calibrates block by block. This module does that for
any model whose layers sit in a ``torch.nn.ModuleList`` of blocks (transformers' decoder layers,
encoder layers, a user's own stack): one forward pass records every block's call (the first
block's hidden states, every block's other arguments: position embeddings, attention masks), then
block by block it collects the block's input covariances by re-running the block on the hidden
states the quantized blocks before it produced, quantizes the block's layers, and runs the
quantized block to give the next block its inputs. Cost: about two forward passes of the blocks.
Layers outside the block list are quantized from the original model's statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["block_list", "sequential_replacements"]

Build = Callable[[str, torch.nn.Linear, torch.Tensor], torch.nn.Module]
# tune(block, its quantized layers, forward(i) -> the block's output on batch i, the original block's outputs)
Tune = Callable[[torch.nn.Module, list[torch.nn.Module], Callable[[int], torch.Tensor], list[torch.Tensor]], object]
# cached state a block must not carry from the recording pass into the replays
_CACHE_KWARGS = ("cache", "past_key_value", "past_key_values", "layer_past")


def block_list(model: torch.nn.Module, names: Sequence[str]) -> tuple[str, torch.nn.ModuleList] | None:
    """The ModuleList (qualified name, list) of two or more blocks that holds the most of `names`; None when none does."""
    best: tuple[str, torch.nn.ModuleList, int] | None = None
    for prefix, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 1 and prefix:
            inside = sum(1 for n in names if n.startswith(prefix + "."))
            if inside and (best is None or inside > best[2]):
                best = (prefix, module, inside)
    return None if best is None else (best[0], best[1])


def _hidden_of(args: tuple, kwargs: dict) -> torch.Tensor:
    hidden = args[0] if args else kwargs.get("hidden_states")
    if not isinstance(hidden, torch.Tensor):
        raise ValueError("sequential calibration needs each block's hidden states as its first input "
                         f"(got {type(hidden).__name__})")
    return hidden


def _with_hidden(args: tuple, kwargs: dict, hidden: torch.Tensor) -> tuple[tuple, dict]:
    if args:
        return (hidden, *args[1:]), kwargs
    return args, {**kwargs, "hidden_states": hidden}


def _call(block: torch.nn.Module, args: tuple, kwargs: dict, hidden: torch.Tensor) -> torch.Tensor:
    """The block's output hidden states for the recorded call with `hidden` as its input."""
    args, kwargs = _with_hidden(args, kwargs, hidden)
    output: Any = block(*args, **kwargs)
    return output[0] if isinstance(output, (tuple, list)) else output


def _replay(block: torch.nn.Module, recorded: list[tuple[tuple, dict]], hidden: list[torch.Tensor]) -> list[torch.Tensor]:
    """The block's outputs for every recorded call, each with its hidden states taken from `hidden`."""
    return [_call(block, args, kwargs, h) for (args, kwargs), h in zip(recorded, hidden)]


@torch.no_grad()
def sequential_replacements(
    model: torch.nn.Module,
    names: Sequence[str],
    build: Build,
    run: Callable[[], None],
    progress: Callable[[int, int, str], None] | None = None,
    tune: Tune | None = None,
) -> tuple[dict[str, torch.nn.Module], dict[str, torch.Tensor]]:
    """(name -> build(name, linear, cov), name -> the cov it used) for every named linear, block by block.

    run() makes the calibration forward passes; the model is left as it was (its linears restored).
    tune: called on each quantized block before its outputs feed the next block, with the original
    block's outputs on the original model's hidden states as targets (codesign.compress.block_tune).
    """
    from codesign.compress.model import collect_statistics  # noqa: PLC0415 - model.py imports this package's layers
    from codesign.llm.swap import replace_modules, restore_modules  # noqa: PLC0415 - as checkpoint.py, on first use

    found = block_list(model, names)
    if found is None:
        raise ValueError("sequential calibration needs the layers in a torch.nn.ModuleList of blocks; "
                         "the model has none that holds them")
    prefix, blocks = found
    by_block: list[list[str]] = [[n for n in names if n.startswith(f"{prefix}.{b}.")] for b in range(len(blocks))]
    outside = [n for n in names if not n.startswith(prefix + ".")]
    modules = dict(model.named_modules())

    # one recording pass: block 0's hidden states and every block's other inputs, per calibration batch
    calls: list[list[tuple[tuple, dict]]] = [[] for _ in blocks]

    def recorder(b: int):
        def hook(module, args, kwargs):
            kwargs = {k: (None if k in _CACHE_KWARGS else v) for k, v in kwargs.items()}
            if "use_cache" in kwargs:
                kwargs["use_cache"] = False
            hidden = _hidden_of(args, kwargs)
            calls[b].append(_with_hidden(args, kwargs, hidden if b == 0 else hidden[..., :0]))
        return hook

    hooks = [block.register_forward_pre_hook(recorder(b), with_kwargs=True) for b, block in enumerate(blocks)]
    try:
        covariances = collect_statistics(model, run, outside).input_cov if outside else {}
        if not outside:
            run()
    finally:
        for h in hooks:
            h.remove()
    if not calls[0]:
        raise ValueError(f"calibration never reached {prefix}.0")
    hidden = [_hidden_of(*call) for call in calls[0]]
    original_hidden = hidden  # the unquantized model's hidden states, followed only when tuning

    replacements: dict[str, torch.nn.Module] = {}
    originals: dict[str, torch.nn.Module] = {}
    done = 0
    try:
        for b, block in enumerate(blocks):
            if len(calls[b]) != len(hidden):
                raise ValueError(f"block {prefix}.{b} ran {len(calls[b])} times for {len(hidden)} calibration batches")

            targets = _replay(block, calls[b], original_hidden) if tune is not None else []
            if by_block[b]:
                def replay(block: torch.nn.Module = block, recorded: list = calls[b], inputs: list = hidden) -> None:
                    _replay(block, recorded, inputs)

                block_cov = collect_statistics(model, replay, by_block[b]).input_cov
                for name in by_block[b]:
                    if progress is not None:
                        progress(done, len(names), name)
                    done += 1
                    replacements[name] = build(name, modules[name], block_cov[name])
                originals.update(replace_modules(model, {n: replacements[n] for n in by_block[b]}))
                covariances.update(block_cov)
                if tune is not None:
                    def forward(i: int, block: torch.nn.Module = block, recorded: list = calls[b],
                                inputs: list = hidden) -> torch.Tensor:
                        args, kwargs = recorded[i]
                        return _call(block, args, kwargs, inputs[i])

                    tune(block, [replacements[n] for n in by_block[b]], forward, targets)
            original_hidden = targets
            hidden = _replay(block, calls[b], hidden)
        for name in outside:
            if progress is not None:
                progress(done, len(names), name)
            done += 1
            replacements[name] = build(name, modules[name], covariances[name])
    finally:
        restore_modules(model, originals)
    return {n: replacements[n] for n in names}, covariances
