"""Asymmetric integer RTN, GPTQ-style error feedback on every grid, and the one quantizer registry."""

import pytest
import torch

from codesign.compress import (
    AsymIntConfig,
    ErrorFeedbackConfig,
    IntConfig,
    KMeansConfig,
    QERConfig,
    VQConfig,
    activation_error,
    config_from_dict,
    config_to_dict,
    lowbit_matmul,
    quantize,
    relative_error,
)
from codesign.compress.model import MethodSpec
from codesign.compress.registry import needs_covariance, qat_grids, quantizer_names, register_quantizer


def _weight(n=48, k=128, shift=0.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, k, generator=gen) + shift


def _covariance(k=128, seed=1):
    gen = torch.Generator().manual_seed(seed)
    mix = torch.randn(k, k, generator=gen) / k ** 0.5 + 0.3 * torch.eye(k)
    x = (torch.randn(1024, k, generator=gen) @ mix) * (2 * torch.rand(k, generator=gen))
    return (x.T @ x / x.shape[0]).double()


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 8])
def test_asymmetric_int_is_min_max_round_to_nearest(bits):
    w = _weight()
    q = quantize(w, AsymIntConfig(bits, 32))
    assert q.method == "int-asym" and q.zeros.dtype == torch.uint8 and int(q.zeros.max()) < (1 << bits)
    assert int(q.codes().max()) < (1 << bits)
    step = q.scales.float().repeat_interleave(32, 1)
    # round to nearest: within half a step, except where the integer zero point's rounding pushes a range end
    # past the last level (then within one step)
    steps_off = (q.dequantize() - w).abs() / step
    assert float(steps_off.max()) <= 1 + 1e-3
    if bits > 1:
        assert float(steps_off.quantile(0.98)) <= 0.5 + 1e-3
    codebook_bits = 16 * (1 << bits) / w.numel()
    assert q.nbytes * 8 / w.numel() == pytest.approx(bits + (16 + 8) / 32 + codebook_bits, abs=1e-6)


def test_asymmetric_beats_symmetric_on_shifted_weights_and_error_falls_with_bits():
    w = _weight(shift=1.5)
    errors = [relative_error(w, quantize(w, AsymIntConfig(b, 32)).dequantize()) for b in (2, 3, 4, 8)]
    assert errors == sorted(errors, reverse=True)
    assert errors[2] < relative_error(w, quantize(w, IntConfig(4, 32)).dequantize())


