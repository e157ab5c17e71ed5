"""Low-rank KV cache: projections, rank allocation, latent quantization, RoPE handling, the kernel vs the reference."""

import pytest
import torch

from codesign.attention import (
    SecondMoment,
    allocate_ranks,
    decode_attention_reference,
    dequantize_latent,
    encode_kv,
    fit_projection,
    lowrank_decode_attention,
    lowrank_decode_reference,
    quantize_latent,
    rotate,
)
from codesign.kernels.lut_matmul import is_interpreted

interpreted = pytest.mark.skipif(not is_interpreted(), reason="codesign.kernels was imported before TRITON_INTERPRET=1")
B, HQ, HKV, N, D = 2, 4, 2, 50, 32
LENGTHS = [50, 23]  # ragged; 50 is not a multiple of the 16-key tile


def activations(seed=0):
    """Keys and values with a decaying spectrum, rotated keys at positions far from 0, a query, inv_freq."""
    gen = torch.Generator().manual_seed(seed)
    mix = torch.randn(HKV, D, D, generator=gen) * torch.logspace(0, -1.5, D)[None, None, :]
    keys = torch.einsum("bhnd,hed->bhne", torch.randn(B, HKV, N, D, generator=gen), mix)
    values = torch.einsum("bhnd,hed->bhne", torch.randn(B, HKV, N, D, generator=gen), mix)
    positions = torch.arange(N)[None].repeat(B, 1) + torch.tensor([[3], [4000]])
    inv_freq = 1.0 / (10000 ** (torch.arange(0, D, 2).float() / D))
    q = torch.randn(B, HQ, D, generator=gen)
    return keys, values, positions, inv_freq, q


def moments(x):
    m = SecondMoment()
    m.add(x)
    return m.value()


def test_allocate_ranks_takes_the_largest_normalised_eigenvalues():
    flat = torch.tensor([1.0, 1.0, 1.0, 1.0])  # every channel 25 % of its spectrum
    steep = torch.tensor([8.0, 1.0, 0.5, 0.5])  # 80 %, 10 %, 5 %, 5 %
    assert allocate_ranks([flat, steep], 0.5) == [3, 1]  # min 1 each, then 25, 25 % > 10 %
    assert allocate_ranks([flat, steep], 0.75) == [4, 2]
    assert allocate_ranks([flat, steep], 1.0) == [4, 4]
    assert allocate_ranks([steep, steep], 0.25) == [1, 1]
    with pytest.raises(ValueError, match="keep fraction 0.1 leaves 1 channels, fewer than min_rank 1 for each of 2"):
        allocate_ranks([flat, steep], 0.1)
    with pytest.raises(ValueError, match="keep fraction must be in"):
        allocate_ranks([flat], 0.0)


def test_projection_error_is_the_discarded_energy():
    keys, values, *_ = activations()
    mk, mv = moments(keys), moments(values)
    full = fit_projection(mk, mv, [D, D], [D, D])
    latent = torch.einsum("bhnd,hdr->bhnr", keys.double(), full.key_down.double())
    assert torch.allclose(torch.einsum("bhnr,hrd->bhnd", latent, full.key_up.double()), keys.double(), atol=1e-4)
    # whitened latent: unit second moment per channel, except those below the 1e-6 λ_max amplification floor
    eigenvalues = torch.linalg.eigvalsh(mk).flip(-1)
    expected = eigenvalues / torch.maximum(eigenvalues, 1e-6 * eigenvalues[:, :1])
    assert float(expected.min()) < 0.5  # this data does hit the floor
    assert torch.allclose(moments(latent.float()).diagonal(dim1=-2, dim2=-1), expected, atol=1e-3)
    rank = 10
    part = fit_projection(mk, mv, [rank, rank - 3], [rank, rank])
    latent = torch.einsum("bhnd,hdr->bhnr", keys.double(), part.key_down.double())
    error = ((torch.einsum("bhnr,hrd->bhnd", latent, part.key_up.double()) - keys.double()) ** 2).sum(-1).mean((0, 2))
    assert torch.allclose(error, torch.stack([eigenvalues[0, rank:].sum(), eigenvalues[1, rank - 3:].sum()]), rtol=1e-3)


@pytest.mark.parametrize("scale_bits", [32, 16])
@pytest.mark.parametrize("bits,qmax", [(8, 127), (4, 7)])
def test_latent_quantization_round_trip(bits, qmax, scale_bits):
    latent = torch.randn(3, 2, 7, 13) * torch.tensor([1.0] * 8 + [0.01] * 5)  # odd width: int4 pads a nibble
    codes, scale = quantize_latent(latent, bits, group_size=8, scale_bits=scale_bits)
    assert codes.shape[-1] == (13 if bits == 8 else 7) and scale.shape == (3, 2, 7, 2)
    assert scale.dtype == (torch.float32 if scale_bits == 32 else torch.float16)
    back = dequantize_latent(codes, scale, bits, 13, group_size=8)
    steps = scale.float().repeat_interleave(8, dim=-1)[..., :13]
    assert float(((back - latent).abs() / steps).max()) <= 0.5 + 1e-5
    levels = torch.round(back / steps).abs()
    assert torch.equal(levels[..., :8].amax(-1), torch.full((3, 2, 7), float(qmax)))
    assert torch.equal(levels[..., 8:].amax(-1), torch.full((3, 2, 7), float(qmax)))  # small group, own scale


