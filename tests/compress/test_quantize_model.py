"""quantize_ on a transformers model built from a tiny config (random weights, no download) and on plain torch modules."""

import subprocess
import sys
import warnings

import pytest
import torch

from codesign.compress import KMeansConfig, QERConfig, QuantizedLinear, quantize_
from codesign.compress.checkpoint import compressed_layers, save_compressed

transformers = pytest.importorskip("transformers")

GROUP = 32


def tiny_llama(seed=0):
    """A 2-layer Llama with hidden size 64 and random weights."""
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


IDS = torch.arange(24).reshape(2, 12) % 128


def logits(model, ids=IDS):
    with torch.no_grad():
        return model(input_ids=ids).logits


def test_every_linear_is_replaced_and_the_state_round_trips_exactly():
    model = quantize_(tiny_llama(0), KMeansConfig(bits=4, group_size=GROUP))
    layers = compressed_layers(model)
    assert len(layers) == 2 * 7 + 1 and not any(isinstance(m, torch.nn.Linear) for m in model.modules())
    other = quantize_(tiny_llama(1), KMeansConfig(bits=4, group_size=GROUP))
    assert not torch.equal(logits(other), logits(model))
    state = model.state_dict()
    other.load_state_dict(state)
    after = other.state_dict()
    assert all(after[k].dtype == v.dtype and torch.equal(after[k], v) for k, v in state.items())
    assert torch.equal(logits(other), logits(model))


def test_filter_by_pattern_and_calibrated_srr():
    model = tiny_llama()
    before = logits(model)
    calibration = [IDS, {"input_ids": IDS.flip(1)}]
    config = QERConfig(method="srr", rank=4, base=KMeansConfig(bits=2, group_size=GROUP))
    quantize_(model, config, calibration=calibration, filter="model.layers.0.mlp.*")
    assert sorted(compressed_layers(model)) == [f"model.layers.0.mlp.{p}_proj" for p in ("down", "gate", "up")]
    after = logits(model)
    assert not torch.equal(after, before) and torch.allclose(after, before, atol=0.5)


def test_save_then_load_in_a_fresh_process_gives_identical_outputs(tmp_path):
    model = quantize_(tiny_llama(), KMeansConfig(bits=3, group_size=GROUP), filter=lambda name, m: "layers.1" in name)
    save_compressed(model, tmp_path / "saved")
    expected = logits(model)
    child = ("import torch, sys; from codesign.compress import load_compressed; "
             "m = load_compressed(sys.argv[1]); ids = torch.arange(24).reshape(2, 12) % 128; "
             "torch.save(m(input_ids=ids).logits.detach(), sys.argv[2])")
    subprocess.run([sys.executable, "-c", child, str(tmp_path / "saved"), str(tmp_path / "out.pt")], check=True,
                   timeout=300)
    assert torch.equal(torch.load(tmp_path / "out.pt"), expected)


def test_half_precision_model_runs_the_kernels():
    model = quantize_(tiny_llama(), KMeansConfig(bits=4, group_size=GROUP), filter="model.layers.0.self_attn.*")
    reference = logits(model)
    model.to(torch.float16)
    layer = model.get_submodule("model.layers.0.self_attn.q_proj")
    assert isinstance(layer, QuantizedLinear) and layer.scales.dtype == torch.float16 and layer.packed.dtype == torch.uint8
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback: the interpreter runs the Triton kernel
        half = logits(model)
    assert half.dtype == torch.float16 and torch.allclose(half.float(), reference, atol=0.05)


@pytest.mark.parametrize("model, kwargs, message", [
    (torch.nn.Sequential(torch.nn.ReLU()), {}, "has no linear layers to quantize"),
    (torch.nn.Sequential(torch.nn.Linear(64, 8)), {"filter": "decoder.*"}, "pattern 'decoder.\\*' matches none"),
    (torch.nn.Sequential(torch.nn.Linear(64, 8)), {"filter": lambda n, m: False}, "the filter matches none"),
    (torch.nn.Sequential(torch.nn.Linear(64, 8)), {"calibration": torch.randn(4, 48)},
     r"calibration batch 0 \(4, 48\) does not fit the model"),
    (torch.nn.Sequential(torch.nn.Linear(64, 8)), {}, "pass calibration="),
    (torch.nn.Sequential(torch.nn.Linear(40, 8)), {"calibration": torch.randn(4, 40)}, "group size 32 does not divide"),
])
def test_bad_input_is_one_line(model, kwargs, message):
    config = QERConfig(method="scaled", rank=2, base=KMeansConfig(bits=2, group_size=GROUP))
    with pytest.raises(ValueError, match=message) as info:
        quantize_(model, config, **kwargs)
    assert "\n" not in str(info.value)


def tiny_gpt2(seed=0):
    """A 2-layer GPT-2 (its linears are transformers' Conv1D, weight stored [in, out]) with random weights."""
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=32,
                                     bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


def test_gpt2_conv1d_layers_are_quantized_as_the_linears_they_are():
    from transformers.pytorch_utils import Conv1D

    from codesign.compress import ErrorFeedbackConfig
    from codesign.compress.metrics import relative_error

    model = tiny_gpt2()
    before = logits(model)
    convs = {n: m.weight.detach().clone() for n, m in model.named_modules() if isinstance(m, Conv1D)}
    assert len(convs) == 2 * 4
    quantize_(model, KMeansConfig(bits=8, group_size=GROUP))
    layers = compressed_layers(model)
    assert sorted(layers) == sorted(convs)  # every Conv1D; the head is tied to the token embeddings
    for name, weight in convs.items():  # stored [in, out]: the layer applies its transpose
        assert (layers[name].in_features, layers[name].out_features) == tuple(weight.shape)
        assert relative_error(weight.T, layers[name].qweight.dequantize()) < 0.01
    after = logits(model)
    assert not torch.equal(after, before) and (after - before).abs().max() < 0.05 * before.abs().max()
    calibrated = tiny_gpt2()  # through the calibration hooks and the block-by-block pass
    quantize_(calibrated, ErrorFeedbackConfig(base=KMeansConfig(bits=4, group_size=GROUP)), calibration=IDS,
              sequential=True)
    assert sorted(compressed_layers(calibrated)) == sorted(convs)


def test_a_failed_quantize_leaves_the_conv1d_layers_as_they_were():
    from transformers.pytorch_utils import Conv1D

    model = tiny_gpt2()
    before = {n: type(m) for n, m in model.named_modules()}
    config = QERConfig(method="scaled", rank=2, base=KMeansConfig(bits=2, group_size=GROUP))
    with pytest.raises(ValueError, match="calibration batch 0"):
        quantize_(model, config, calibration=torch.full((1, 4), 1000))  # token ids past the vocabulary
    assert {n: type(m) for n, m in model.named_modules()} == before and Conv1D in before.values()


def test_a_model_whose_only_linear_is_tied_names_the_reason():
    embedding = torch.nn.Embedding(16, 64)
    head = torch.nn.Linear(64, 16, bias=False)
    head.weight = embedding.weight
    with pytest.raises(ValueError, match="shares its weight with another module") as info:
        quantize_(torch.nn.ModuleDict({"embed": embedding, "head": head}), KMeansConfig(bits=4, group_size=GROUP))
    assert "untied" not in str(info.value) and "filter=" in str(info.value)