def test_zero_points_in_the_kernel_match_the_reference(interpreted_kernels):
    q = quantize(_weight(shift=0.7), AsymIntConfig(4, 32))
    x = torch.randn(5, 128, dtype=torch.float16)
    expected = x.float() @ q.dequantize().T
    for kernel in ("triton", "torch"):
        assert torch.allclose(lowbit_matmul(x, q, kernel=kernel).float(), expected, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("base", [AsymIntConfig(3, 32), IntConfig(3, 32), KMeansConfig(bits=3, group_size=32),
                                  VQConfig(group_size=32)], ids=lambda c: type(c).__name__)
def test_error_feedback_lowers_the_output_error_of_its_grid(base):
    w, cov = _weight(), _covariance()
    plain = quantize(w, base)
    fed = quantize(w, ErrorFeedbackConfig(base=base, block_size=32), cov)
    assert type(fed) is type(plain) and fed.method == plain.method + "+gptq"
    assert torch.equal(fed.scales, plain.scales)  # the same grid, other codes
    assert activation_error(w, fed.dequantize(), cov) < 0.9 * activation_error(w, plain.dequantize(), cov)
    if not isinstance(base, VQConfig):
        ordered = quantize(w, ErrorFeedbackConfig(base=base, block_size=32, act_order=True), cov)
        assert activation_error(w, ordered.dequantize(), cov) < activation_error(w, plain.dequantize(), cov)


def test_error_feedback_under_q_plus_lr_and_its_bad_input():
    w, cov = _weight(), _covariance()
    base = ErrorFeedbackConfig(base=KMeansConfig(bits=2, group_size=32), block_size=32)
    config = QERConfig(method="scaled", rank=8, base=base)
    assert needs_covariance(config) and needs_covariance(QERConfig(method="plain", base=base))
    assert not needs_covariance(QERConfig(method="plain", base=KMeansConfig(bits=2)))
    qlr = quantize(w, config, cov)
    assert qlr.base.method == "kmeans+gptq"
    assert activation_error(w, qlr.dequantize(), cov) < activation_error(w, quantize(w, base, cov).dequantize(), cov)
    with pytest.raises(ValueError, match="needs calibration activations"):
        quantize(w, base)
    with pytest.raises(ValueError, match="act_order applies to scalar grids"):
        quantize(w, ErrorFeedbackConfig(base=VQConfig(group_size=32), act_order=True), cov)
    with pytest.raises(ValueError, match="block size must be a positive multiple of 4"):
        ErrorFeedbackConfig(block_size=6)


def test_registry_round_trips_every_config_and_refuses_others():
    configs = [KMeansConfig(bits=3, codebook="group"), IntConfig(2, 32), AsymIntConfig(5, 16), VQConfig(),
               QERConfig(method="srr", rank=4, base=ErrorFeedbackConfig(base=AsymIntConfig(3), act_order=True))]
    assert {"kmeans", "int", "int-asym", "vq", "qer", "gptq", "qat"} <= set(quantizer_names())
    assert set(qat_grids()) == {"kmeans", "int", "vq"}  # the grids QAT trains on, in the same registry
    for config in configs:
        data = config_to_dict(config)
        assert data["version"] == 1 and config_from_dict(data) == config
    with pytest.raises(ValueError, match="unknown quantizer 'hqq'"):
        config_from_dict({"quantizer": "hqq"})
    with pytest.raises(ValueError, match="version 7; this codesign reads version 1"):
        config_from_dict({"quantizer": "kmeans", "version": 7})
    with pytest.raises(ValueError, match="is taken by KMeansConfig"):
        register_quantizer("kmeans", IntConfig)(lambda w, c: None)
    with pytest.raises(ValueError, match="no quantizer for config type"):
        quantize(_weight(), object())


def test_method_spec_builds_its_configs_through_the_registry():
    assert MethodSpec("int-asym", 3).layer_config() == AsymIntConfig(3, 64)
    spec = MethodSpec("srr", 2, error_feedback=True, act_order=True)
    assert spec.layer_config().base == ErrorFeedbackConfig(base=KMeansConfig(bits=2), act_order=True)
    assert spec.needs_input_covariance and MethodSpec("kmeans", 4, error_feedback=True).needs_input_covariance
    assert not MethodSpec("kmeans", 1).needs_input_covariance
    with pytest.raises(ValueError, match="--act-order is an option of --error-feedback"):
        MethodSpec("kmeans", 4, act_order=True)
    with pytest.raises(ValueError, match="apply to the post-training quantizers"):
        MethodSpec("kmeans-qat", 2, error_feedback=True)


@pytest.mark.parametrize("method, bits", [("kmeans", 1), ("int", 8), ("int-asym", 8), ("srr", 1), ("kmeans", 5)])
def test_every_width_from_one_to_eight_bits_compresses_a_layer(method, bits):
    from codesign.compress.model import collect_statistics, compress_linears

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 16))
    x = torch.randn(256, 64)
    spec = MethodSpec(method, bits, rank=4 if method == "srr" else None, group_size=32, error_feedback=bits == 8)
    stats = collect_statistics(model, lambda: model(x), ["0"]) if spec.needs_input_covariance else None
    built, (report,) = compress_linears(model, spec, stats)
    assert built["0"].qweight.bits == bits if method != "srr" else built["0"].qweight.base.bits == bits
    assert report.relative_error < {1: 0.9, 5: 0.05, 8: 0.01}[bits]
