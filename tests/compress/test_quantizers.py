"""k-means, integer and VQ quantizers: known optima, monotone error, stored formats, bad input."""

import pytest
import torch

from codesign.compress import (
    IntConfig,
    KMeansConfig,
    VQConfig,
    lloyd_max,
    quantize_int,
    quantize_kmeans,
    quantize_vq,
    relative_error,
    vq_training_weight,
)
from codesign.compress.integer import uniform_codebook


def heavy_tailed(n=32, k=256, seed=0):
    gen = torch.Generator().manual_seed(seed)
    base = torch.distributions.StudentT(4.0).sample((n, k)) if seed else torch.randn(n, k, generator=gen)
    return (base * torch.rand(n, 1, generator=gen) + 0.01).contiguous()


def test_lloyd_max_finds_the_gaussian_optimum():
    # Lloyd–Max levels of a unit Gaussian (Max, 1960): 2 bits ±0.4528, ±1.510; 1 bit ±0.7979
    gen = torch.Generator().manual_seed(0)
    samples = torch.randn(1, 200_000, generator=gen)
    two = lloyd_max(samples, 4, iterations=100)[0]
    assert torch.allclose(two, torch.tensor([-1.510, -0.4528, 0.4528, 1.510]), atol=0.02)
    one = lloyd_max(samples, 2, iterations=100)[0]
    assert torch.allclose(one, torch.tensor([-0.7979, 0.7979]), atol=0.01)


def test_lloyd_max_is_vectorized_over_groups():
    gen = torch.Generator().manual_seed(1)
    values = torch.randn(3, 2000, generator=gen) * torch.tensor([[1.0], [10.0], [0.1]])
    levels = lloyd_max(values, 4)
    single = torch.stack([lloyd_max(values[i : i + 1], 4)[0] for i in range(3)])
    assert torch.allclose(levels, single)
    assert torch.all(levels[:, 1:] >= levels[:, :-1])


@pytest.mark.parametrize("codebook", ["layer", "group"])
@pytest.mark.parametrize("seed", [0, 1])
def test_kmeans_error_never_grows_with_bits(codebook, seed):
    w = heavy_tailed(seed=seed)
    errors = [relative_error(w, quantize_kmeans(w, KMeansConfig(bits=b, codebook=codebook)).dequantize())
              for b in range(1, 9)]
    assert all(b <= a for a, b in zip(errors, errors[1:])), errors
    assert errors[3] < 0.12  # 4 bits


def test_group_codebooks_never_worse_than_a_layer_codebook():
    w = heavy_tailed(seed=1)
    for bits in (1, 2, 3, 4):
        layer = relative_error(w, quantize_kmeans(w, KMeansConfig(bits=bits)).dequantize())
        group = relative_error(w, quantize_kmeans(w, KMeansConfig(bits=bits, codebook="group")).dequantize())
        assert group <= layer * (1 + 1e-3)


