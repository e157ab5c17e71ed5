"""QAT: quantized forward, STE and exact gradients, refits, WinQ resets, and loss that falls on MiniLM."""

import pytest
import torch

from codesign.compress.qat import QATConfig, QATLinear, distillation_loss, qat_model, train_qat
from codesign.llm import missing_llm_packages


@pytest.fixture
def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(128, 32)


@pytest.mark.parametrize("quantizer", ["kmeans", "int"])
def test_scalar_forward_is_on_the_grid_and_ste_reaches_weight(linear, quantizer):
    q = QATLinear(linear, QATConfig(quantizer, bits=2)).eval()
    w = q.quantized().detach()
    scale = w.abs().view(32, 2, 64).amax(dim=2, keepdim=True)
    # every group holds at most 4 distinct values (2 bits)
    assert all(torch.unique((g * 1e5).round()).numel() <= 4 for g in w.view(-1, 64))
    assert float(scale.min()) > 0
    x = torch.randn(8, 128)
    q(x).sum().backward()
    assert q.weight.grad is not None and float(q.weight.grad.abs().sum()) > 0


def test_vq_gradients_reach_affine_map_and_scales(linear):
    q = QATLinear(linear, QATConfig("vq", bits=2))
    q(torch.randn(8, 128)).pow(2).sum().backward()
    for p in (q.weight, q.basis, q.offset, q.scales):
        assert p.grad is not None and float(p.grad.abs().sum()) > 0


def test_winq_reset_moves_weights_toward_the_grid(linear):
    q = QATLinear(linear, QATConfig("kmeans", bits=2, winq=True, alpha=0.5))
    before = float((q.weight - q.quantized()).detach().norm())
    q.winq_reset()
    assert float((q.weight - q.quantized()).detach().norm()) < before


def test_kmeans_refit_lowers_weight_error(linear):
    q = QATLinear(linear, QATConfig("kmeans", bits=2))
    with torch.no_grad():
        q.weight.mul_(torch.linspace(0.2, 3, 128))  # drift the weights away from the fitted centroids
    before = float((q.weight - q.quantized()).detach().norm())
    q.refit()
    assert float((q.weight - q.quantized()).detach().norm()) < before


@pytest.mark.parametrize("config", [QATConfig("kmeans", 2, winq=True), QATConfig("int", 3, refit_every=0),
                                    QATConfig("vq", 2)])
def test_export_stores_exactly_the_weights_the_trained_layer_computes_with(linear, config):
    q = QATLinear(linear, config)
    x, target = torch.randn(32, 128), torch.randn(32, 32)
    train_qat(q, lambda m, i: (m(x) - target).pow(2).mean(), 12, lr=1e-2)  # refits / resets / re-encodings included
    exported = q.export()
    assert torch.equal(exported.qweight.dequantize(), q.quantized().detach())  # float for float, no tolerance
    assert exported.qweight.nbytes < linear.weight.numel() * 2 / 3
    with torch.no_grad():
        assert torch.allclose(exported(x), q(x), atol=1e-5)


def test_bad_qat_config():
    with pytest.raises(ValueError, match="unknown QAT quantizer 'apot'"):
        QATConfig("apot")
    with pytest.raises(ValueError, match="vq QAT is 2-bit"):
        QATConfig("vq", bits=3)


@pytest.mark.skipif(bool(missing_llm_packages()), reason="the llm extra is not installed")
@pytest.mark.parametrize("config", [QATConfig("kmeans", 2, winq=True, reset_every=4), QATConfig("vq", 2, refit_every=0),
                                    QATConfig("int", 2, refit_every=0)])
def test_qat_on_minilm_lowers_distillation_loss(config):
    from codesign.llm import load_minilm, wiki_sentences

    teacher, tok = load_minilm()
    enc = tok(wiki_sentences("train", 8), padding=True, truncation=True, max_length=32, return_tensors="pt")
    with torch.no_grad():
        target = teacher(**enc).last_hidden_state
    names = [n for n, m in teacher.named_modules() if isinstance(m, torch.nn.Linear) and n.startswith("encoder.layer.0.")]
    student = qat_model(teacher, config, names)
    assert all(isinstance(m, torch.nn.Linear) for n, m in teacher.named_modules() if n in names)  # teacher untouched
    torch.manual_seed(0)
    losses = train_qat(
        student, lambda s, i: distillation_loss(s(**enc).last_hidden_state, target, enc["attention_mask"]), 12, lr=3e-4
    )
    assert sum(losses[-3:]) / 3 < 0.8 * losses[0]
