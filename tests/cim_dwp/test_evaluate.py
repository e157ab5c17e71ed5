"""The sweeps use the CIM backend's chips; training noise matches the simulator's mismatch model."""

from __future__ import annotations

import pytest
import torch

from codesign.cim.config import CIMConfig, MismatchConfig, PCMConfig
from codesign.cim.devices.mismatch import mismatch_weights
from codesign.cim.dwp.data import Split, load_dataset
from codesign.cim.dwp.evaluate import _aging_accuracies, chip_accuracies
from codesign.cim.dwp.models import build_model
from codesign.cim.dwp.training import TrainConfig, perturbed_logits
from codesign.cim.perturb import sample_weights


def test_aging_sweep_gives_evaluate_chips_chips():
    torch.manual_seed(0)
    model = build_model("cnn", (1, 8, 8), 10)
    full = load_dataset("digits").test
    test = Split(full.x[:60], full.y[:60])
    config = CIMConfig(device=PCMConfig(read_noise_scale=0.0))  # no read noise: every path reads the same chips
    aged = _aging_accuracies(model, config, test, n_chips=2, seed=5, times=[1.0, 3.15e7], chips_per_pass=1)
    direct = torch.stack([chip_accuracies(model, config, test, 2, seed=5, t_seconds=t) for t in (1.0, 3.15e7)])
    assert torch.equal(aged, direct)


def test_torch_noise_has_the_simulator_distribution():
    torch.manual_seed(0)
    w = torch.randn(64, 96)
    sim = sample_weights(w, CIMConfig(device=MismatchConfig(sigma=0.5)), 16, seed=3, read_noise=False)
    eps = torch.randn((16, 64, 96), generator=torch.Generator().manual_seed(3))  # what the training path draws
    drawn = mismatch_weights(w, MismatchConfig(sigma=0.5), eps)
    for realized in (sim, drawn):
        ratio = (realized.detach() / w).flatten()
        assert float(ratio.mean()) == pytest.approx(1.0, abs=0.01)
        assert float(ratio.std()) == pytest.approx(0.5, abs=0.01)
    model = torch.nn.Sequential(torch.nn.Linear(96, 64, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(w)
    x = torch.rand(5, 96)
    logits = perturbed_logits(model, x, TrainConfig(method="noise", k=16, sigma=0.5), step_seed=3)
    assert torch.allclose(logits, torch.einsum("kof,bf->kbo", drawn, x), atol=1e-4)
