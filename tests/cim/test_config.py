"""Configs validate themselves with one-line errors and round-trip through plain data."""

from __future__ import annotations

import pytest

from codesign.cim import (
    CIMConfig,
    ConverterConfig,
    FaultConfig,
    MismatchConfig,
    PCMConfig,
    RRAMConfig,
    TileConfig,
    config_from_dict,
    config_to_dict,
    make_device,
)


@pytest.mark.parametrize("build, message", [
    (lambda: CIMConfig(device="flash"), "unknown device 'flash'"),
    (lambda: make_device("flash"), "unknown device 'flash'"),
    (lambda: ConverterConfig(dac_bits=0), "dac_bits=0"),
    (lambda: ConverterConfig(adc_bits=-3), "adc_bits=-3"),
    (lambda: ConverterConfig(adc_bits=1), "adc_bits=1"),
    (lambda: ConverterConfig(adc_range=0.0), "adc_range=0.0"),
    (lambda: ConverterConfig(input_range=-1.0), "input_range=-1.0"),
    (lambda: MismatchConfig(sigma=-0.1), "sigma=-0.1: mismatch level must be >= 0"),
    (lambda: MismatchConfig(kind="uniform"), "kind='uniform'"),
    (lambda: FaultConfig(stuck_on_rate=-0.01), "stuck_on_rate=-0.01"),
    (lambda: FaultConfig(0.6, 0.6), "must be <= 1"),
    (lambda: TileConfig(rows=0), "rows=0"),
    (lambda: TileConfig(ir_drop=0.9), "ir_drop=0.9"),
    (lambda: PCMConfig(t0_s=0.0), "t0_s=0.0"),
    (lambda: RRAMConfig(g_max_us=60.0), "g_max_us=60.0"),
    (lambda: CIMConfig(drift_compensation="yes"), "drift_compensation='yes'"),
    (lambda: config_from_dict({"version": 99}), "version 99"),
    (lambda: config_from_dict({"device": "pcm", "device_params": {"gmax": 3}}), "unknown field 'gmax'"),
])
def test_bad_configs_get_a_one_line_error(build, message):
    with pytest.raises(ValueError, match=message) as info:
        build()
    assert "\n" not in str(info.value)


def test_a_device_name_becomes_its_default_config():
    assert CIMConfig(device="rram").device == RRAMConfig()
    assert CIMConfig().device_name == "pcm"


def test_configs_round_trip_through_plain_data():
    config = CIMConfig(device=MismatchConfig(sigma=0.7, kind="lognormal"), faults=FaultConfig(0.01, 0.02),
                       converter=ConverterConfig(dac_bits=6, input_range=2.0, adc_bits=None, adc_noise=0.1),
                       tile=TileConfig(rows=128, cols=64, ir_drop=0.05), drift_compensation=False)
    assert config_from_dict(config_to_dict(config)) == config


def test_ideal_config_has_no_noise_and_ideal_converters():
    config = CIMConfig.ideal()
    assert config.device_name == "ideal" and config.converter.is_ideal


def test_a_version_1_config_reads_as_the_chip_it_meant():
    from codesign.cim import PCMConfig

    old = config_from_dict({"version": 1, "device": "pcm", "drift_compensation": True})
    assert old.drift_compensation == "global_ones" and old.device == PCMConfig(clip_read_noise=False)
    assert config_from_dict({"version": 1, "drift_compensation": False}).drift_compensation == "none"
    assert config_from_dict(config_to_dict(CIMConfig())) == CIMConfig()
