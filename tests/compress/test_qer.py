"""Q + L R: never worse than Q alone, SRR finds planted structure, the rank criterion, bad input."""

import pytest
import torch

from codesign.compress import (
    IntConfig,
    KMeansConfig,
    QERConfig,
    activation_covariance,
    activation_error,
    choose_preserved_rank,
    quantize,
    relative_error,
)


def planted(n=96, k=128, rank=6, seed=0):
    """A weight with a strong rank-`rank` part plus noise, and anisotropic calibration activations."""
    gen = torch.Generator().manual_seed(seed)
    low = torch.randn(n, rank, generator=gen) @ torch.randn(rank, k, generator=gen)
    w = (0.6 * low + 0.3 * torch.randn(n, k, generator=gen)).contiguous()
    x = torch.randn(2048, k, generator=gen) * torch.linspace(0.2, 3.0, k)
    return w, activation_covariance(x)


@pytest.mark.parametrize("base", [KMeansConfig(bits=2), IntConfig(bits=3)])
@pytest.mark.parametrize("rank", [1, 8])
def test_qer_never_worse_than_q_alone(base, rank):
    w, cov = planted()
    q = quantize(w, base).dequantize()
    plain = quantize(w, QERConfig(method="plain", rank=rank, base=base)).dequantize()
    assert relative_error(w, plain) < relative_error(w, q)
    for method in ("scaled", "srr"):
        for scaling in ("full", "diag"):
            cfg = QERConfig(method=method, rank=rank, base=base, scaling=scaling, damping=1e-6)
            approx = quantize(w, cfg, cov).dequantize()
            assert activation_error(w, approx, cov) < activation_error(w, q, cov), (method, scaling)


def test_scaled_beats_plain_on_the_output_error():
    w, cov = planted()
    base = KMeansConfig(bits=2)
    plain = quantize(w, QERConfig(method="plain", rank=8, base=base)).dequantize()
    scaled = quantize(w, QERConfig(method="scaled", rank=8, base=base), cov).dequantize()
    assert activation_error(w, scaled, cov) < activation_error(w, plain, cov)


def test_srr_preserves_the_planted_subspace():
    w, cov = planted(rank=6)
    base = KMeansConfig(bits=2)
    srr = quantize(w, QERConfig(method="srr", rank=12, base=base), cov)
    assert srr.preserved_rank == 6
    scaled = quantize(w, QERConfig(method="scaled", rank=12, base=base), cov)
    assert activation_error(w, srr.dequantize(), cov) < 0.6 * activation_error(w, scaled.dequantize(), cov)
    assert srr.left.shape == (96, 12) and srr.right.shape == (12, 128)


def test_srr_guard_falls_back_to_k_zero_on_unstructured_weights():
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(64, 128, generator=gen)
    cov = activation_covariance(torch.randn(1024, 128, generator=gen))
    base = KMeansConfig(bits=3)
    srr = quantize(w, QERConfig(method="srr", rank=8, base=base), cov)
    scaled = quantize(w, QERConfig(method="scaled", rank=8, base=base), cov)
    assert activation_error(w, srr.dequantize(), cov) <= activation_error(w, scaled.dequantize(), cov) + 1e-9


def test_preserved_rank_criterion():
    # the error spectrum decays, so its top directions are worth more than a unit weight direction
    error = torch.linspace(3.0, 0.5, 64)
    sharp = torch.cat([torch.full((5,), 50.0), torch.ones(59)])
    assert choose_preserved_rank(sharp, error, rank=16) == 5
    assert choose_preserved_rank(torch.ones(64), error, rank=16) == 0
    # a flat error spectrum spreads reconstruction thin: every unit weight direction kept is worth more
    assert choose_preserved_rank(sharp, torch.ones(64), rank=16) == 16


def test_explicit_preserved_rank_is_used():
    w, cov = planted()
    srr = quantize(w, QERConfig(method="srr", rank=8, base=KMeansConfig(bits=2), preserved_rank=3), cov)
    assert srr.preserved_rank == 3 and srr.rank == 8


def test_bad_qer_input():
    w, cov = planted()
    with pytest.raises(ValueError, match="larger than the layer allows"):
        quantize(w, QERConfig(method="plain", rank=97))
    with pytest.raises(ValueError, match="needs calibration activations"):
        quantize(w, QERConfig(method="srr", rank=4))
    with pytest.raises(ValueError, match=r"covariance must be \[128, 128\]"):
        quantize(w, QERConfig(method="scaled", rank=4), cov[:64, :64])
    with pytest.raises(ValueError, match="unknown QER method"):
        QERConfig(method="lora")
    with pytest.raises(ValueError, match="preserved_rank 9 must lie in 0..rank=8"):
        QERConfig(rank=8, preserved_rank=9)
    with pytest.raises(ValueError, match="rank must be a non-negative integer"):
        QERConfig(rank=-1)