def test_kmeans_stored_format_decodes_by_its_formula():
    w = heavy_tailed()
    for zero_point in (False, True):
        q = quantize_kmeans(w, KMeansConfig(bits=3, group_size=32, zero_point=zero_point))
        codes = q.codes().long()
        levels = q.codebook.float()[codes]
        if q.zeros is not None:
            levels = levels - q.zeros.float().repeat_interleave(32, dim=1)
        manual = levels * q.scales.float().repeat_interleave(32, dim=1)
        assert torch.equal(q.dequantize(), manual)
        assert q.packed.shape == (32, 256 * 3 // 8) and q.scales.dtype == torch.float16
        zeros = 0 if q.zeros is None else q.zeros.numel()
        assert q.nbytes == q.packed.numel() + 2 * q.scales.numel() + 2 * 8 + zeros
    assert q.zeros is not None  # heavy tails at 3 bits: the zero-point grid has the lower error


def test_kmeans_beats_integer_at_equal_bits_on_heavy_tails():
    w = heavy_tailed(seed=1)
    for bits in (2, 3, 4):
        km = relative_error(w, quantize_kmeans(w, KMeansConfig(bits=bits)).dequantize())
        it = relative_error(w, quantize_int(w, IntConfig(bits=bits)).dequantize())
        assert km < it, (bits, km, it)


def test_integer_codes_are_brevitas_rounding():
    w = heavy_tailed()
    q = quantize_int(w, IntConfig(bits=4, group_size=64, clip_ratios=(1.0,)))
    step = q.scales.float() / 7.5
    expected = torch.clamp(torch.round(w.view(32, 4, 64) / step[..., None] + 7.5), 0, 15)
    assert torch.equal(q.codes().view(32, 4, 64).float(), expected)
    assert torch.equal(q.codebook.float(), uniform_codebook(4).half().float())


def test_integer_error_never_grows_with_bits():
    w = heavy_tailed(seed=1)
    errors = [relative_error(w, quantize_int(w, IntConfig(bits=b)).dequantize()) for b in range(1, 9)]
    assert all(b <= a for a, b in zip(errors, errors[1:])), errors


def test_clip_search_never_hurts():
    w = heavy_tailed(seed=1)
    plain = relative_error(w, quantize_int(w, IntConfig(bits=3, clip_ratios=(1.0,))).dequantize())
    searched = relative_error(w, quantize_int(w, IntConfig(bits=3)).dequantize())
    assert searched <= plain


def test_vq_starts_at_two_bit_integer_and_only_improves():
    w = heavy_tailed(n=32, k=128)
    int2 = relative_error(w, quantize_int(w, IntConfig(bits=2, clip_ratios=(1.0,))).dequantize())
    errors = [relative_error(w, quantize_vq(w, VQConfig(iterations=i)).dequantize()) for i in (0, 1, 3, 8)]
    assert errors[0] == pytest.approx(int2, rel=1e-3)
    assert all(b <= a + 1e-6 for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.8 * errors[0]


def test_vq_exploits_correlated_weights():
    gen = torch.Generator().manual_seed(3)
    base = torch.randn(64, 256, generator=gen)
    w = (base + 0.9 * base.roll(1, dims=1)).contiguous()  # neighbours inside a vector are correlated
    vq = relative_error(w, quantize_vq(w).dequantize())
    km = relative_error(w, quantize_kmeans(w, KMeansConfig(bits=2)).dequantize())
    assert vq < km


def test_vq_training_form_needs_no_lookup_and_is_differentiable():
    w = heavy_tailed(n=16, k=64)
    q = quantize_vq(w, VQConfig(iterations=2))
    basis = q.basis.clone().requires_grad_(True)
    offset = q.offset.clone().requires_grad_(True)
    scales = q.scales.float().requires_grad_(True)
    rebuilt = vq_training_weight(q.signs(), basis, offset, scales, q.group_size)
    assert torch.allclose(rebuilt, q.dequantize(), atol=1e-6)
    ((rebuilt - w) ** 2).sum().backward()
    assert basis.grad.abs().sum() > 0 and offset.grad is not None and scales.grad.abs().sum() > 0
    assert q.nbytes == 16 * 16 + 2 * 16 + 4 * 32 + 4 * 4


@pytest.mark.parametrize("quantize,config", [
    (quantize_kmeans, KMeansConfig()), (quantize_int, IntConfig()), (quantize_vq, VQConfig()),
])
def test_bad_weights(quantize, config):
    w = torch.randn(8, 128)
    with pytest.raises(ValueError, match="2-D"):
        quantize(torch.randn(128), config)
    with pytest.raises(ValueError, match="not a floating-point type"):
        quantize(torch.ones(8, 128, dtype=torch.int32), config)
    with pytest.raises(ValueError, match="contiguous"):
        quantize(torch.randn(128, 8).T, config)
    with pytest.raises(ValueError, match="does not divide the row length 96"):
        quantize(torch.randn(8, 96), config)
    bad = w.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        quantize(bad, config)


def test_bad_configs():
    for bits in (0, 9, 3.5):
        with pytest.raises(ValueError, match="bits must be an integer in 1..8"):
            KMeansConfig(bits=bits)
        with pytest.raises(ValueError, match="bits must be an integer in 1..8"):
            IntConfig(bits=bits)
    with pytest.raises(ValueError, match="codebook must be"):
        KMeansConfig(codebook="row")
    with pytest.raises(ValueError, match="multiple of 8"):
        quantize_kmeans(torch.randn(4, 60), KMeansConfig(group_size=12))
    with pytest.raises(ValueError, match="clip_ratios"):
        IntConfig(clip_ratios=(1.5,))
