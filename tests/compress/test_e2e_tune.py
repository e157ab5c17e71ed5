"""End-to-end distillation of stored scales and levels: codes and format kept, the holdout KL never raised."""

import copy

import pytest
import torch

from codesign.compress.e2e_tune import EndToEndConfig, tune_end_to_end
from codesign.compress.formats import unpack_codes
from codesign.compress.model import MethodSpec, compress_linears
from tests.compress.next_token import mean_kl, windows

transformers = pytest.importorskip("transformers")


def tiny_llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return transformers.LlamaForCausalLM(config).eval()


def quantized(model, method="kmeans"):
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and n != "lm_head"]
    replacements, _ = compress_linears(model, MethodSpec(method, 2, group_size=32), None, names)
    return replacements


@pytest.mark.parametrize("method", ["kmeans", "int-asym"])
def test_tuning_keeps_codes_and_lowers_the_holdout_kl(method):
    model = tiny_llama()
    replacements = quantized(model, method)
    before = copy.deepcopy(replacements)
    data = windows()
    result = tune_end_to_end(model, replacements, data, EndToEndConfig(epochs=4, lr=2e-2, holdout=0.25))
    holdout = data[-2:]
    assert result["holdout_after"] < result["holdout_before"]
    # what is stored (float16 scales) scores below the untuned model on the holdout windows too
    assert mean_kl(model, replacements, holdout) < mean_kl(model, before, holdout)
    for name, module in replacements.items():
        old, new = before[name].qweight, module.qweight
        assert new.scales.dtype == torch.float16 and new.scales.shape == old.scales.shape
        k = old.shape[1]
        codes_old, codes_new = unpack_codes(old.packed, old.bits, k).long(), unpack_codes(new.packed, new.bits, k).long()
        # tuned k-means levels may be re-sorted with their codes: the same weights still share a level
        pairs = torch.unique(codes_old * 256 + codes_new)
        assert pairs.numel() == torch.unique(codes_old).numel() == torch.unique(codes_new).numel()
        if old.codebook.dim() != 1 or old.zeros is not None:
            assert torch.equal(codes_old, codes_new)
    assert any(not torch.equal(before[n].qweight.scales, m.qweight.scales) for n, m in replacements.items())


def test_no_improvement_leaves_every_stored_value_untouched():
    model = tiny_llama()
    replacements = quantized(model)
    before = copy.deepcopy(replacements)
    # Adam's first steps are about lr in size: 1e-12 is below float32's resolution of the log-scales and levels
    result = tune_end_to_end(model, replacements, windows(4), EndToEndConfig(epochs=1, lr=1e-12, evaluations=1))
    assert result["holdout_after"] == result["holdout_before"]
    for name, module in replacements.items():
        for buffer in ("scales", "codebook", "packed"):
            assert torch.equal(getattr(module.qweight, buffer), getattr(before[name].qweight, buffer))


def test_the_original_model_is_left_as_it_was():
    model = tiny_llama()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    tune_end_to_end(model, quantized(model), windows(4), EndToEndConfig(epochs=1, lr=1e-2))
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert all(p.requires_grad for p in model.parameters())


@pytest.mark.parametrize("field, value, message", [
    ("epochs", 0, "epochs must be a positive integer"),
    ("evaluations", True, "evaluations must be a positive integer"),
    ("lr", 0.0, "learning rate must lie in"),
    ("holdout", 1.0, "holdout must lie in"),
])
def test_bad_settings_are_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        EndToEndConfig(**{field: value})


def test_one_window_is_refused():
    model = tiny_llama()
    with pytest.raises(ValueError, match="at least 2 calibration windows"):
        tune_end_to_end(model, quantized(model), windows(1))


def test_quantize_tunes_in_place_on_the_calibration_ids():
    from codesign.compress import ErrorFeedbackConfig, KMeansConfig, quantize_

    config = ErrorFeedbackConfig(base=KMeansConfig(bits=2, group_size=32))
    batch = torch.stack(windows(6))  # [6, 24] token ids, one generator pass: it is read twice
    reference = tiny_llama()
    plain = quantize_(tiny_llama(), config, calibration=iter([batch]), kernel="torch")
    tuned = quantize_(tiny_llama(), config, calibration=iter([batch]), kernel="torch",
                      e2e_tune=EndToEndConfig(epochs=3, lr=2e-2, holdout=0.34))
    holdout = list(batch[-2:])

    def kl(model):
        with torch.no_grad():
            return sum(float((t.exp() * (t - s)).sum(-1).mean()) for t, s in (
                (reference(input_ids=w[None]).logits[0, :-1].log_softmax(-1),
                 model(input_ids=w[None]).logits[0, :-1].log_softmax(-1)) for w in holdout))

    assert kl(tuned) < kl(plain)


@pytest.mark.parametrize("kwargs, message", [
    ({"calibration": None}, "pass calibration= \\(token ids\\)"),
    ({"calibration": [torch.randn(2, 24)]}, "calibration must be \\[B, T\\] or \\[T\\] integer tensors"),
    ({"calibration": [torch.randint(0, 128, (1, 24))]}, "at least 2 calibration sequences"),
])
def test_quantize_refuses_what_it_cannot_distil_on(kwargs, message):
    from codesign.compress import ErrorFeedbackConfig, KMeansConfig, quantize_

    model = tiny_llama()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=message):
        quantize_(model, ErrorFeedbackConfig(base=KMeansConfig(bits=2, group_size=32)), e2e_tune=EndToEndConfig(),
                  **kwargs)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())  # nothing replaced


def test_quantize_refuses_other_grids_and_models():
    from codesign.compress import VQConfig, quantize_

    with pytest.raises(ValueError, match="e2e_tune applies to the scalar grids"):
        quantize_(tiny_llama(), VQConfig(), calibration=[torch.randint(0, 128, (2, 24))], e2e_tune=EndToEndConfig())
    body = torch.nn.Sequential(torch.nn.Linear(32, 32))
    with pytest.raises(ValueError, match="needs a transformers causal LM"):
        from codesign.compress import KMeansConfig

        quantize_(body, KMeansConfig(bits=2, group_size=32), calibration=[torch.zeros(2, 4, dtype=torch.long)],
                  e2e_tune=EndToEndConfig())
