"""Block-wise tuning of stored scales and levels: codes kept, format kept, the block's held-out error never raised."""

import copy

import pytest
import torch

from codesign.compress import AsymIntConfig, ErrorFeedbackConfig, KMeansConfig, QuantizedLinear, quantize_
from codesign.compress.block_tune import BlockTuneConfig, TunedLinear, error_of, tune_block
from codesign.compress.formats import unpack_codes
from codesign.compress.model import MethodSpec

transformers = pytest.importorskip("transformers")

GROUP = 32


def tiny_llama(layers=2):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


def batches(count=8, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 128, (2, 16), generator=generator) for _ in range(count)]


def layers_of(model):
    return {n: m for n, m in model.named_modules() if isinstance(m, QuantizedLinear)}


def block_error(reference, model, data, block):
    """Relative squared error of one block's output against the original model's, on `data`."""
    outputs = []
    for net in (reference, model):
        seen: list = []
        hook = net.model.layers[block].register_forward_hook(
            lambda m, a, out, seen=seen: seen.append(out[0] if isinstance(out, tuple) else out))
        with torch.no_grad():
            for ids in data:
                net(input_ids=ids)
        hook.remove()
        outputs.append(torch.cat(seen))
    return float((outputs[1] - outputs[0]).pow(2).mean() / outputs[0].pow(2).mean())


@pytest.mark.parametrize("base", [KMeansConfig(bits=2, group_size=GROUP), AsymIntConfig(bits=2, group_size=GROUP)])
def test_tuning_keeps_codes_and_format_and_lowers_the_block_error(base):
    config = ErrorFeedbackConfig(base=base)
    data = batches()
    reference = tiny_llama()
    plain = quantize_(tiny_llama(), config, calibration=data, kernel="torch", sequential=True)
    tuned = quantize_(tiny_llama(), config, calibration=data, kernel="torch",
                      block_tune=BlockTuneConfig(epochs=20, lr=1e-2))
    before, after = layers_of(plain), layers_of(tuned)
    assert before.keys() == after.keys() and len(after) == 2 * 7 + 1
    first = "model.layers.0.self_attn.q_proj"  # block 0's layers see the same inputs in both runs
    a, b = before[first].qweight, after[first].qweight
    assert a.packed.shape == b.packed.shape and b.scales.dtype == torch.float16 and b.codebook.dtype == a.codebook.dtype
    if base.__class__ is AsymIntConfig:
        assert torch.equal(a.packed, b.packed) and torch.equal(a.zeros, b.zeros)  # codes and zero points kept
        assert torch.equal(a.codebook, b.codebook)
    else:  # the levels may be re-sorted with their codes: each old code maps to one new code
        old, new = (unpack_codes(q.packed, 2, 64).long() for q in (a, b))
        assert torch.unique(old * 4 + new).numel() == torch.unique(old).numel()
        assert bool((b.codebook[1:] >= b.codebook[:-1]).all())
    assert not torch.equal(a.scales, b.scales)
    fresh = batches(4, seed=7)  # tokens neither run calibrated on
    assert block_error(reference, tuned, fresh, 0) < block_error(reference, plain, fresh, 0)


def test_write_back_gives_the_weight_that_was_trained():
    torch.manual_seed(3)
    linear = torch.nn.Linear(64, 16)
    cov = torch.eye(64, dtype=torch.float64)
    module = QuantizedLinear.from_linear(linear, ErrorFeedbackConfig(base=KMeansConfig(bits=3, group_size=GROUP)), cov,
                                         kernel="torch")
    tuned = TunedLinear(module)
    with torch.no_grad():
        tuned.log_scale.add_(0.1 * torch.randn_like(tuned.log_scale))
        tuned.levels.copy_(tuned.levels.flip(0))  # reversed levels: write_back must re-sort them with their codes
        expected = tuned.weight().half().float()
    tuned.write_back()
    stored = module.qweight.dequantize().float()
    assert torch.allclose(stored, expected, rtol=2e-3, atol=1e-4)
    assert bool((module.qweight.codebook[1:] >= module.qweight.codebook[:-1]).all())


