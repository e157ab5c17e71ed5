"""Sequential calibration: block b's layers see the inputs that the quantized blocks before it produce."""

import pytest
import torch

from codesign.compress import AsymIntConfig, ErrorFeedbackConfig, KMeansConfig, QuantizedLinear, quantize_
from codesign.compress.model import MethodSpec, collect_statistics
from codesign.compress.sequential import sequential_replacements
from codesign.llm.swap import swapped

transformers = pytest.importorskip("transformers")

GROUP = 32
CONFIG = ErrorFeedbackConfig(base=AsymIntConfig(bits=2, group_size=GROUP))
BATCHES = [torch.arange(24).reshape(2, 12) % 128, (torch.arange(36).reshape(3, 12) * 7) % 128]


def tiny_llama(layers=3):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


def run_over(model):
    def run():
        for ids in BATCHES:
            model(input_ids=ids)
    return run


def covariances(model, names):
    return collect_statistics(model, run_over(model), names).input_cov


def test_each_block_is_calibrated_under_the_blocks_quantized_before_it():
    model = tiny_llama()
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and ".layers." in n]
    original = covariances(model, names)
    used = {}

    def build(name, linear, cov):
        used[name] = cov
        return QuantizedLinear.from_linear(linear, CONFIG, cov, kernel="torch")

    built, _ = sequential_replacements(model, names, build, run_over(model))
    assert all(isinstance(m, torch.nn.Linear) for n, m in model.named_modules() if n in names)  # left as it was
    for block in (1, 2):
        inside = [n for n in names if f".layers.{block}." in n]
        before = {n: built[n] for n in names if int(n.split(".")[2]) < block}
        with swapped(model, before):
            expected = covariances(model, inside)  # whole-model passes with the earlier blocks quantized
        for n in inside:
            assert torch.allclose(used[n], expected[n], rtol=1e-5, atol=1e-7), n
            assert not torch.allclose(used[n], original[n], rtol=1e-3, atol=1e-5), n  # 2-bit blocks moved it
    # block 0 sees the original model's inputs
    assert all(torch.allclose(used[n], original[n], rtol=1e-5, atol=1e-7) for n in names if ".layers.0." in n)


def test_quantize_sequential_replaces_every_layer_and_differs_from_one_pass():
    one_pass = quantize_(tiny_llama(), CONFIG, calibration=BATCHES, kernel="torch")
    sequential = quantize_(tiny_llama(), CONFIG, calibration=BATCHES, kernel="torch", sequential=True)
    layers = {n: m for n, m in sequential.named_modules() if isinstance(m, QuantizedLinear)}
    assert len(layers) == 3 * 7 + 1
    first = dict(one_pass.named_modules())

    def same(name):
        return torch.equal(layers[name].qweight.dequantize(), first[name].qweight.dequantize())

    assert same("model.layers.0.self_attn.q_proj")  # block 0 sees the original inputs either way
    assert not same("model.layers.2.mlp.down_proj")


@pytest.mark.parametrize("model, config, message", [
    (tiny_llama(1), KMeansConfig(bits=2, group_size=GROUP), "applies to the methods that calibrate"),
    (torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Linear(32, 8)), CONFIG, "torch.nn.ModuleList of blocks"),
])
def test_sequential_bad_input_is_one_line(model, config, message):
    calibration = BATCHES if isinstance(model, transformers.PreTrainedModel) else torch.randn(4, 64)
    with pytest.raises(ValueError, match=message) as info:
        quantize_(model, config, calibration=calibration, sequential=True)
    assert "\n" not in str(info.value)


def test_method_spec_takes_sequential_only_with_calibration():
    assert MethodSpec("kmeans", 3, error_feedback=True, sequential=True).sequential
    with pytest.raises(ValueError, match="--sequential applies"):
        MethodSpec("kmeans", 3, sequential=True)
