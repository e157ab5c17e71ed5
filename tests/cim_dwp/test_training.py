"""DWP training on real digits: weights follow prediction flips, reductions to the baselines, seeds."""

from __future__ import annotations

import pytest
import torch

from codesign.cim.dwp.data import DataSplits, Split, load_dataset
from codesign.cim.dwp.training import TrainConfig, perturbed_logits, train
from codesign.cim.dwp.weighting import MEASURES, disagreement, disagreement_weights


def _small() -> DataSplits:
    """The first 384 fit samples of digits (3 mini-batches of 128): enough steps, little time."""
    data = load_dataset("digits")
    return DataSplits("digits", Split(data.fit.x[:384], data.fit.y[:384]), data.val, data.test, data.n_classes)


def _run(config: TrainConfig) -> dict[str, torch.Tensor]:
    return _params(train(config, data=_small()))


def _params(result) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in result.model.state_dict().items()}


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_samples_whose_predictions_flip_get_more_weight():
    data = _small()
    model = train(TrainConfig(method="standard", epochs=6), data=data).model
    config = TrainConfig(method="dwp", k=8, sigma=0.7)
    with torch.no_grad():
        logits = perturbed_logits(model, data.val.x, config, step_seed=123)
        clean = model(data.val.x)
    votes = logits.argmax(-1)
    flips = (votes != votes[0]).any(0)
    assert int(flips.sum()) >= 10 and int((~flips).sum()) >= 10  # enough of both kinds to compare
    for measure in MEASURES:
        w = disagreement_weights(disagreement(measure, logits, clean))
        assert float(w[flips].mean()) > 1.5 * float(w[~flips].mean()), measure


def test_zero_noise_dwp_is_standard_training():
    base = TrainConfig(method="standard", epochs=1, batch_size=128)
    standard = _run(base)
    for measure in ("kl", "mi"):
        dwp = _run(base.replace(method="dwp", sigma=0.0, k=3, measure=measure))
        assert _max_diff(standard, dwp) < 1e-5, measure
    noisy = _run(base.replace(method="dwp", sigma=0.5, k=3))
    assert _max_diff(standard, noisy) > 1e-3  # noise does change training


def test_one_realization_dwp_is_noise_injection():
    base = TrainConfig(method="noise", epochs=1, batch_size=128, k=1, sigma=0.5)
    noise = _run(base)
    for measure in MEASURES:
        dwp = _run(base.replace(method="dwp", measure=measure))
        assert all(torch.equal(noise[k], dwp[k]) for k in noise), measure
    weighted = _run(base.replace(method="dwp", k=3))
    noise_k3 = _run(base.replace(k=3))
    assert _max_diff(weighted, noise_k3) > 1e-4  # with K > 1 the weights matter


def test_same_seed_same_weights():
    config = TrainConfig(method="dwp", model="cnn", epochs=1, batch_size=128, k=2)
    a, b = _run(config), _run(config)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = _run(config.replace(seed=1))
    assert _max_diff(a, c) > 1e-3


def test_torch_is_the_former_name_of_the_mismatch_source():
    a = _run(TrainConfig(method="noise", epochs=1, noise_source="torch"))
    b = _run(TrainConfig(method="noise", epochs=1, noise_source="mismatch"))
    assert _max_diff(a, b) == 0.0


def test_hardware_aware_training_through_pcm_chips_learns_and_differs_from_mismatch():
    start = _run(TrainConfig(method="standard", epochs=1, lr=1e-12))
    pcm = train(TrainConfig(method="noise", epochs=3, noise_source="pcm", k=2, train_t_seconds=86400.0), data=_small())
    assert pcm.history[-1]["loss"] < pcm.history[0]["loss"]
    assert _max_diff(_params(pcm), start) > 1e-3
    assert _max_diff(_params(pcm), _run(TrainConfig(method="noise", epochs=3, k=2))) > 1e-4


def test_dwp_draws_its_k_realizations_from_the_chip_model_too():
    data = _small()
    model = train(TrainConfig(method="standard", epochs=2), data=data).model
    config = TrainConfig(method="dwp", k=3, noise_source="rram")
    with torch.no_grad():
        logits = perturbed_logits(model, data.val.x[:64], config, step_seed=9)
    assert logits.shape == (3, 64, data.n_classes)
    assert not torch.equal(logits[0], logits[1])  # three different chips
    dwp = _run(TrainConfig(method="dwp", epochs=1, k=2, noise_source="rram"))
    noise = _run(TrainConfig(method="noise", epochs=1, k=2, noise_source="rram"))
    assert _max_diff(dwp, noise) > 1e-6  # the disagreement weights change the steps


def test_chips_drawn_weight_by_weight_and_programmed_chips_both_train():
    data = _small()
    for sampling in ("weights", "devices"):
        config = TrainConfig(method="noise", epochs=2, noise_source="pcm", k=2, train_t_seconds=86400.0,
                             chip_sampling=sampling)
        result = train(config, data=data)
        assert result.history[-1]["loss"] < result.history[0]["loss"], sampling
    with pytest.raises(ValueError, match="chip_sampling"):
        TrainConfig(chip_sampling="tiles")
    saved = TrainConfig(noise_source="pcm").to_dict()
    del saved["chip_sampling"]  # a checkpoint from before the field
    assert TrainConfig.from_dict(saved).chip_sampling == "devices"