def test_a_block_no_epoch_improves_keeps_its_stored_values_bit_for_bit():
    torch.manual_seed(4)
    block = torch.nn.Sequential(torch.nn.Linear(64, 64))
    layer = QuantizedLinear.from_linear(block[0], ErrorFeedbackConfig(base=AsymIntConfig(bits=4, group_size=GROUP)),
                                        torch.eye(64, dtype=torch.float64), kernel="torch")
    block[0] = layer
    stored = copy.deepcopy(dict(layer.named_buffers()))
    inputs = [torch.randn(8, 64) for _ in range(4)]
    targets = [block(x).detach() for x in inputs]  # the quantized block is its own target: nothing to gain
    # steps far too large: every epoch ends worse than the untuned values
    errors = tune_block(block, [layer], lambda i: block(inputs[i]), targets, BlockTuneConfig(epochs=2, lr=0.5))
    assert errors["holdout_before"] < 1e-10 and errors["holdout_after"] == 0.0
    assert all(torch.equal(t, dict(layer.named_buffers())[n]) for n, t in stored.items())
    assert block[0] is layer


def test_the_normalized_objective_sees_the_small_channels_that_plain_mse_drowns():
    torch.manual_seed(5)
    target = torch.randn(64, 32)
    target[:, 0] = 1000.0  # one massive channel, as a pre-norm residual stream holds
    off_big = target.clone()
    off_big[:, 0] += 20.0  # 2 % off in the massive channel
    off_small = target + 0.5 * torch.randn(64, 32) * (torch.arange(32) > 0)  # 50 % off in all the others
    mse = [error_of(lambda i, o=o: o, [target], [0], "mse") for o in (off_big, off_small)]
    normalized = [error_of(lambda i, o=o: o, [target], [0], "normalized") for o in (off_big, off_small)]
    assert mse[0] > mse[1]  # plain MSE ranks the harmless error first
    assert normalized[1] > 100 * normalized[0]  # after each token's RMS norm, the small channels dominate
    assert error_of(lambda i: 3.0 * target, [target], [0], "normalized") < 1e-12  # a token's scale is what the norm removes


@pytest.mark.parametrize("kwargs, message", [
    ({"objective": "l1"}, "unknown block-tune objective 'l1'"),
    ({"epochs": 0}, "epochs must be a positive integer"),
    ({"lr": 2.0}, "learning rate must lie in"),
    ({"holdout": 1.0}, "holdout must lie in"),
])
def test_bad_tuning_settings_are_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        BlockTuneConfig(**kwargs)
    assert "\n" not in str(info.value)


def test_block_tune_needs_error_feedback_on_a_scalar_grid():
    assert MethodSpec("kmeans", 3, error_feedback=True, block_tune=4).sequential  # implied
    with pytest.raises(ValueError, match="unknown block-tune objective"):
        MethodSpec("kmeans", 3, error_feedback=True, block_tune=4, block_objective="kl")
    for kwargs in ({"method": "kmeans"}, {"method": "vq", "bits": 2, "error_feedback": True}):
        with pytest.raises(ValueError, match="--block-tune is an option"):
            MethodSpec(**({"bits": 3} | kwargs), block_tune=4)
    with pytest.raises(ValueError, match="block_tune applies to error feedback on a scalar grid"):
        quantize_(tiny_llama(1), KMeansConfig(bits=2, group_size=GROUP), calibration=batches(2),
                  block_tune=BlockTuneConfig())


@pytest.mark.parametrize("config", [
    KMeansConfig(bits=4, group_size=GROUP, zero_point=True),  # zero points, levels trained in units of half their span
    KMeansConfig(bits=3, group_size=GROUP, zero_point=False),  # symmetric levels, trained
    KMeansConfig(bits=2, group_size=GROUP, codebook="group"),  # per-group codebooks: scales only
    AsymIntConfig(bits=4, group_size=GROUP),  # integer levels and zero points: scales only
], ids=["kmeans-zero-point", "kmeans-symmetric", "kmeans-group-books", "int-asym"])
def test_the_weight_rebuilt_in_backward_gives_autograds_gradients(config):
    torch.manual_seed(5)
    module = QuantizedLinear.from_linear(torch.nn.Linear(96, 24), config, kernel="torch")
    tuned = TunedLinear(module)
    with torch.no_grad():
        tuned.log_scale.add_(0.05 * torch.randn_like(tuned.log_scale))
    x = torch.randn(3, 5, 96, requires_grad=True)
    probe = torch.randn(3, 5, 24)
    grads = []
    for run in (lambda: tuned(x), lambda: torch.nn.functional.linear(x, tuned.weight()) + tuned.bias):
        x.grad = None
        for p in tuned.trainable():
            p.grad = None
        y = run()
        (y * probe).sum().backward()
        grads.append([x.grad.clone(), *(p.grad.clone() for p in tuned.trainable())])
    assert len(grads[0]) == (3 if tuned.levels is not None else 2)
    for ours, autograd in zip(*grads, strict=True):
        assert torch.allclose(ours, autograd, rtol=1e-4, atol=1e-5)