def test_rope_handling_is_exact_at_full_rank_and_the_naive_shortcut_is_not():
    keys, values, positions, inv_freq, q = activations()
    rotated = rotate(keys, positions[:, None, :], inv_freq)
    exact = decode_attention_reference(q, rotated, values, LENGTHS)
    pre = fit_projection(moments(keys), moments(values), [D, D], [D, D], "pre")
    post = fit_projection(moments(rotated), moments(values), [D, D], [D, D], "post")
    out_pre = lowrank_decode_reference(q, encode_kv(pre, keys, values, positions), pre, inv_freq, LENGTHS)
    out_post = lowrank_decode_reference(q, encode_kv(post, rotated, values, positions), post, None, LENGTHS)
    for out in (out_pre, out_post):
        assert float((out - exact).norm() / exact.norm()) < 2e-3
    # projecting pre-RoPE keys and scoring q·(reconstruction) without rotating it by its position is wrong
    naive = decode_attention_reference(q, keys, values, LENGTHS)
    assert float((naive - exact).norm() / exact.norm()) > 0.1


@interpreted
@pytest.mark.parametrize("rope_mode,scale_bits", [("pre", 32), ("post", 32), ("pre", 16)])
@pytest.mark.parametrize("bits", [16, 8, 4])
def test_kernel_matches_reference(rope_mode, bits, scale_bits):
    keys, values, positions, inv_freq, q = activations(seed=1)
    stored = keys if rope_mode == "pre" else rotate(keys, positions[:, None, :], inv_freq)
    projection = fit_projection(moments(stored), moments(values), [12, 9], [10, 14], rope_mode)
    # ranks 9..14: partial groups
    latent = encode_kv(projection, stored, values, positions, bits, group_size=8, scale_bits=scale_bits)
    freq = inv_freq if rope_mode == "pre" else None
    ref = lowrank_decode_reference(q, latent, projection, freq, LENGTHS)
    out = lowrank_decode_attention(q.half(), latent, projection, freq, LENGTHS, kernel="triton", block_n=16, chunk=32)
    assert out.dtype == torch.float16
    assert float((out.float() - ref).norm() / ref.norm()) < 3e-3


@interpreted
@pytest.mark.parametrize("rope_mode", ["pre", "post"])
@pytest.mark.parametrize("key_bits,value_bits", [(((4, 8), (8, 4)), 4), (8, ((5, 16), (9, 4))), (4, 8)])
def test_kernel_reads_mixed_precision_latents_as_the_reference(rope_mode, key_bits, value_bits):
    """A side stored as two parts (int8 on its strongest channels, int4 on the rest; or fp16 + int4), keys and values
    at different precisions: the kernel equals the reference, and the reference equals quantizing each part alone."""
    keys, values, positions, inv_freq, q = activations(seed=2)
    stored = keys if rope_mode == "pre" else rotate(keys, positions[:, None, :], inv_freq)
    projection = fit_projection(moments(stored), moments(values), [12, 12], [14, 14], rope_mode)
    cache = encode_kv(projection, stored, values, positions, key_bits, group_size=4, value_bits=value_bits)
    freq = inv_freq if rope_mode == "pre" else None
    ref = lowrank_decode_reference(q, cache, projection, freq, LENGTHS)
    out = lowrank_decode_attention(q.half(), cache, projection, freq, LENGTHS, kernel="triton", block_n=16, chunk=32)
    assert float((out.float() - ref).norm() / ref.norm()) < 3e-3
    if isinstance(key_bits, tuple):  # the key latent: each part quantized on its own
        latent = torch.einsum("bhnd,hdr->bhnr", stored.float(), projection.key_down)
        (w, b), (_, b2) = key_bits
        head = dequantize_latent(*quantize_latent(latent[..., :w], b, 4), b, w, 4)
        tail = dequantize_latent(*quantize_latent(latent[..., w:], b2, 4), b2, 12 - w, 4)
        assert cache.key_tail is not None and cache.key_tail.width == 12 - w
        codes, scales, bits, _ = cache.side(True)
        assert torch.equal(dequantize_latent(codes, scales, bits, w, 4), head)
        assert torch.equal(dequantize_latent(cache.key_tail.codes, cache.key_tail.scale, b2, 12 - w, 4), tail)


