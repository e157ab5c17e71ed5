"""The groups benchmarks/kmeans_layer_attribution.py attributes the perplexity gap to."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from kmeans_layer_attribution import layer_groups  # noqa: E402


def test_groups_by_kind_by_module_and_by_thirds_of_the_blocks() -> None:
    names = [f"model.layers.{b}.{module}.{kind}" for b in range(7)
             for module, kinds in (("self_attn", ("q_proj", "o_proj")), ("mlp", ("down_proj",))) for kind in kinds]
    groups = layer_groups(names)
    assert groups["q_proj"] == [f"model.layers.{b}.self_attn.q_proj" for b in range(7)]
    assert len(groups["down_proj"]) == 7
    assert sorted(groups["every self_attn"]) == sorted(n for n in names if ".self_attn." in n)
    assert sorted(groups["every mlp"]) == sorted(n for n in names if ".mlp." in n)
    # seven blocks split 2 / 2 / 3; each block in exactly one third, none left out
    thirds = [g for g in groups if g.startswith("blocks ")]
    assert thirds == ["blocks 0-1", "blocks 2-3", "blocks 4-6"]
    assert sorted(n for g in thirds for n in groups[g]) == sorted(names)


def test_layers_outside_blocks_get_no_third() -> None:
    groups = layer_groups(["lm_head", "model.layers.0.mlp.up_proj"])
    assert groups["lm_head"] == ["lm_head"]
    assert groups["blocks 0-0"] == ["model.layers.0.mlp.up_proj"]
    assert "every mlp" in groups and not any(g == "every " for g in groups)
