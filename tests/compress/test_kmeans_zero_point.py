"""The default k-means grid: zero points on its levels (0.0 exact), started from min-max round to nearest."""

import pytest
import torch

from codesign.compress import AsymIntConfig, KMeansConfig, quantize, relative_error


def _heavy_tailed(rows: int, cols: int, seed: int, shift: float = 0.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=g) * torch.rand(rows, 1, generator=g)
    w += 0.2 * torch.randn(rows, cols, generator=g) ** 3  # outliers, as real layers have
    # each group of 64 moved by up to `shift` times its rows' spread: groups off centre by different amounts
    offsets = shift * (2 * torch.rand(rows, cols // 64, 1, generator=g) - 1) * w.abs().amax(dim=1)[:, None, None]
    return (w.view(rows, -1, 64) + offsets).reshape(rows, cols)


def _offset_levels() -> torch.Tensor:
    """Every group of 64 on 16 uniform levels offset by its own fraction of a step (as weights dequantized from
    GGUF's Q4_1 / Q4_K blocks are, with their float minimum): only a fractional zero point spans it."""
    g = torch.Generator().manual_seed(0)
    step = 0.01 + 0.02 * torch.rand(32, 4, 1, generator=g)
    offset = 15 * torch.rand(32, 4, 1, generator=g)
    codes = torch.randint(0, 16, (32, 4, 64), generator=g).float()
    codes[..., 0], codes[..., 1] = 0, 15  # each group uses the end levels
    return ((codes - offset) * step).reshape(32, 256)


@pytest.mark.parametrize("bits", [2, 3, 4])
@pytest.mark.parametrize("shift", [0.0, 1.0])  # 1.0: groups off centre, where a symmetric grid wastes levels
def test_never_worse_than_minmax_round_to_nearest_at_the_same_storage(bits, shift):
    w = _heavy_tailed(96, 256, seed=bits, shift=shift)
    ours, rtn = quantize(w, KMeansConfig(bits=bits)), quantize(w, AsymIntConfig(bits=bits))
    # codes, fp16 step, uint8 zero point, 2**bits fp16 levels: AsymInt's layout (or the symmetric grid, without zeros)
    assert ours.nbytes == rtn.nbytes - (0 if ours.zeros is not None else rtn.zeros.numel())
    assert relative_error(w, ours.dequantize()) <= relative_error(w, rtn.dequantize())


def test_the_zero_point_takes_fractions_of_a_level():
    w = _offset_levels()
    ours = quantize(w, KMeansConfig(bits=4, exact_zero=False))
    assert ours.zeros is not None and ours.zeros.dtype == torch.uint8
    assert relative_error(w, ours.dequantize()) < 5e-3  # a zero point rounded to 1/16 of a level
    assert relative_error(w, quantize(w, AsymIntConfig(bits=4)).dequantize()) > 1e-2


def test_per_group_codebooks_start_from_the_layers():
    w = _heavy_tailed(32, 128, seed=5)
    layer = relative_error(w, quantize(w, KMeansConfig(bits=3, zero_point=True)).dequantize())
    group = quantize(w, KMeansConfig(bits=3, codebook="group", zero_point=True))
    assert group.codebook.shape == (32, 2, 8) and group.zeros is not None
    assert relative_error(w, group.dequantize()) <= layer


def test_each_layer_keeps_the_grid_of_lower_error():
    w = _heavy_tailed(64, 256, seed=7)
    chosen = quantize(w, KMeansConfig(bits=3))
    both = [relative_error(w, quantize(w, KMeansConfig(bits=3, zero_point=z)).dequantize()) for z in (False, True)]
    assert both[0] != both[1]
    assert relative_error(w, chosen.dequantize()) == min(both)
    # a layer whose groups lie on offset uniform levels takes the zero points
    assert quantize(_offset_levels(), KMeansConfig(bits=3)).zeros is not None


def test_the_symmetric_grid_is_still_there():
    w = _heavy_tailed(16, 128, seed=6)
    symmetric = quantize(w, KMeansConfig(bits=4, zero_point=False))
    assert symmetric.zeros is None
    assert symmetric.nbytes < quantize(w, KMeansConfig(bits=4, zero_point=True)).nbytes


@pytest.mark.parametrize("codebook", ["layer", "group"])
def test_uniform_levels_refine_minmax_round_to_nearest(codebook):
    w = _heavy_tailed(32, 256, seed=8)
    uniform = quantize(w, KMeansConfig(bits=3, zero_point=True, lloyd=False, codebook=codebook))
    levels = uniform.codebook.float().reshape(-1, 8)
    assert torch.equal(levels, (torch.arange(8.0) * 32).expand_as(levels))  # 0..7 in 1/32 of a level
    assert relative_error(w, uniform.dequantize()) <= relative_error(w, quantize(w, AsymIntConfig(bits=3)).dequantize())


@pytest.mark.parametrize("bits", [3, 4])
@pytest.mark.parametrize("zero_point", [None, True, False])
@pytest.mark.parametrize("codebook", ["layer", "group"])
def test_zero_stays_exactly_zero(bits, zero_point, codebook):
    # a weight that rounds to zero stays 0.0, as in integer round to nearest: an offset there is multiplied by
    # whatever activation that input carries
    w = _heavy_tailed(64, 256, seed=bits)
    w[torch.rand(w.shape, generator=torch.Generator().manual_seed(1)) < 0.3] = 0.0
    config = KMeansConfig(bits=bits, zero_point=zero_point, codebook=codebook, exact_zero=True)
    dequantized = quantize(w, config).dequantize()
    assert torch.equal(dequantized[w == 0], torch.zeros(int((w == 0).sum())))
    assert relative_error(w, dequantized) <= relative_error(w, quantize(w, AsymIntConfig(bits=bits)).dequantize())
    # the least-squares grid (fractional zero points, free levels) does move them
    free = quantize(w, KMeansConfig(bits=bits, zero_point=zero_point, codebook=codebook, exact_zero=False))
    assert not torch.equal(free.dequantize()[w == 0], torch.zeros(int((w == 0).sum())))


@pytest.mark.parametrize("bits, keeps", [(1, False), (2, False), (3, True), (4, False), (8, False)])
def test_zero_is_kept_exact_by_default_at_3_bits_only(bits, keeps):
    # chosen on validation slices (benchmarks/kmeans_grid_validation.py): better at 3 bits, worse at 4
    assert KMeansConfig(bits=bits).keeps_zero is keeps
    assert KMeansConfig(bits=bits, exact_zero=not keeps).keeps_zero is not keeps
    w = _heavy_tailed(64, 256, seed=bits)
    w[torch.rand(w.shape, generator=torch.Generator().manual_seed(1)) < 0.3] = 0.0
    default = quantize(w, KMeansConfig(bits=bits, zero_point=True)).dequantize()
    assert torch.equal(default, quantize(w, KMeansConfig(bits=bits, zero_point=True, exact_zero=keeps)).dequantize())
    assert torch.equal(default[w == 0], torch.zeros(int((w == 0).sum()))) is keeps


@pytest.mark.parametrize("bits", [3, 4])
@pytest.mark.parametrize("zero_point", [True, False])
def test_the_end_levels_can_stay_at_the_range_ends(bits, zero_point):
    w = _heavy_tailed(64, 256, seed=bits, shift=1.0)
    q = quantize(w, KMeansConfig(bits=bits, zero_point=zero_point, keep_ends=True))
    top, fine = (1 << bits) - 1, 256 >> bits
    ends = q.codebook.float()[[0, -1]]
    expected = torch.tensor([0.0, top * fine]) if zero_point else torch.tensor([-1.0, 1.0])
    assert torch.equal(ends, expected)
    # the levels between them still move (Lloyd)
    inner = q.codebook.float()[1:-1]
    uniform = (torch.arange(1.0, top) * fine if zero_point else torch.linspace(-1, 1, top + 1)[1:-1].half().float())
    assert not torch.equal(inner, uniform)
    if zero_point:  # never worse than the uniform start, which is min-max round to nearest or better
        rtn = relative_error(w, quantize(w, AsymIntConfig(bits=bits)).dequantize())
        assert relative_error(w, q.dequantize()) <= rtn


@pytest.mark.parametrize("bits, lean", [(2, 0.0), (3, 3.0), (4, 0.0)])
def test_lloyd_leans_toward_large_weights_by_default_at_3_bits_only(bits, lean):
    # chosen on validation slices (benchmarks/kmeans_grid_validation.py): better at 3 bits, worse at 4 on SmolLM2
    assert KMeansConfig(bits=bits).magnitude == lean and KMeansConfig(bits=bits, magnitude_weight=1).magnitude == 1.0
    w = _heavy_tailed(64, 512, seed=9)
    default = quantize(w, KMeansConfig(bits=bits, zero_point=True))
    assert torch.equal(default.dequantize(),
                       quantize(w, KMeansConfig(bits=bits, zero_point=True, magnitude_weight=lean)).dequantize())


@pytest.mark.parametrize("zero_point", [True, False])
def test_the_magnitude_weight_moves_the_outer_levels_outward(zero_point):
    w = _heavy_tailed(64, 512, seed=10)
    flat, leaning = (quantize(w, KMeansConfig(bits=3, zero_point=zero_point, magnitude_weight=m)) for m in (0.0, 3.0))
    spread = [float(q.codebook.float()[-1] - q.codebook.float()[0]) for q in (flat, leaning)]
    assert spread[1] > spread[0]
    # more squared error than the unweighted grid, still no more than min-max round to nearest
    errors = [relative_error(w, q.dequantize()) for q in (flat, leaning)]
    assert errors[0] < errors[1] <= relative_error(w, quantize(w, AsymIntConfig(bits=3)).dequantize())


def test_a_constant_group_is_exact():
    w = torch.full((4, 64), -0.25)
    w[1] = 0.0
    w[2, :] = 3.0
    assert relative_error(w, quantize(w, KMeansConfig(bits=2)).dequantize()) < 1e-3


@pytest.mark.parametrize("kwargs, message", [
    ({"clip_ratios": (0.9, 0.8)}, "includes 1.0"),
    ({"clip_ratios": (1.0, 1.2)}, r"in \(0, 1\]"),
    ({"clip_ratios": (1.0, 0.0)}, r"in \(0, 1\]"),
    ({"clip_ratios": [1.0]}, "tuple"),
    ({"zero_point": "yes"}, "zero_point must be None, True or False"),
    ({"lloyd": False}, "needs zero_point=True"),
    ({"lloyd": False, "zero_point": False}, "needs zero_point=True"),
    ({"exact_zero": 1}, "exact_zero must be None, True or False"),
    ({"keep_ends": None}, "keep_ends must be True or False"),
    ({"magnitude_weight": -1.0}, "magnitude_weight must be None or a number >= 0"),
    ({"magnitude_weight": True}, "magnitude_weight must be None or a number >= 0"),
])
def test_a_bad_config_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        KMeansConfig(**kwargs)
