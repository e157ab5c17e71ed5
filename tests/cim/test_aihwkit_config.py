"""aihwkit InferenceRPUConfig settings carried over to CIMConfig, as plain dicts (runs without aihwkit)."""

from __future__ import annotations

import pytest

from codesign.cim import CIMConfig, ConverterConfig, PCMConfig, TileConfig
from codesign.cim.aihwkit_config import AIHWKIT_DEFAULTS, INERT, MAPPED, REQUIRED, aihwkit_dict, cim_config_from_aihwkit


def _base() -> dict:
    """The dict of codesign's default chip in aihwkit's field names."""
    return aihwkit_dict(CIMConfig())


def _with(path: str, value) -> dict:
    data = _base()
    section, _, name = path.rpartition(".")
    target = data
    for key in section.split(".") if section else []:
        target = target.setdefault(key, {})
    target[name] = value
    return data


@pytest.mark.parametrize("config", [
    CIMConfig(),
    CIMConfig(device=PCMConfig(g_max_us=20.0, t0_s=30.0, t_read_s=1e-6, prog_noise_scale=0.5, drift_scale=2.0,
                               read_noise_scale=0.0),
              converter=ConverterConfig(dac_bits=6, adc_bits=10, adc_range=8.0, adc_noise=0.04),
              tile=TileConfig(rows=512, cols=128), drift_compensation="per_column"),
    CIMConfig(converter=ConverterConfig(input_range=2.5, adc_noise=0.06), drift_compensation="none"),
    CIMConfig(converter=ConverterConfig.ideal()),
])
def test_round_trip(config):
    assert cim_config_from_aihwkit(aihwkit_dict(config)) == config


# each mapped aihwkit field, a new value, and the CIMConfig field it must change (and only it)
_CHANGES = [
    ("forward.inp_res", 1 / 62, lambda c: c.converter.dac_bits, 6),
    ("forward.inp_res", 62, lambda c: c.converter.dac_bits, 6),
    ("forward.out_res", 1 / 1022, lambda c: c.converter.adc_bits, 10),
    ("forward.out_res", -1, lambda c: c.converter.adc_bits, None),
    ("forward.out_bound", 10.0, lambda c: c.converter.adc_range, 10.0),
    ("forward.out_noise", 0.06, lambda c: c.converter.adc_noise, 0.06),
    ("forward.is_perfect", True, lambda c: c.converter, ConverterConfig.ideal()),
    ("noise_model.g_max", 20.0, lambda c: c.device.g_max_us, 20.0),
    ("noise_model.t_read", 1e-6, lambda c: c.device.t_read_s, 1e-6),
    ("noise_model.t_0", 30.0, lambda c: c.device.t0_s, 30.0),
    ("noise_model.prog_noise_scale", 0.5, lambda c: c.device.prog_noise_scale, 0.5),
    ("noise_model.read_noise_scale", 0.0, lambda c: c.device.read_noise_scale, 0.0),
    ("noise_model.drift_scale", 2.0, lambda c: c.device.drift_scale, 2.0),
    ("drift_compensation", None, lambda c: c.drift_compensation, "none"),
    ("drift_compensation", "PerColumnDriftCompensation", lambda c: c.drift_compensation, "per_column"),
    ("mapping.max_input_size", 64, lambda c: c.tile.rows, 64),
    ("mapping.max_output_size", 32, lambda c: c.tile.cols, 32),
]


@pytest.mark.parametrize("path,value,read,expected", _CHANGES, ids=[f"{c[0]}={c[1]}" for c in _CHANGES])
def test_each_mapped_field_changes_its_cim_field_and_nothing_else(path, value, read, expected):
    before = cim_config_from_aihwkit(_base())
    after = cim_config_from_aihwkit(_with(path, value))
    assert read(before) != expected and read(after) == expected
    changed = {name for name in ("device", "converter", "tile", "drift_compensation", "read_noise", "faults")
               if getattr(before, name) != getattr(after, name)}
    assert len(changed) == 1


def test_noise_management_none_clips_at_inp_bound_and_scales_the_adc_range_to_it():
    data = _with("forward.noise_management", "None")  # aihwkit's enum value, as a string
    data["forward"].update(inp_bound=2.0, out_bound=24.0, out_noise=0.12)
    conv = cim_config_from_aihwkit(data).converter
    assert (conv.input_range, conv.adc_range, conv.adc_noise) == (2.0, 12.0, 0.06)


