"""The knobs benchmarks/cim_vs_aihwkit.py matches between codesign and aihwkit-lightning do the same thing.

Runs only where aihwkit-lightning is installed (extra cim-peers; not a test dependency).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

pytest.importorskip("aihwkit_lightning")
sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))

from aihwkit_lightning.nn.conversion import convert_to_analog  # noqa: E402
from aihwkit_lightning.simulator.configs import WeightNoiseInjectionType  # noqa: E402
from cim_vs_aihwkit import _codesign_config, _lightning_config  # noqa: E402

from codesign.cim import CIMConfig, ConverterConfig, chip_inputs, chip_twin, evaluate_chips, sample_model  # noqa: E402


def test_8_bit_dac_and_adc_give_lightnings_outputs_to_float_rounding():
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(64, 100))
    x = torch.rand(300, 64) - 0.3
    rpu = _lightning_config(0.0, 2.5, 8)
    rpu.modifier.noise_type = WeightNoiseInjectionType.NONE
    net = convert_to_analog(layer, rpu).train()
    config = _codesign_config(0.0, 8).replace(device="ideal")
    with torch.no_grad():
        theirs, ours, exact = net(x), evaluate_chips(chip_twin(layer, config), x, seed=0, n_chips=1)[0], layer(x)
    step = 12 * float(layer[0].weight.detach().abs().max()) * float(x.abs().max()) / 127  # one ADC step at the largest input
    assert float((exact - ours).abs().max()) > 0.3 * step  # the converters do quantize
    assert float((theirs - ours).abs().max()) < 1e-5 * step * 127


def test_additive_weight_noise_has_lightnings_spread():
    torch.manual_seed(1)
    layer = nn.Sequential(nn.Linear(200, 150, bias=False))
    eye = torch.eye(200)
    sigma, n = 0.05, 200 * 150
    expected = sigma * float(layer[0].weight.detach().abs().max())
    rpu = _lightning_config(sigma, 2.5, 8)
    rpu.forward.inp_res = rpu.forward.out_res = -1  # ideal converters: the outputs of one-hot inputs are the weights
    rpu.forward.out_bound = 0.0
    rpu.pre_post.input_range.enable = False
    net = convert_to_analog(layer, rpu).train()
    config = CIMConfig(device=_codesign_config(sigma, 8).device, converter=ConverterConfig.ideal(), drift_compensation="none")
    twin = chip_twin(layer, config)
    sample_model(twin, seed=3, t_seconds=0.0, n_chips=1)
    with torch.no_grad():
        theirs = net(eye) - layer(eye)
        ours = twin(chip_inputs(eye, 1)) - layer(eye)
    for noise in (theirs, ours):
        std = float(noise.std())
        assert abs(std / expected - 1) < 4 / math.sqrt(2 * n)  # 4 standard errors of a sample std
