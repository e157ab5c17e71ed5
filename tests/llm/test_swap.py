"""Swapping modules in and out: replacements are installed, and originals come back even after an error."""

import pytest
import torch

from codesign.llm import attention_replacements, linear_replacements, replace_modules, restore_modules, swapped


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = torch.nn.Linear(4, 4)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])
        self.lm_head = torch.nn.Linear(4, 10)

    def forward(self, x):
        for layer in self.layers:
            x = layer.mlp(layer.self_attn(x))
        return self.lm_head(x)


class Doubled(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return 2 * self.inner(x)


def test_linear_replacements_cover_every_linear_but_the_head():
    model = Tiny()
    chosen = linear_replacements(model, lambda name, linear: Doubled(linear))
    assert sorted(chosen) == sorted(
        f"layers.{i}.{leaf}" for i in range(2) for leaf in ("self_attn", "mlp.0", "mlp.2")
    )
    only_mlp = linear_replacements(model, lambda name, linear: Doubled(linear), include=lambda name: ".mlp." in name)
    assert len(only_mlp) == 4


def test_swapped_installs_and_restores():
    torch.manual_seed(0)
    model, x = Tiny(), torch.randn(3, 4)
    before = model(x)
    originals = [m for m in model.modules()]
    with swapped(model, linear_replacements(model, lambda name, linear: Doubled(linear))):
        assert not torch.allclose(model(x), before)
        assert isinstance(model.layers[1].mlp[2], Doubled)
    assert torch.equal(model(x), before)
    assert [m for m in model.modules()] == originals
    with pytest.raises(RuntimeError, match="inside"):
        with swapped(model, attention_replacements(model, lambda i, attn: Doubled(attn))):
            assert isinstance(model.layers[0].self_attn, Doubled)
            raise RuntimeError("inside")
    assert torch.equal(model(x), before)


def test_replace_and_restore_by_name():
    model = Tiny()
    head = model.lm_head
    originals = replace_modules(model, {"lm_head": torch.nn.Identity()})
    assert originals == {"lm_head": head} and isinstance(model.lm_head, torch.nn.Identity)
    restore_modules(model, originals)
    assert model.lm_head is head


def test_bad_names_and_empty_selections_are_errors():
    model = Tiny()
    with pytest.raises(ValueError, match="the model has no submodule 'layers.5.mlp'"):
        replace_modules(model, {"layers.5.mlp": torch.nn.Identity()})
    with pytest.raises(ValueError, match="no submodule 'layers.0.nothing'"):
        replace_modules(model, {"layers.0.nothing": torch.nn.Identity()})
    with pytest.raises(ValueError, match="no linear layers"):
        linear_replacements(torch.nn.Sequential(torch.nn.ReLU()), lambda n, m: m)
    with pytest.raises(ValueError, match="no 'self_attn' modules"):
        attention_replacements(torch.nn.Sequential(torch.nn.ReLU()), lambda i, m: m)
