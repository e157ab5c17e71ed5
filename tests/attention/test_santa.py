"""SANTA: the Triton kernel against the torch reference (interpreter), unbiasedness, error ∝ 1/√S, bad input."""

import math
import warnings

import pytest
import torch

from codesign.attention import (
    decode_attention_reference,
    philox_uniform,
    reset_fallback_warnings,
    santa_attention,
    santa_masked_attention,
    santa_reference,
)
from codesign.kernels.lut_matmul import is_interpreted

interpreted = pytest.mark.skipif(not is_interpreted(), reason="codesign.kernels was imported before TRITON_INTERPRET=1")


def cache(batch=3, hq=4, hkv=2, n=100, dim=32, seed=0, dtype=torch.float16):
    gen = torch.Generator().manual_seed(seed)
    q = (torch.randn(batch, hq, dim, generator=gen) * 2).to(dtype)
    k = torch.randn(batch, hkv, n, dim, generator=gen).to(dtype)
    v = torch.randn(batch, hkv, n, dim, generator=gen).to(dtype)
    return q, k, v


@interpreted
def test_kernel_uniforms_are_the_reference_philox_draws():
    from codesign.kernels.santa import sample_uniforms

    for seed in (1, 2**40 + 17):
        drawn = sample_uniforms(seed, 3000, torch.device("cpu"))
        assert torch.equal(drawn.view(torch.int32), philox_uniform(seed, torch.arange(3000)).view(torch.int32))


@interpreted
@pytest.mark.parametrize("variant", ["multinomial", "stratified", "systematic"])
def test_kernel_draws_the_reference_counts(variant):
    # ragged lengths 100, 37, 1; N = 100 is not a multiple of the 16-key tile nor of the 32-key chunk;
    # GQA with 2 query heads per KV head; one S per sequence
    q, k, v = cache()
    lengths, samples = [100, 37, 1], [16, 8, 1]
    out, counts = santa_attention(q, k, v, samples, lengths, variant=variant, seed=5, kernel="triton",
                                  block_n=16, chunk=32, return_counts=True)
    ref_out, ref_counts = santa_reference(q, k, v, samples, lengths, variant, seed=5, return_counts=True)
    assert torch.equal(counts.sum(-1), torch.tensor(samples)[:, None].expand(3, 4))
    assert torch.equal(counts, ref_counts)
    assert int(counts[1, :, 37:].abs().sum()) == 0 and int(counts[2, :, 1:].abs().sum()) == 0
    # gather-and-add: the output is the count-weighted mean of the sampled value rows
    values = v.repeat_interleave(2, dim=1).double()
    by_counts = torch.einsum("bhn,bhnd->bhd", counts.double(), values) / torch.tensor(samples)[:, None, None]
    assert torch.allclose(out.double(), by_counts, atol=2e-3)
    assert torch.allclose(out.float(), ref_out.float(), atol=2e-3)
    assert torch.allclose(out[2].float(), v[2, :, 0].repeat_interleave(2, dim=0).float())  # one key: exact


def replicated(q, k, v, copies):
    """The same decode problem `copies` times: batch entries draw independent Philox streams."""
    return tuple(t.expand(copies, *t.shape[1:]).contiguous() for t in (q, k, v))


@pytest.mark.parametrize("variant", ["multinomial", "stratified", "systematic"])
def test_unbiased_mean_over_seeds_converges_to_exact_attention(variant):
    q, k, v = cache(batch=1, hq=2, hkv=1, n=64, dim=16, seed=3, dtype=torch.float64)
    exact = decode_attention_reference(q, k, v)[0]
    qs, ks, vs = replicated(q, k, v, 4000)
    draws = santa_reference(qs, ks, vs, 4, variant=variant, seed=11)
    mean = draws.mean(0)
    stderr = draws.std(0) / math.sqrt(draws.shape[0])
    z = (mean - exact) / stderr.clamp(min=1e-12)
    assert float(z.abs().max()) < 4.5, float(z.abs().max())
    assert float((mean - exact).norm() / exact.norm()) < 0.05