@pytest.mark.parametrize("key_bits, value_bits, scale_bits", [(((4, 8), (8, 4)), 4, 16), (8, ((8, 16), (4, 4)), 32), (4, 4, 16)])
def test_the_accuracy_harness_reads_exactly_what_the_stored_cache_holds(key_bits, value_bits, scale_bits):
    """LowRankCore (the perplexity harness) quantizes and dequantizes latents in place; the stored cache
    (encode_kv, what the decode kernel reads) must give the same latents, bit for bit."""
    from codesign.attention.gemma import LowRankCore
    from codesign.attention.lowrank_kv import _decode_side

    keys, values, positions, *_ = activations(seed=3)
    projection = fit_projection(moments(keys), moments(values), [12, 12], [12, 12])
    cache = encode_kv(projection, keys, values, positions, key_bits, group_size=4, scale_bits=scale_bits,
                      value_bits=value_bits)
    core = LowRankCore(projection, key_bits, group_size=4, value_bits=value_bits, scale_bits=scale_bits)
    assert torch.equal(core._roundtrip(keys, projection.key_down, key_bits), _decode_side(cache, True, 12))
    assert torch.equal(core._roundtrip(values, projection.value_down, value_bits), _decode_side(cache, False, 12))


def test_mixed_precision_bytes_are_the_parts():
    keys, values, positions, *_ = activations()
    projection = fit_projection(moments(keys), moments(values), [8, 8], [8, 8])
    tokens = B * HKV * N
    mixed = encode_kv(projection, keys, values, positions, ((4, 8), (4, 4)), group_size=4, value_bits=4)
    # keys: 4 int8 channels (4 B) and 4 int4 channels (2 B), one float32 scale per part; values: 8 int4 (4 B), 2 scales
    assert mixed.nbytes() == tokens * ((4 + 4) + (2 + 4) + (4 + 2 * 4))
    with pytest.raises(ValueError, match="at most two precisions per side"):
        encode_kv(projection, keys, values, positions, ((2, 8), (2, 4), (4, 4)))
    with pytest.raises(ValueError, match="leave no channel of 8 for the last one"):
        encode_kv(projection, keys, values, positions, ((8, 8), (4, 4)))


def test_latent_cache_is_smaller():
    keys, values, positions, inv_freq, _ = activations()
    projection = fit_projection(moments(keys), moments(values), [8, 8], [8, 8])
    dense_bytes = 2 * keys.numel() * 2  # float16 K and V
    sizes = {bits: encode_kv(projection, keys, values, positions, bits, group_size=4).nbytes() for bits in (16, 8, 4)}
    assert sizes[16] == dense_bytes // 4
    assert sizes[8] == dense_bytes // 8 + 2 * B * HKV * N * 2 * 4  # codes + float32 scales per token and 4 channels
    assert sizes[4] == dense_bytes // 16 + 2 * B * HKV * N * 2 * 4
    half = encode_kv(projection, keys, values, positions, 4, group_size=4, scale_bits=16).nbytes()
    assert half == dense_bytes // 16 + 2 * B * HKV * N * 2 * 2  # float16 scales: half the scale bytes


def test_float16_scales_refuse_what_they_cannot_hold():
    with pytest.raises(ValueError, match=r"does not fit torch.float16 scales .* use scale_bits=32"):
        quantize_latent(torch.full((2, 8), 1e6), 4, scale_bits=16)
    with pytest.raises(ValueError, match=r"scale bits must be one of \(32, 16\), got 8"):
        quantize_latent(torch.ones(2, 8), 4, scale_bits=8)
    codes, scale = quantize_latent(torch.zeros(2, 8), 4, group_size=8, scale_bits=16)  # zeros: scale 1, codes 0
    assert torch.equal(dequantize_latent(codes, scale, 4, 8, group_size=8), torch.zeros(2, 8))


def test_bad_input_is_a_clear_error():
    keys, values, positions, inv_freq, q = activations()
    mk, mv = moments(keys), moments(values)
    with pytest.raises(ValueError, match=r"key rank 33 must be in 1..head_dim=32"):
        fit_projection(mk, mv, [33, 4], [4, 4])
    with pytest.raises(ValueError, match=r"1 value ranks for 2 KV heads"):
        fit_projection(mk, mv, [4, 4], [4])
    projection = fit_projection(mk, mv, [4, 4], [4, 4])
    latent = encode_kv(projection, keys, values, positions)
    with pytest.raises(ValueError, match=r"query heads 3 is not a multiple of KV heads 2"):
        lowrank_decode_attention(q[:, :3], latent, projection, inv_freq)
    with pytest.raises(ValueError, match=r"keys have 1 heads of dim 32; the projection expects 2 heads"):
        encode_kv(projection, keys[:, :1], values[:, :1], positions)
    with pytest.raises(ValueError, match=r"rope_mode 'pre' needs inv_freq of shape \(16,\)"):
        lowrank_decode_attention(q, latent, projection, None)
    with pytest.raises(ValueError, match=r"latent bits must be one of \(16, 8, 4\), got 3"):
        encode_kv(projection, keys, values, positions, bits=3)
    with pytest.raises(ValueError, match=r"lengths\[0\] = 0 is outside 1..50"):
        lowrank_decode_attention(q, latent, projection, inv_freq, [0, 3])
