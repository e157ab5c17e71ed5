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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

__all__ = ["Choice", "MEASURES", "allocate_by_cost", "side_costs", "projections_for", "latent_cores", "kept_fraction",
           "byte_fraction", "latent_bits", "rank_bits", "parse_choices", "format_choices"]

Choice = tuple[int, int]  # (rank, latent bits) of one layer's keys or values
MEASURES = ("kl", "nll")
HELD_OUT_SPLITS = ("test",)  # the splits codesign.llm evaluates on; calibration must not read them


def latent_bits(choice: Any, scales: bool = False) -> int:
    """Bits per token and KV head of one side at a (rank, bits) choice: rank x bits, with scales plus the float32
    scale of every LATENT_GROUP channels of an int8 / int4 latent."""
    from codesign.attention.lowrank_kv import LATENT_GROUP

    rank, bits = rank_bits(choice)
    return rank * bits + (32 * -(-rank // LATENT_GROUP) if scales and bits < 16 else 0)


def allocate_by_cost(costs: Mapping[Hashable, Mapping[Any, float]], budget: int, scales: bool = False) -> dict[Hashable, Any]:
    """{group: choice} with summed size <= budget and the least total cost.

    Size: a plain rank counts its rank; a (rank, bits) choice its latent bits (latent_bits; scales: with the scales).
    """

    def _size(choice: Any) -> int:
        return latent_bits(choice, scales) if isinstance(choice, tuple) else int(choice)

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
    """(rank, latent bits) of a choice; a plain rank is stored in fp16."""
    return (choice[0], choice[1]) if isinstance(choice, tuple) else (int(choice), 16)


def projections_for(moments: Mapping[int, Any], choices: Mapping[tuple[int, str], Any]) -> dict[int, Any]:
    """{layer: KVProjection} (keys pre-RoPE) with the rank of choices[(layer, "key" | "value")] on every KV head."""
    from codesign.attention.lowrank_kv import fit_projection

    out = {}
    for layer, m in moments.items():
        keys, values = m.keys.value(), m.values.value()
        heads = keys.shape[0]
        out[layer] = fit_projection(keys, values, [rank_bits(choices[(layer, "key")])[0]] * heads,
                                    [rank_bits(choices[(layer, "value")])[0]] * heads)
    return out


def latent_cores(moments: Mapping[int, Any], choices: Mapping[tuple[int, str], Any]) -> dict[int, Any]:
    """{layer: LowRankCore} storing each side at its choice's rank and latent bits (a plain rank: fp16)."""
    from codesign.attention.gemma import LowRankCore

    projections = projections_for(moments, choices)
    return {layer: LowRankCore(projections[layer], bits=rank_bits(choices[(layer, "key")])[1],
                               value_bits=rank_bits(choices[(layer, "value")])[1]) for layer in moments}


def side_costs(model: Any, contexts: Sequence[Any], tail: int, moments: Mapping[int, Any], choices: Sequence[Choice],
               progress: Callable[[str], None] = print) -> dict[str, dict[tuple[int, str], dict[Choice, float]]]:
    """{measure: {(layer, side): {(rank, bits): cost}}} with one layer's one side at each choice, for the measures
    "kl" (mean KL per token from the exact model) and "nll" (mean NLL increase, floored at 0); full rank in fp16 costs 0."""
    from codesign.attention.gemma import ExactCore, gemma_attention_replacements
    from codesign.llm.long_context import evaluate

    held_out = sorted({c.split for c in contexts if getattr(c, "split", "") in HELD_OUT_SPLITS})
    if held_out:
        raise ValueError(f"calibration contexts from the held-out split {held_out[0]!r}: measure sensitivity on 'train' "
                         "contexts, evaluate on held-out ones")
    dim = next(iter(moments.values())).keys.value().shape[-1]
    exact: Choice = (dim, 16)
    full = {(layer, side): exact for layer in moments for side in ("key", "value")}
    for rank, _ in choices:
        if not 1 <= rank <= dim:
            raise ValueError(f"rank {rank} is outside 1..{dim}")

    def only(layer: int, side: str, choice: Choice) -> Callable[[], dict[str, Any]]:
        core = latent_cores({layer: moments[layer]}, full | {(layer, side): choice})[layer]

        def replacements() -> dict[str, Any]:
            every = gemma_attention_replacements(model, lambda i: core if i == layer else ExactCore())
            return {name: m for name, m in every.items() if m.layer_idx == layer}
        return replacements

    methods: dict[str, Any] = {"dense": None}
    for layer in moments:
        for side in ("key", "value"):
            for rank, bits in choices:
                if (rank, bits) != exact:
                    methods[f"{layer}:{side}:{rank}:{bits}"] = only(layer, side, (rank, bits))
    scores = evaluate(model, contexts, tail, methods, progress, fidelity=True)
    dense = float(scores["dense"].nll.mean())
    costs: dict[str, dict[tuple[int, str], dict[Choice, float]]] = {
        m: {g: {exact: 0.0} for g in full} for m in MEASURES}
    for name, s in scores.items():
        if name == "dense":
            continue
        layer_s, side, rank_s, bits_s = name.split(":")
        group, choice = (int(layer_s), side), (int(rank_s), int(bits_s))
        assert s.kl is not None  # evaluate(fidelity=True) scores it
        costs["kl"][group][choice] = float(s.kl.mean())
        costs["nll"][group][choice] = max(float(s.nll.mean()) - dense, 0.0)
    return costs


def kept_fraction(choices: Mapping[tuple[int, str], Any], dim: int) -> float:
    """Channels kept over all (layer, side) groups' full width."""
    return sum(rank_bits(c)[0] for c in choices.values()) / (len(choices) * dim)


def byte_fraction(choices: Mapping[tuple[int, str], Any], dim: int, scales: bool = False) -> float:
    """Latent bits per token over an fp16 cache's, all (layer, side) groups (latent_bits; scales: with the scales)."""
    return sum(latent_bits(c, scales) for c in choices.values()) / (len(choices) * dim * 16)


def parse_choices(text: str) -> dict[tuple[int, str], Choice]:
    """{(layer, side): (rank, bits)} from "LAYER:KEYRANKxBITS:VALUERANKxBITS,..." (e.g. "5:128x8:256x4")."""
    out: dict[tuple[int, str], Choice] = {}
    try:
        for part in text.split(","):
            layer, key, value = part.split(":")
            for side, choice in (("key", key), ("value", value)):
                rank, bits = choice.split("x")
                out[(int(layer), side)] = (int(rank), int(bits))
    except ValueError:
        raise ValueError(f"{text!r}: expected LAYER:KEYRANKxBITS:VALUERANKxBITS,... (e.g. 5:128x8:256x4)") from None
    return out


def format_choices(choices: Mapping[tuple[int, str], Any]) -> str:
    """The text parse_choices reads back (a plain rank is written as fp16)."""
    layers = sorted({layer for layer, _ in choices})
    return ",".join(f"{layer}:" + ":".join("{}x{}".format(*rank_bits(choices[(layer, side)])) for side in ("key", "value"))
                    for layer in layers)
