"""Low-rank KV ranks and latent precisions from measured sensitivity: what each layer's keys or values cost, then a budget.

`side_costs` measures, on calibration contexts (the train split), what it costs when one layer's
keys (or values) alone are stored at a (rank, latent bits) choice, the other side and every other
layer exact: the mean NLL increase and the mean KL divergence per token from the exact model. The
KL is the measure to allocate by: on joined articles the NLL *falls* when a cut drops distant
history the text does not need (docs/attention_long_context_control.md), so an NLL-driven
allocation rewards exactly the damage a long-context cache must avoid.
`allocate_by_cost` picks one choice per (layer, side) that minimises the summed cost under a global
budget of latent bits per token (rank x bits; exact, by dynamic programming over the choices). The
sum assumes the costs add up, which the evaluation then checks on held-out text.

A choice is a plain rank (fp16), a (rank, bits) pair, or a mixed-precision latent: segments
((width, bits), ...) over the latent's leading channels, in the projection's order of decreasing
variance, e.g. ((64, 8), (192, 4)) for the 64 strongest channels in int8 and the next 192 in int4
(written "64x8+192x4"; each segment keeps its own scales).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

__all__ = ["Choice", "MEASURES", "allocate_by_cost", "side_costs", "projections_for", "latent_cores", "kept_fraction",
           "byte_fraction", "latent_bits", "rank_bits", "segments", "choice_rank", "choice_text", "parse_choice",
           "parse_choices", "format_choices"]

Choice = tuple[int, int]  # (rank, latent bits) of one layer's keys or values
MEASURES = ("kl", "nll")
HELD_OUT_SPLITS = ("test",)  # the splits codesign.llm evaluates on; calibration must not read them


def latent_bits(choice: Any, scales: bool = False, scale_bits: int = 32) -> int:
    """Bits per token and KV head of one side at a (rank, bits) choice: rank x bits, with scales plus the scale
    (scale_bits: float32 or float16) of every LATENT_GROUP channels of an int8 / int4 latent."""
    from codesign.attention.lowrank_kv import LATENT_GROUP, check_scale_bits

    check_scale_bits(scale_bits)
    return sum(width * bits + (scale_bits * -(-width // LATENT_GROUP) if scales and bits < 16 else 0)
               for width, bits in segments(choice))


def allocate_by_cost(costs: Mapping[Hashable, Mapping[Any, float]], budget: int, scales: bool = False,
                     scale_bits: int = 32) -> dict[Hashable, Any]:
    """{group: choice} with summed size <= budget and the least total cost.

    Size: a plain rank counts its rank; a (rank, bits) choice its latent bits (latent_bits; scales: with the scales
    of scale_bits each).
    """

    def _size(choice: Any) -> int:
        return latent_bits(choice, scales, scale_bits) if isinstance(choice, tuple) else int(choice)

    if not costs or any(not options for options in costs.values()):
        raise ValueError("every group needs at least one choice with its cost")
    groups = list(costs)
    smallest = sum(min(_size(c) for c in costs[g]) for g in groups)
    if smallest > budget:
        raise ValueError(f"a budget of {budget} is below the smallest choices offered ({smallest})")
    unit = math.gcd(budget, *(_size(c) for g in groups for c in costs[g])) or 1  # a smaller table, the same optimum
    slots = budget // unit
    # best[b] = (cost, choice per group so far) using at most b units
    inf = float("inf")
    best: list[tuple[float, tuple[Any, ...]]] = [(0.0, ())] * (slots + 1)
    for g in groups:
        nxt: list[tuple[float, tuple[Any, ...]]] = [(inf, ())] * (slots + 1)
        for b in range(slots + 1):
            for choice, cost in costs[g].items():
                need = _size(choice) // unit
                if need <= b and best[b - need][0] + cost < nxt[b][0]:
                    nxt[b] = (best[b - need][0] + cost, best[b - need][1] + (choice,))
        best = nxt
    return dict(zip(groups, best[slots][1]))


def rank_bits(choice: Any) -> Choice:
    """(rank, latent bits) of a single-precision choice; a plain rank is stored in fp16."""
    if is_mixed(choice):
        raise ValueError(f"{choice_text(choice)} has more than one precision: use segments()")
    return (choice[0], choice[1]) if isinstance(choice, tuple) else (int(choice), 16)


def is_mixed(choice: Any) -> bool:
    """True for a mixed-precision choice ((width, bits), ...)."""
    return isinstance(choice, tuple) and bool(choice) and isinstance(choice[0], tuple)


def segments(choice: Any) -> tuple[Choice, ...]:
    """((width, bits), ...) of any choice: one segment unless it is mixed."""
    return tuple((int(w), int(b)) for w, b in choice) if is_mixed(choice) else (rank_bits(choice),)


def choice_rank(choice: Any) -> int:
    """Latent channels kept by a choice (the sum of its segments' widths)."""
    return sum(width for width, _ in segments(choice))


def choice_text(choice: Any) -> str:
    """RANKxBITS, or WIDTHxBITS+WIDTHxBITS... for a mixed choice (parse_choice reads it back)."""
    return "+".join(f"{w}x{b}" for w, b in segments(choice))


def parse_choice(text: str) -> Any:
    """(rank, bits) from "RANKxBITS", or the segments of "WIDTHxBITS+WIDTHxBITS..." (ValueError if malformed)."""
    parts = []
    for part in text.split("+"):
        width, bits = part.split("x")
        parts.append((int(width), int(bits)))
    if any(w < 1 for w, _ in parts):
        raise ValueError(f"{text!r}: every width must be positive")
    return parts[0] if len(parts) == 1 else tuple(parts)


def projections_for(moments: Mapping[int, Any], choices: Mapping[tuple[int, str], Any]) -> dict[int, Any]:
    """{layer: KVProjection} (keys pre-RoPE) with the rank of choices[(layer, "key" | "value")] on every KV head."""
    from codesign.attention.lowrank_kv import fit_projection

    out = {}
    for layer, m in moments.items():
        keys, values = m.keys.value(), m.values.value()
        heads = keys.shape[0]
        out[layer] = fit_projection(keys, values, [choice_rank(choices[(layer, "key")])] * heads,
                                    [choice_rank(choices[(layer, "value")])] * heads)
    return out


def latent_cores(moments: Mapping[int, Any], choices: Mapping[tuple[int, str], Any], scale_bits: int = 32) -> dict[int, Any]:
    """{layer: LowRankCore} storing each side at its choice's rank and latent bits (a plain rank: fp16; a mixed choice:
    its segments), with scales of scale_bits."""
    from codesign.attention.gemma import LowRankCore

    def bits(choice: Any) -> Any:
        return segments(choice) if is_mixed(choice) else rank_bits(choice)[1]

    projections = projections_for(moments, choices)
    return {layer: LowRankCore(projections[layer], bits=bits(choices[(layer, "key")]),
                               value_bits=bits(choices[(layer, "value")]), scale_bits=scale_bits)
            for layer in moments}


def side_costs(model: Any, contexts: Sequence[Any], tail: int, moments: Mapping[int, Any], choices: Sequence[Choice],
               progress: Callable[[str], None] = print, scale_bits: int = 32) -> dict[str, dict[tuple[int, str], dict[Choice, float]]]:
    """{measure: {(layer, side): {(rank, bits): cost}}} with one layer's one side at each choice (scales of scale_bits),
    for the measures "kl" (mean KL per token from the exact model) and "nll" (mean NLL increase, floored at 0); full
    rank in fp16 costs 0."""
    from codesign.attention.gemma import ExactCore, gemma_attention_replacements
    from codesign.llm.long_context import evaluate

    held_out = sorted({c.split for c in contexts if getattr(c, "split", "") in HELD_OUT_SPLITS})
    if held_out:
        raise ValueError(f"calibration contexts from the held-out split {held_out[0]!r}: measure sensitivity on 'train' "
                         "contexts, evaluate on held-out ones")
    dim = next(iter(moments.values())).keys.value().shape[-1]
    exact: Choice = (dim, 16)
    full = {(layer, side): exact for layer in moments for side in ("key", "value")}
    for choice in choices:
        if not 1 <= choice_rank(choice) <= dim:
            raise ValueError(f"rank {choice_rank(choice)} of {choice_text(choice)} is outside 1..{dim}")

    def only(layer: int, side: str, choice: Choice) -> Callable[[], dict[str, Any]]:
        core = latent_cores({layer: moments[layer]}, full | {(layer, side): choice}, scale_bits)[layer]

        def replacements() -> dict[str, Any]:
            every = gemma_attention_replacements(model, lambda i: core if i == layer else ExactCore())
            return {name: m for name, m in every.items() if m.layer_idx == layer}
        return replacements

    methods: dict[str, Any] = {"dense": None}
    for layer in moments:
        for side in ("key", "value"):
            for choice in choices:
                if choice != exact:
                    methods[f"{layer}:{side}:{choice_text(choice)}"] = only(layer, side, choice)
    scores = evaluate(model, contexts, tail, methods, progress, fidelity=True)
    dense = float(scores["dense"].nll.mean())
    costs: dict[str, dict[tuple[int, str], dict[Choice, float]]] = {
        m: {g: {exact: 0.0} for g in full} for m in MEASURES}
    for name, s in scores.items():
        if name == "dense":
            continue
        layer_s, side, text = name.split(":")
        group, choice = (int(layer_s), side), parse_choice(text)
        assert s.kl is not None  # evaluate(fidelity=True) scores it
        costs["kl"][group][choice] = float(s.kl.mean())
        costs["nll"][group][choice] = max(float(s.nll.mean()) - dense, 0.0)
    return costs


def kept_fraction(choices: Mapping[tuple[int, str], Any], dim: int) -> float:
    """Channels kept over all (layer, side) groups' full width."""
    return sum(choice_rank(c) for c in choices.values()) / (len(choices) * dim)


def byte_fraction(choices: Mapping[tuple[int, str], Any], dim: int, scales: bool = False) -> float:
    """Latent bits per token over an fp16 cache's, all (layer, side) groups (latent_bits; scales: with the scales)."""
    return sum(latent_bits(c, scales) for c in choices.values()) / (len(choices) * dim * 16)


def parse_choices(text: str) -> dict[tuple[int, str], Any]:
    """{(layer, side): choice} from "LAYER:KEYRANKxBITS:VALUERANKxBITS,..." (e.g. "5:128x8:256x4"; a side may be
    mixed, "5:64x8+64x4:256x4")."""
    out: dict[tuple[int, str], Any] = {}
    try:
        for part in text.split(","):
            layer, key, value = part.split(":")
            for side, choice in (("key", key), ("value", value)):
                out[(int(layer), side)] = parse_choice(choice)
    except ValueError:
        raise ValueError(f"{text!r}: expected LAYER:KEYRANKxBITS:VALUERANKxBITS,... (e.g. 5:128x8:256x4, or "
                         "5:64x8+64x4:256x4 for a mixed-precision side)") from None
    return out


def format_choices(choices: Mapping[tuple[int, str], Any]) -> str:
    """The text parse_choices reads back (a plain rank is written as fp16)."""
    layers = sorted({layer for layer, _ in choices})
    return ",".join(f"{layer}:" + ":".join(choice_text(choices[(layer, side)]) for side in ("key", "value"))
                    for layer in layers)
