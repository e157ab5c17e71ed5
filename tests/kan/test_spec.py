"""The learner spec: validation with one-line errors, grid constants, configs."""

from __future__ import annotations

import re

import pytest

from codesign.config import load_spec
from codesign.fixed import FixedType
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec, with_precision


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"grid_size": 0}, "grid_size=0"),
        ({"spline_order": 0}, "spline_order=0"),
        ({"widths": (2,)}, "at least an input and an output"),
        ({"widths": (2, 0, 1)}, "positive integer"),
        ({"grid_range": (1.0, -1.0)}, "lo < hi"),
        ({"grid_range": (-1.0, 0.1)}, "not exactly representable"),
        ({"act_t": "ap_fixed<6,8>"}, "ap_fixed<6,8>"),
        ({"coef_t": "ap_fixed<16,6"}, "ap_fixed<16,6"),
        ({"coef_t": "ap_ufixed<16,6>"}, "must be a signed type"),
        ({"lr_shift": -1}, "lr_shift=-1"),
        ({"lut_bits": 0}, "lut_bits=0"),
        ({"act_t": "ap_fixed<32,8>", "coef_t": "ap_fixed<32,8>", "basis_t": "ap_ufixed<32,1>"}, "more than 62"),
    ],
)
def test_bad_kan_specs_get_one_line_errors(fields, message):
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        KANSpec(**fields)
    assert "\n" not in str(info.value)


def test_power_of_two_cell_width_is_a_shift():
    g = KANSpec(grid_size=8, grid_range=(-1.0, 1.0)).grid_constants()  # h = 1/4
    assert g.power_of_two and g.inv_h_raw == 1 and g.inv_h_frac == -2
    g5 = KANSpec(grid_size=5, grid_range=(-2.0, 2.0)).grid_constants()  # h = 0.8, 1/h = 1.25 = 5/4
    assert not g5.power_of_two and g5.inv_h_raw == 5 and g5.inv_h_frac == 2
    g3 = KANSpec(grid_size=3, grid_range=(-1.0, 1.0)).grid_constants()  # 1/h = 1.5 = 3/2
    assert g3.inv_h_raw * 2.0**-g3.inv_h_frac == 1.5


def test_spec_round_trips_through_plain_data():
    spec = with_precision(KANSpec(widths=(3, 5, 2), grid_size=16, spline_order=2), 12, 4)
    again = spec_from_mapping("kan", spec.to_dict())
    assert again == spec
    assert str(again.coef_t) == "ap_fixed<12,4,AP_RND_CONV,AP_SAT>"
    assert spec.num_parameters == (3 * 5 + 5 * 2) * 18


def test_config_files_override_fields(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('grid_size = 16\nwidths = [1, 3, 1]\ncoef_t = "ap_fixed<12,4,AP_RND,AP_SAT>"\n')
    spec = load_spec("kan_online", toml)
    assert spec.grid_size == 16 and spec.widths == (1, 3, 1)
    assert spec.coef_t == FixedType.parse("ap_fixed<12,4,AP_RND,AP_SAT>")
    yml = tmp_path / "c.yaml"
    yml.write_text("spec:\n  widths: [2, 10, 1]\n  activation: hardtanh\n")
    mlp = load_spec("mlp_online", yml)
    assert isinstance(mlp, MLPSpec) and mlp.activation == "hardtanh" and mlp.widths == (2, 10, 1)


@pytest.mark.parametrize(
    "text, suffix, message",
    [
        ("grid_sise = 4\n", ".toml", "unknown kan spec field"),
        ("grid_size = 'many'\n", ".toml", "grid_size='many'"),
        ("grid_size = [\n", ".toml", "is not valid"),
        ("grid_size: 4\n", ".ini", "expected a .toml"),
    ],
)
def test_bad_configs_are_named(tmp_path, text, suffix, message):
    path = tmp_path / f"c{suffix}"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_spec("kan_online", path)


def test_unknown_learner_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="unknown learner 'cnn_online'"):
        load_spec("cnn_online")
    with pytest.raises(ValueError, match="does not exist"):
        load_spec("kan_online", tmp_path / "nope.toml")
