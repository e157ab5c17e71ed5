"""--init: the saved float KAN's grid is checked against the spec, the initial error is the saved model's own,
and heavy saturation of coef_t is a warning (--strict: refused)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from codesign.cli import main
from codesign.fpga.stimulus import make_stimulus
from codesign.kan.float_model import KAN
from codesign.kan.initial_state import float_vs_fixed_error, load_initial_state
from codesign.kan.spec import KANSpec

SPEC = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=6)  # G + k = 5
CONFIG = 'widths = [2, 2, 1]\ngrid_size = 4\nspline_order = 1\nlut_bits = 6\n'


def saved(tmp_path, name: str = "model.pt", **kan) -> tuple[KAN, str]:
    model = KAN(SPEC.widths, **{"grid_size": 4, "spline_order": 1, "seed": 0, "init_scale": 0.3, **kan})
    path = tmp_path / name
    torch.save(model.state_dict(), path)
    return model, str(path)


def build(capsys, tmp_path, init: str, *extra: str) -> tuple[int, str, str]:
    config = tmp_path / "small.toml"
    config.write_text(CONFIG)
    code = main(["build", "kan_online", "--config", str(config), "--init", init, "--samples", "50", "--pipeline", "ii1",
                 "--out", str(tmp_path / "out"), *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("grid, named", [
    ({"grid_size": 3, "spline_order": 2}, "grid_size 3 (spec 4), spline_order 2 (spec 1)"),  # G + k = 5 as well
    ({"grid_range": (-2.0, 2.0)}, "grid_range (-2, 2) (spec (-1, 1))"),
])
def test_a_model_trained_on_another_grid_is_refused_naming_the_fields(capsys, tmp_path, grid, named):
    _, path = saved(tmp_path, **grid)
    with pytest.raises(ValueError, match="trained on another grid") as refused:
        load_initial_state(path, SPEC)
    assert named in str(refused.value)
    code, _, stderr = build(capsys, tmp_path, path)
    assert code == 2 and named in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / "out").exists()


def test_the_initial_error_is_measured_against_the_saved_model(tmp_path):
    model, path = saved(tmp_path)
    initial = load_initial_state(path, SPEC)
    assert initial.grid is not None and initial.grid.grid_size == 4 and initial.warnings(SPEC) == []
    x_raw = make_stimulus(SPEC, n_samples=200, seed=0).x[:200]
    error = float_vs_fixed_error(SPEC, initial, x_raw)
    with torch.no_grad():
        own = model.double()(torch.from_numpy(np.clip(SPEC.act_t.to_float(x_raw), -1, 1))).numpy()
    assert error["float_rms"] == pytest.approx(float(np.sqrt(np.mean(own**2))), rel=1e-12)


def test_a_file_without_its_grid_is_a_warning_and_refused_under_strict(capsys, tmp_path):
    model, path = saved(tmp_path)
    torch.save({k: v for k, v in model.state_dict().items() if not k.endswith(".grid")}, path)  # as files were saved before
    initial = load_initial_state(path, SPEC)
    assert initial.grid is None and "holds no grid" in initial.warnings(SPEC)[0]
    with pytest.raises(ValueError, match=r"holds no grid.*\(--strict\)"):
        load_initial_state(path, SPEC, strict=True)


def test_heavy_saturation_is_a_warning_with_the_count_and_refused_under_strict(capsys, tmp_path):
    model, _ = saved(tmp_path)
    with torch.no_grad():
        model.layers[0].coef[0] = 100.0  # 10 of 30 coefficients beyond ap_fixed<16,6>'s 32
    path = str(tmp_path / "wide.pt")
    torch.save(model.state_dict(), path)
    initial = load_initial_state(path, SPEC)
    assert initial.saturated == 10
    (line,) = initial.warnings(SPEC)
    assert "10 of 30 coefficients (33%)" in line and "coef_t" in line
    code, _, stderr = build(capsys, tmp_path, path, "--strict")
    assert code == 2 and "10 of 30 coefficients" in stderr and "(--strict)" in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    code, stdout, stderr = build(capsys, tmp_path, path)
    assert code == 0 and "codesign: warning: --init" in stderr and "10 of 30 coefficients" in stderr, stderr
    assert "10 saturated" in stdout
