"""The whole-model guard: units of layers kept only when the model's next-token KL to the original falls."""

import copy
import dataclasses

import pytest
import torch

from codesign.compress import KMeansConfig, QERConfig, quantize_
from codesign.compress.linear import QuantizedLinear
from codesign.compress.model import MethodSpec, collect_statistics
from codesign.compress.model_guard import ModelGuardConfig, choose_by_model, guard_units, srr_model_guard
from codesign.llm import swapped
from tests.compress.next_token import mean_kl, windows

transformers = pytest.importorskip("transformers")


def low_rank_llama(layers=2):
    """A tiny random Llama whose linears carry a strong rank-2 part, so that SRR's criterion keeps k > 0."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and name != "lm_head":
                n_out, n_in = module.weight.shape
                module.weight += 0.5 * torch.randn(n_out, 2) @ torch.randn(2, n_in) / n_in**0.5
        model.lm_head.weight *= 8  # peaked next-token distributions, as a trained model's, so that KLs are not tiny
    return model


def linears(model):
    return {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"}


def noisy(linear, scale, seed):
    """A copy of the linear with Gaussian noise of `scale` times its weights' RMS."""
    copy_ = copy.deepcopy(linear)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        copy_.weight += scale * copy_.weight.pow(2).mean().sqrt() * torch.randn(copy_.weight.shape, generator=generator)
    return copy_


def test_units_group_one_kind_within_a_span_of_the_depth():
    names = [f"model.layers.{b}.self_attn.{k}" for b in range(6) for k in ("q_proj", "o_proj")] + ["head.proj"]
    units = guard_units(names, depth_groups=3)
    assert units["q_proj in blocks 0-1"] == ["model.layers.0.self_attn.q_proj", "model.layers.1.self_attn.q_proj"]
    assert units["o_proj in blocks 4-5"] == ["model.layers.4.self_attn.o_proj", "model.layers.5.self_attn.o_proj"]
    assert units["proj in blocks 0-1"] == ["head.proj"]  # no block index: the first span
    assert sum(map(len, units.values())) == len(names) and len(units) == 7
    assert list(guard_units(names[:2], depth_groups=5)) == ["q_proj in blocks 0-0", "o_proj in blocks 0-0"]


HURT = "model.layers.0.mlp.up_proj"


def one_repair(model, hurt_noise, other_noise):
    """Fallback exact but for HURT; the alternative repairs HURT and is noisy everywhere else."""
    layers = linears(model)
    fallback = {n: noisy(m, hurt_noise, 0) if n == HURT else copy.deepcopy(m) for n, m in layers.items()}
    alternative = {n: copy.deepcopy(m) if n == HURT else noisy(m, other_noise, 100 + i)
                   for i, (n, m) in enumerate(layers.items())}
    return fallback, alternative


def test_only_the_units_that_lower_the_model_kl_are_kept():
    model = low_rank_llama()
    hurt = HURT
    fallback, alternative = one_repair(model, 0.5, 1.0)
    data = windows(4)
    chosen, kl = choose_by_model(model, fallback, alternative, data, objective="kl")
    assert chosen == [hurt]
    assert kl["chosen"] < 1e-3 * kl["fallback"]  # the original model again, up to float16 rounding of the teacher
    assert kl["fallback"] == pytest.approx(mean_kl(model, fallback, data), rel=1e-2, abs=1e-5)


