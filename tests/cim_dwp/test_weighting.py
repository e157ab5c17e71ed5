"""Disagreement measures and sample weights on hand-built logits."""

from __future__ import annotations

import pytest
import torch

from codesign.cim.dwp.weighting import MEASURES, disagreement, disagreement_weights


def _logits() -> tuple[torch.Tensor, torch.Tensor]:
    """K=8 realizations, 3 samples: stable, flipping half the time, flipping once."""
    k = 8
    logits = torch.zeros(k, 3, 4)
    logits[:, 0, 0] = 3.0  # every realization: class 0, same confidence
    logits[:, 1, 1] = 3.0
    logits[k // 2 :, 1, 1] = 0.0
    logits[k // 2 :, 1, 2] = 3.0  # half the realizations vote 2 instead of 1
    logits[:, 2, 3] = 3.0
    logits[0, 2, 3] = 0.0
    logits[0, 2, 0] = 3.0  # one realization votes 0 instead of 3
    clean = torch.tensor([[3.0, 0, 0, 0], [0, 3.0, 0, 0], [0, 0, 0, 3.0]])
    return logits, clean


@pytest.mark.parametrize("measure", list(MEASURES))
def test_flipping_samples_get_more_weight(measure):
    logits, clean = _logits()
    d = disagreement(measure, logits, clean)
    assert d[0] == 0 and d[1] > d[2] > 0
    w = disagreement_weights(d, strength=0.8, weight_max=4.0)
    assert not w.requires_grad
    assert w[1] > w[2] > w[0]
    assert float(w.mean()) == pytest.approx(1.0, abs=1e-6)
    assert float(w.min()) == pytest.approx(0.2, abs=1e-6)  # 1 - strength for the stable sample


def test_vote_disagreement_values():
    logits, _ = _logits()
    assert disagreement("vote", logits).tolist() == [0.0, 0.5, 0.125]


def test_no_disagreement_gives_uniform_weights():
    logits = torch.randn(1, 5, 3).expand(6, 5, 3).clone()  # identical realizations
    for measure in MEASURES:
        d = disagreement(measure, logits, logits[0])
        assert torch.equal(disagreement_weights(d), torch.ones(5))
    single = torch.randn(1, 5, 3)  # one realization: no diversity, whatever the clean logits
    assert torch.equal(disagreement("kl", single, torch.randn(5, 3)), torch.zeros(5))


def test_clip_keeps_mean_one_and_order():
    d = torch.tensor([100.0] + [0.0] * 9 + [1.0])
    w = disagreement_weights(d, strength=1.0, weight_max=3.0)
    assert float(w.max()) == pytest.approx(3.0, abs=1e-5)
    assert float(w.mean()) == pytest.approx(1.0, abs=1e-6)
    assert w[0] > w[-1] > w[1] >= 0
    with pytest.raises(ValueError, match="weight_max"):
        disagreement_weights(d, weight_max=0.5)
    with pytest.raises(ValueError, match="unknown disagreement measure 'x'"):
        disagreement("x", torch.zeros(2, 1, 3))
