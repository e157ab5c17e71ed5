"""The compiled column read of a convolution's windows (read_kernels.dac_windows, adc_scale) against the torch path."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from codesign.cim import CIMConfig, CIMConv2d, ConverterConfig, MismatchConfig, TileConfig
from codesign.cim.readout import CrossbarReadout

_CONVERTER = ConverterConfig(dac_bits=8, adc_bits=8, adc_range=12.0)


def _layer(config: CIMConfig, bias: bool, stride: int, dilation: int, out: int) -> CIMConv2d:
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(6, out, 3, stride=stride, padding=1, dilation=dilation, bias=bias)
    with torch.no_grad():
        conv.weight[: out // 2].abs_().add_(0.5)  # one sign and large: the ADC saturates some of their partial sums
    return CIMConv2d.from_conv(conv, config)


def _inputs() -> torch.Tensor:
    x = torch.randn(6, 6, 7, 7, generator=torch.Generator().manual_seed(1)).relu_()
    x[2:4].abs_().add_(1.0)  # windows of large inputs: partial sums beyond the ADC's range
    x[0] = 0.0  # all-zero windows: the full scale's floor
    x[1, :, :4, :4] = 0.0
    return x


def _both_reads(layer: CIMConv2d, x: torch.Tensor, monkeypatch) -> tuple:  # noqa: ANN001
    padded = F.pad(x, layer.pads)
    fused = layer._read(padded, saturation=True)
    with monkeypatch.context() as m:
        m.setattr(CrossbarReadout, "fuses_columns", lambda self, *args: False)
        assert not layer.crossbar.fuses_column_read(torch.empty(1, 1, 1, 1, 1, 1, 1), row_dims=3)
        torch_path = layer._read(padded, saturation=True)
    return fused, torch_path


@pytest.mark.parametrize("chips", [1, 2])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("stride,dilation,out", [(2, 1, 8), (1, 2, 5)])
def test_drawn_chips_read_the_same_values_and_mask_as_the_torch_path(chips, bias, stride, dilation, out, monkeypatch):
    config = CIMConfig(device=MismatchConfig(sigma=0.05, kind="additive"), converter=_CONVERTER,
                       tile=TileConfig(rows=256, cols=8), drift_compensation="none")  # 5 outputs: padded columns
    layer = _layer(config, bias, stride, dilation, out)
    layer.sample(3, 0.0, n_chips=chips)
    x = _inputs()
    padded = F.pad(x, layer.pads)
    probe = padded.as_strided((chips, 6, 3, 3, 1, 1, 1), (1, 1, 1, 1, 1, 1, 1))
    assert layer.crossbar.fuses_column_read(probe, row_dims=3)  # the kernels run in this read
    (y, mask), (y_ref, mask_ref) = _both_reads(layer, x, monkeypatch)
    assert torch.equal(y, y_ref)
    assert mask is not None and mask_ref is not None and bool(mask.any())
    assert torch.equal(mask, mask_ref)


def test_programmed_pcm_chips_read_the_same_as_the_torch_path(monkeypatch):
    layer = _layer(CIMConfig(drift_compensation="global"), True, 2, 1, 8)
    layer.program(5, n_chips=2)
    layer.drift_to(3600.0)
    assert layer.crossbar.fuses_column_read(torch.empty(2, 6, 3, 3, 1, 1, 1), row_dims=3)
    (y, mask), (y_ref, mask_ref) = _both_reads(layer, _inputs(), monkeypatch)
    assert torch.equal(y, y_ref)
    assert (mask is None) == (mask_ref is None)
    if mask is not None:
        assert torch.equal(mask, mask_ref)


@pytest.mark.parametrize("converter,read_noise", [
    (ConverterConfig(dac_bits=8, adc_bits=8, adc_range=12.0, adc_noise=0.1), "per_call"),
    (ConverterConfig(dac_bits=8, adc_bits=8, adc_range=12.0, input_range=1.0), "per_call"),
    (ConverterConfig(dac_bits=None, adc_bits=8, adc_range=12.0), "per_call"),
    (_CONVERTER, "per_input"),
])
def test_reads_the_kernels_do_not_model_take_the_torch_path(converter, read_noise):
    layer = _layer(CIMConfig(converter=converter, read_noise=read_noise), True, 2, 1, 8)
    layer.program(5)
    windows = torch.empty(1, 6, 3, 3, 2, 4, 4)
    assert not layer.crossbar.fuses_column_read(windows, row_dims=3)


def test_a_float64_read_takes_the_torch_path():
    layer = _layer(CIMConfig(converter=_CONVERTER, read_noise="per_call"), True, 2, 1, 8)
    layer.program(5)
    windows = torch.empty(1, 6, 3, 3, 2, 4, 4)
    assert layer.crossbar.fuses_column_read(windows, row_dims=3)
    assert not layer.crossbar.fuses_column_read(windows.double(), row_dims=3)