def sampled_text(model, count=6, length=24, seed=3):
    """Windows sampled from the model itself: text it predicts well, as a trained model does its training text."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    with torch.no_grad():
        for _ in range(count):
            ids = torch.randint(0, 128, (1,), generator=generator)
            while ids.numel() < length:
                probs = model(input_ids=ids[None]).logits[0, -1].softmax(-1)
                ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)])
            out.append(ids)
    return out


def mean_nll(model, replacements, data):
    """Mean over windows of the per-token next-token NLL of the window's own text, from the model's logits."""
    with torch.no_grad(), swapped(model, replacements):
        return sum(float(torch.nn.functional.cross_entropy(model(input_ids=w[None]).logits[0, :-1], w[1:]))
                   for w in data) / len(data)


def test_the_nll_objective_scores_the_text_itself():
    model = low_rank_llama()
    hurt = HURT
    fallback, alternative = one_repair(model, 3.0, 3.0)
    data = sampled_text(model, count=8)
    chosen, scores = choose_by_model(model, fallback, alternative, data)  # nll, the default
    assert chosen == [hurt]
    assert scores["fallback"] == pytest.approx(mean_nll(model, fallback, data), rel=1e-5)
    assert scores["chosen"] == pytest.approx(mean_nll(model, {}, data), rel=1e-5)  # the original model again
    assert scores["chosen"] < scores["fallback"]


def test_a_unit_is_kept_only_when_it_gains_alone_and_together():
    model = low_rank_llama()
    layers = linears(model)
    # noise everywhere: in a tiny random model, repairing one layer can raise the KL (noise partly cancels)
    fallback = {n: noisy(m, 0.3, i) for i, (n, m) in enumerate(layers.items())}
    alternative = {n: copy.deepcopy(m) if ".mlp." in n else noisy(m, 1.0, 100 + i) for i, (n, m) in enumerate(layers.items())}
    data = windows(4)
    chosen, kl = choose_by_model(model, fallback, alternative, data, objective="kl")
    base = mean_kl(model, fallback, data)
    assert chosen and kl["chosen"] < kl["fallback"]
    assert kl["chosen"] == pytest.approx(mean_kl(model, {**fallback, **{n: alternative[n] for n in chosen}}, data),
                                            rel=1e-2, abs=1e-5)  # the teacher is kept in float16
    for label, unit in guard_units(list(layers), 3).items():
        alone = mean_kl(model, {**fallback, **{n: alternative[n] for n in unit}}, data)
        if set(unit) <= set(chosen):
            assert alone < base, label
        if alone >= base:
            assert not set(unit) & set(chosen), label


def test_the_fallback_stays_when_no_unit_gains():
    model = low_rank_llama()
    layers = linears(model)
    fallback = {n: noisy(m, 0.1, i) for i, (n, m) in enumerate(layers.items())}
    alternative = {n: noisy(m, 1.0, 100 + i) for i, (n, m) in enumerate(layers.items())}
    chosen, kl = choose_by_model(model, fallback, alternative, windows(4), objective="kl")
    assert chosen == [] and kl["chosen"] == kl["fallback"]


def test_srr_model_guard_keeps_srr_only_where_the_model_gains():
    model = low_rank_llama(layers=3)
    layers = {**linears(model), "lm_head": model.lm_head}  # the head (no planted structure) keeps k = 0
    data = windows(8)
    config = QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32))
    batch = torch.stack(data)
    cov = collect_statistics(model, lambda: model(batch), list(layers), inputs=True).input_cov
    built = {n: QuantizedLinear.from_linear(m, config, cov[n], kernel="torch") for n, m in layers.items()}
    kept = [n for n, m in built.items() if m.qweight.preserved_rank > 0]
    assert 10 <= len(kept) < len(layers) and "lm_head" not in kept  # the rank-2 parts make SRR keep subspaces
    guarded, summary = srr_model_guard(model, built, cov, config, data, ModelGuardConfig(windows=8, objective="kl"))
    assert summary["guard_layers"] == len(kept)
    chosen = [n for n in kept if guarded[n] is built[n]]
    assert summary["guard_chosen"] == len(chosen) and 0 < len(chosen) < len(kept)  # this model: some, not all
    zero = dataclasses.replace(config, preserved_rank=0)
    for n in kept:
        if n not in chosen:  # SRR's k = 0 candidate, the scaled-QER solution on SRR's base
            expected = QuantizedLinear.from_linear(layers[n], zero, cov[n], kernel="torch")
            assert guarded[n].qweight.preserved_rank == 0
            assert torch.equal(guarded[n].qweight.dequantize(), expected.qweight.dequantize())
    assert all(guarded[n] is built[n] for n in layers if n not in kept)
    everywhere_zero = {**built, **{n: guarded[n] if n not in chosen else
                                   QuantizedLinear.from_linear(layers[n], zero, cov[n], kernel="torch") for n in kept}}
    assert mean_kl(model, guarded, data) < mean_kl(model, everywhere_zero, data)
    assert summary["guard_score_chosen"] < summary["guard_score_fallback"]
    # the guard scored the whole quantized model, every layer replaced
    assert summary["guard_score_chosen"] == pytest.approx(mean_kl(model, guarded, data), rel=1e-2, abs=1e-5)
    assert summary["guard_score_fallback"] == pytest.approx(mean_kl(model, everywhere_zero, data), rel=1e-2, abs=1e-5)


def test_quantize_with_the_model_guard_replaces_every_linear():
    model = low_rank_llama()
    calibration = torch.stack(windows(4))
    plain = quantize_(copy.deepcopy(model), QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32)),
                      calibration=calibration)
    guarded = quantize_(copy.deepcopy(model), QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32)),
                        calibration=calibration, model_guard=ModelGuardConfig(windows=4))
    ranks = {n: m.qweight.preserved_rank for n, m in guarded.named_modules() if isinstance(m, QuantizedLinear)}
    before = {n: m.qweight.preserved_rank for n, m in plain.named_modules() if isinstance(m, QuantizedLinear)}
    assert ranks.keys() == before.keys() and len(ranks) == 15  # every linear, the untied head included
    assert all(ranks[n] in (0, before[n]) for n in ranks) and ranks != before


def test_a_gain_within_the_noise_is_not_taken():
    model = low_rank_llama()
    layers = linears(model)
    fallback = {n: noisy(m, 0.3, i) for i, (n, m) in enumerate(layers.items())}
    hurt = "model.layers.0.mlp.up_proj"
    # the alternative differs from the fallback by a perturbation far smaller than the fallback's own noise
    alternative = {hurt: noisy(fallback[hurt], 0.01, 7)}
    data = windows(6)
    strict, kl = choose_by_model(model, fallback, alternative, data, confidence=1e6, objective="kl")
    assert strict == [] and kl["chosen"] == kl["fallback"]
    loose, kl = choose_by_model(model, fallback, alternative, data, confidence=0.0, objective="kl")
    assert (loose == [hurt]) == (kl["chosen"] < kl["fallback"])


def test_quantize_holds_the_guard_windows_aside_from_calibration():
    model = low_rank_llama()
    calibration = torch.stack(windows(4))
    config = QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32))
    guarded = quantize_(copy.deepcopy(model), config, calibration=calibration, model_guard=ModelGuardConfig(windows=2))
    on_first_two = quantize_(copy.deepcopy(model), config, calibration=[w[None] for w in calibration[:2]])
    on_all = quantize_(copy.deepcopy(model), config, calibration=[w[None] for w in calibration])
    # the head keeps k = 0 in both: it is built from the covariances of the first two sequences only
    assert guarded.lm_head.qweight.preserved_rank == 0
    assert torch.equal(guarded.lm_head.qweight.dequantize(), on_first_two.lm_head.qweight.dequantize())
    assert not torch.equal(guarded.lm_head.qweight.dequantize(), on_all.lm_head.qweight.dequantize())
    with pytest.raises(ValueError, match="at least 2 calibration sequences"):
        quantize_(copy.deepcopy(model), config, calibration=calibration[:1], model_guard=ModelGuardConfig())


@pytest.mark.parametrize(("config", "kwargs", "message"), [
    (KMeansConfig(bits=2, group_size=32), {}, "applies to QERConfig('srr')"),
    (QERConfig("scaled", rank=8, base=KMeansConfig(bits=2, group_size=32)), {}, "applies to QERConfig('srr')"),
    (QERConfig("srr", rank=8, preserved_rank=2, base=KMeansConfig(bits=2, group_size=32)), {}, "preserved_rank=None"),
    (QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32)), {"sequential": True}, "not sequential"),
    (QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32)), {"calibration": torch.randn(2, 24)},
     "integer tensors"),
])
def test_bad_model_guard_inputs_are_refused_before_any_layer_changes(config, kwargs, message):
    model = low_rank_llama()
    state = copy.deepcopy(model.state_dict())
    kwargs = {"calibration": torch.stack(windows(2)), **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        quantize_(model, config, model_guard=ModelGuardConfig(), **kwargs)
    assert not any(isinstance(m, QuantizedLinear) for m in model.modules())
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_the_model_guard_needs_a_causal_lm_and_sane_settings():
    encoder = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
    with pytest.raises(ValueError, match="needs a transformers causal LM"):
        quantize_(encoder, QERConfig("srr", rank=8, base=KMeansConfig(bits=2, group_size=32)),
                  calibration=torch.randn(4, 64), model_guard=ModelGuardConfig())
    for bad in ({"windows": 0}, {"depth_groups": 0}, {"windows": 1.5}, {"windows": True}):
        with pytest.raises(ValueError, match="must be a positive integer"):
            ModelGuardConfig(**bad)
    for bad in (-1.0, "2", True):
        with pytest.raises(ValueError, match="confidence must be a number"):
            ModelGuardConfig(confidence=bad)
    with pytest.raises(ValueError, match="objective must be one of nll, kl"):
        ModelGuardConfig(objective="mse")
    with pytest.raises(ValueError, match="--model-guard chooses SRR's preserved subspaces.*not 'kmeans'"):
        MethodSpec("kmeans", 3, model_guard="nll")
    with pytest.raises(ValueError, match="without --sequential"):
        MethodSpec("srr", 3, model_guard="kl", sequential=True)
    with pytest.raises(ValueError, match="--model-guard takes nll or kl"):
        MethodSpec("srr", 3, model_guard="mse")
