"""Low-rank KV ranks from measured sensitivity: the loss each layer's keys or values cost at each rank, then a budget.

`rank_costs` measures, on calibration contexts (the train split), the mean NLL increase when one
layer's keys (or values) alone are cut to rank r, the other side and every other layer exact.
`allocate_by_cost` picks one rank per (layer, side) that minimises the summed increase under a
global channel budget (exact, by dynamic programming over the choices). The sum assumes the
costs add up, which the evaluation then checks on held-out text.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

__all__ = ["allocate_by_cost", "rank_costs", "projections_for", "kept_fraction"]


def allocate_by_cost(costs: Mapping[Hashable, Mapping[int, float]], budget: int) -> dict[Hashable, int]:
    """{group: rank} with sum of ranks <= budget and the least total cost (each group's choices: its costs' ranks)."""
    if not costs or any(not options for options in costs.values()):
        raise ValueError("every group needs at least one (rank, cost) choice")
    groups = list(costs)
    if sum(min(costs[g]) for g in groups) > budget:
        raise ValueError(f"a budget of {budget} channels is below the smallest ranks offered "
                         f"({sum(min(costs[g]) for g in groups)})")
    # best[b] = (cost, choice per group so far) using at most b channels
    inf = float("inf")
    best: list[tuple[float, tuple[int, ...]]] = [(0.0, ())] * (budget + 1)
    for g in groups:
        nxt: list[tuple[float, tuple[int, ...]]] = [(inf, ())] * (budget + 1)
        for b in range(budget + 1):
            for rank, cost in costs[g].items():
                if rank <= b and best[b - rank][0] + cost < nxt[b][0]:
                    nxt[b] = (best[b - rank][0] + cost, best[b - rank][1] + (rank,))
        best = nxt
    return dict(zip(groups, best[budget][1]))


def projections_for(moments: Mapping[int, Any], ranks: Mapping[tuple[int, str], int]) -> dict[int, Any]:
    """{layer: KVProjection} (keys pre-RoPE) with the rank of ranks[(layer, "key" | "value")] on every KV head."""
    from codesign.attention.lowrank_kv import fit_projection

    out = {}
    for layer, m in moments.items():
        keys, values = m.keys.value(), m.values.value()
        heads = keys.shape[0]
        out[layer] = fit_projection(keys, values, [ranks[(layer, "key")]] * heads, [ranks[(layer, "value")]] * heads)
    return out


def rank_costs(model: Any, contexts: Sequence[Any], tail: int, moments: Mapping[int, Any], ranks: Sequence[int],
               progress: Callable[[str], None] = print) -> dict[tuple[int, str], dict[int, float]]:
    """{(layer, side): {rank: mean NLL increase}} with one layer's one side at each rank (full rank: 0 by definition)."""
    from codesign.attention.gemma import ExactCore, LowRankCore, gemma_attention_replacements
    from codesign.llm.long_context import evaluate

    dim = next(iter(moments.values())).keys.value().shape[-1]
    full = {(layer, side): dim for layer in moments for side in ("key", "value")}

    def only(layer: int, side: str, rank: int) -> Callable[[], dict[str, Any]]:
        projection = projections_for({layer: moments[layer]}, full | {(layer, side): rank})[layer]

        def replacements() -> dict[str, Any]:
            every = gemma_attention_replacements(model, lambda i: LowRankCore(projection, bits=16) if i == layer
                                                 else ExactCore())
            return {name: m for name, m in every.items() if m.layer_idx == layer}
        return replacements

    methods: dict[str, Any] = {"dense": None}
    for layer in moments:
        for side in ("key", "value"):
            for rank in ranks:
                if rank < dim:
                    methods[f"{layer}:{side}:{rank}"] = only(layer, side, rank)
    scores = evaluate(model, contexts, tail, methods, progress)
    dense = float(scores["dense"].nll.mean())
    costs: dict[tuple[int, str], dict[int, float]] = {g: {dim: 0.0} for g in full}
    for name, s in scores.items():
        if name != "dense":
            layer_s, side, rank_s = name.split(":")
            costs[(int(layer_s), side)][int(rank_s)] = max(float(s.nll.mean()) - dense, 0.0)
    return costs


def kept_fraction(ranks: Mapping[tuple[int, str], int], dim: int) -> float:
    """Channels kept over all (layer, side) groups' full width."""
    return sum(ranks.values()) / (len(ranks) * dim)
