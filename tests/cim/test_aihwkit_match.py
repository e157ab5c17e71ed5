"""A CIMConfig and the InferenceRPUConfig that to_aihwkit_rpu_config makes of it read a layer the same way.

Runs only where IBM aihwkit is installed (built from its sdist, docs/cim_vs_aihwkit.md; not a test dependency).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

pytest.importorskip("aihwkit")

from aihwkit.nn.conversion import convert_to_analog  # noqa: E402

from codesign.cim import CIMConfig, ConverterConfig, convert_to_cim, evaluate_chips  # noqa: E402
from codesign.cim.aihwkit_config import to_aihwkit_rpu_config  # noqa: E402


@pytest.mark.parametrize("converter", [ConverterConfig(), ConverterConfig(dac_bits=6, adc_bits=10, adc_range=6.0)])
def test_converters_and_tile_scaling_give_aihwkits_outputs_before_programming(converter):
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(200, 100))
    x = torch.rand(200, 200) - 0.3
    config = CIMConfig(converter=converter, drift_compensation="none")
    analog = convert_to_analog(layer, to_aihwkit_rpu_config(config)).eval()  # not programmed: the exact weights
    with torch.no_grad():
        theirs = analog(x)
        ours = evaluate_chips(convert_to_cim(layer, config.replace(device="ideal")), x, seed=0, n_chips=1)[0]
        exact = layer(x)
    assert float((exact - ours).abs().max()) > 1e-3  # the converters do quantize
    # equal to float rounding, except an output sitting on an ADC level boundary, which float32 sums in a different
    # order may round to the neighbouring level (1 or 2 of these 20,000 outputs with a 10-bit ADC at ±6)
    full_scale = float(layer[0].weight.detach().abs().max()) * float(x.abs().max())
    adc_step = converter.adc_range / (2 ** (converter.adc_bits - 1) - 1) * full_scale
    diff = (theirs - ours).abs()
    assert float((diff > 1e-5).float().mean()) <= 1e-4
    assert float(diff.max()) < 1.01 * adc_step