def test_every_mapped_and_required_field_is_an_aihwkit_field_mapped_once():
    assert not set(MAPPED) & set(REQUIRED) and not set(MAPPED) & INERT and not set(REQUIRED) & INERT
    assert set(AIHWKIT_DEFAULTS) <= set(REQUIRED)


def test_an_unknown_field_is_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown aihwkit field 'forward\.inp_resolution'"):
        cim_config_from_aihwkit(_with("forward.inp_resolution", 1 / 254))


@pytest.mark.parametrize("path,value", [
    ("forward.bound_management", "ITERATIVE"),
    ("forward.w_noise_type", "AdditiveConstant"),
    ("forward.ir_drop", 1.0),
    ("forward.out_noise_std", 0.1),
    ("forward.noise_management", "AVERAGE_ABS_MAX"),
    ("clip.type", "LayerGaussian"),
    ("modifier.type", "AddNormal"),
    ("mapping.weight_scaling_omega", 0.0),
    ("mapping.max_input_size", 0),
    ("noise_model.type", "ReRamWan2022NoiseModel"),
    ("noise_model.prog_coeff", [0.2, 1.9, -1.1]),
    ("drift_compensation", "GlobalDriftCompensationWithExactReference"),
    ("pre_post.input_range.enable", True),
])
def test_a_field_without_equivalent_is_refused_by_name_not_dropped(path, value):
    with pytest.raises(ValueError, match=rf"aihwkit field {path}=") as info:
        cim_config_from_aihwkit(_with(path, value))
    assert "\n" not in str(info.value)


def test_aihwkit_defaults_that_codesign_lacks_are_refused_unless_ignored():
    with pytest.raises(ValueError, match="forward.bound_management='ITERATIVE'"):
        cim_config_from_aihwkit({})  # aihwkit's own defaults: iterative bound management, unscaled weights
    ignored = ("forward.bound_management", "mapping.weight_scaling_omega")
    config = cim_config_from_aihwkit({}, ignore=ignored)
    conv = config.converter  # aihwkit's defaults: 7-bit DAC, 9-bit ADC, out_noise 0.06, 512x512 tiles
    assert (conv.dac_bits, conv.adc_bits, conv.adc_range, conv.adc_noise) == (7, 9, 12.0, 0.06)
    assert (config.tile.rows, config.tile.cols, config.drift_compensation) == (512, 512, "global")
    with pytest.raises(ValueError, match="ignore='forward.nonsense'"):
        cim_config_from_aihwkit({}, ignore=(*ignored, "forward.nonsense"))


def test_inert_fields_change_nothing_while_their_switch_is_off():
    data = _base()
    data["clip"].update(sigma=3.0, fixed_value=1.0)
    data["forward"].update(w_noise=0.02)
    assert cim_config_from_aihwkit(data) == CIMConfig()


def test_resolutions_that_are_not_whole_bits_are_refused():
    with pytest.raises(ValueError, match="forward.inp_res=0.01"):
        cim_config_from_aihwkit(_with("forward.inp_res", 0.01))


def test_configs_aihwkit_cannot_express_are_refused_on_export():
    for config, word in [(CIMConfig(device="rram"), "rram"), (CIMConfig(read_noise="per_call"), "per_call"),
                         (CIMConfig(drift_compensation="global_ones"), "global_ones"),
                         (CIMConfig(device=PCMConfig(clip_read_noise=False)), "clip_read_noise")]:
        with pytest.raises(ValueError, match=word):
            aihwkit_dict(config)


def test_a_real_aihwkit_config_object_and_model_read_the_same_as_the_dict():
    pytest.importorskip("aihwkit")
    from codesign.cim.aihwkit_config import to_aihwkit_rpu_config

    config = CIMConfig(converter=ConverterConfig(adc_noise=0.06), tile=TileConfig(rows=128, cols=64),
                       drift_compensation="per_column")
    assert cim_config_from_aihwkit(to_aihwkit_rpu_config(config)) == config
    from aihwkit.nn.conversion import convert_to_analog
    from aihwkit.simulator.configs import InferenceRPUConfig
    from torch import nn

    model = convert_to_analog(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)), to_aihwkit_rpu_config(config))
    assert cim_config_from_aihwkit(model) == config  # an aihwkit model: the config its analog tiles share

    with pytest.raises(ValueError, match="forward.bound_management='ITERATIVE'"):
        cim_config_from_aihwkit(InferenceRPUConfig())