def test_error_falls_as_one_over_sqrt_s():
    q, k, v = cache(batch=1, hq=1, hkv=1, n=128, dim=16, seed=4, dtype=torch.float64)
    exact = decode_attention_reference(q, k, v)[0, 0]
    probs = torch.softmax((k[0, 0] @ q[0, 0]) / 4.0, dim=0)
    variance = float((probs[:, None] * (v[0, 0] - exact) ** 2).sum())  # Σ_j p_j ‖v_j - o‖²
    qs, ks, vs = replicated(q, k, v, 2000)
    sizes = [4, 16, 64]
    mse = {}
    for variant in ("multinomial", "stratified", "systematic"):
        mse[variant] = [float(((santa_reference(qs, ks, vs, s, variant=variant, seed=s)[:, 0] - exact) ** 2)
                              .sum(-1).mean()) for s in sizes]
    multinomial = torch.tensor(mse["multinomial"], dtype=torch.float64)
    # theory for independent draws: MSE = variance / S, so RMS error ∝ 1/√S
    ratio = multinomial * torch.tensor(sizes, dtype=torch.float64) / variance
    assert float((ratio - 1).abs().max()) < 0.12, ratio
    slope = torch.linalg.lstsq(torch.stack([torch.log(torch.tensor(sizes, dtype=torch.float64)),
                                            torch.ones(3, dtype=torch.float64)], 1),
                               0.5 * torch.log(multinomial)[:, None]).solution[0, 0]
    assert abs(float(slope) + 0.5) < 0.05, slope
    for variant in ("stratified", "systematic"):
        assert all(a <= b * 1.05 for a, b in zip(mse[variant], mse["multinomial"])), (variant, mse)


def test_masked_rows_are_decode_steps_and_unbiased():
    gen = torch.Generator().manual_seed(0)
    copies = 3000
    q = torch.randn(1, 2, 6, 8, dtype=torch.float64).expand(copies, -1, -1, -1)
    k = torch.randn(1, 1, 6, 8, dtype=torch.float64).expand(copies, -1, -1, -1)
    v = torch.randn(1, 1, 6, 8, dtype=torch.float64).expand(copies, -1, -1, -1)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()[None, None]
    draws = santa_masked_attention(q, k, v, causal, 2, "stratified", gen)
    assert torch.allclose(draws[:, :, 0], v[:, :, 0].expand(copies, 2, 8))  # row 0 sees one key
    probs = torch.softmax((q[0] @ k[0].transpose(-1, -2) / math.sqrt(8)).masked_fill(~causal[0], -torch.inf), -1)
    exact = probs @ v[0]
    z = (draws.mean(0) - exact) / (draws.std(0) / math.sqrt(copies)).clamp(min=1e-12)
    assert float(z.abs().max()) < 4.5
    assert float(draws.std(0)[:, 1:].min()) > 0  # the other rows really are sampled


def test_auto_runs_the_interpreted_kernel_and_falls_back_once_for_float32():
    q, k, v = cache(batch=2, n=20)
    assert torch.equal(santa_attention(q, k, v, 5, seed=2), santa_attention(q, k, v, 5, seed=2, kernel="triton"))
    reset_fallback_warnings()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [santa_attention(q.float(), k.float(), v.float(), 5, seed=2) for _ in range(3)]
    messages = [str(w.message) for w in caught if "torch reference attention" in str(w.message)]
    assert len(messages) == 1 and "dtype torch.float32" in messages[0]
    assert torch.equal(outs[0], santa_reference(q.float(), k.float(), v.float(), 5, seed=2))
    with pytest.raises(ValueError, match="kernel='triton' cannot run here: dtype torch.float32"):
        santa_attention(q.float(), k.float(), v.float(), 5, kernel="triton")


@pytest.mark.parametrize("call,message", [
    (lambda q, k, v: santa_attention(q, k, v, 0, kernel="torch"), r"n_samples S = 0 for sequence 0 must be in 1..n = 20"),
    (lambda q, k, v: santa_attention(q, k, v, 21, kernel="torch"), r"S = 21 .* must be in 1..n = 20"),
    (lambda q, k, v: santa_attention(q, k, v, 6, [20, 5], kernel="torch"), r"S = 6 for sequence 1 must be in 1..n = 5"),
    (lambda q, k, v: santa_attention(q[:, :3], k, v, 4, kernel="torch"), r"query heads 3 is not a multiple of KV heads 2"),
    (lambda q, k, v: santa_attention(q, k, v[:, :, :10], 4, kernel="torch"), r"k and v shapes differ"),
    (lambda q, k, v: santa_attention(q, k, v, 4, [20, 21], kernel="torch"), r"lengths\[1\] = 21 is outside 1..20"),
    (lambda q, k, v: santa_attention(q, k, v, 4, variant="uniform"), r"unknown SANTA variant 'uniform'"),
    (lambda q, k, v: santa_attention(q, k, v, 4, kernel="cuda"), r"unknown kernel 'cuda'"),
])
def test_bad_input_is_a_clear_error(call, message):
    q, k, v = cache(batch=2, n=20)
    with pytest.raises(ValueError, match=message):
        call(q, k, v)


@interpreted
def test_flash_decoding_baseline_matches_exact_attention():
    from codesign.kernels.santa_flashdecode import flash_decode

    q, k, v = cache()
    lengths = torch.tensor([100, 37, 1], dtype=torch.int32)
    out = flash_decode(q, k, v, lengths, scale=32**-0.5, block_n=16, chunk=32)
    exact = decode_attention_reference(q, k, v, lengths)
    assert float((out.float() - exact.float()).norm() / exact.float().norm()) < 2e-3
