"""`codesign build --init model.pt`: the learner starts from a float KAN trained offline, quantized by the stated rule."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from codesign.cli import main
from codesign.kan.float_model import KAN
from codesign.kan.initial_state import load_initial_state
from codesign.kan.run import make_learner
from codesign.kan.spec import KANSpec

SPEC = KANSpec(widths=(2, 2, 1), grid_size=4, spline_order=1, lut_bits=6)
CONFIG = 'widths = [2, 2, 1]\ngrid_size = 4\nspline_order = 1\nlut_bits = 6\n'


def trained_kan(spec: KANSpec, steps: int = 200) -> KAN:
    """A float KAN fitted offline to y = sin(3 x0) * x1 / 2 for a few Adam steps."""
    model = KAN(spec.widths, grid_size=spec.grid_size, spline_order=spec.spline_order, grid_range=spec.grid_range, seed=0)
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        x = torch.rand(64, 2, generator=gen) * 2 - 1
        loss = ((model(x)[:, 0] - torch.sin(3 * x[:, 0]) * x[:, 1] / 2) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("init") / "model.pt"
    torch.save(trained_kan(SPEC).state_dict(), path)
    return path


def test_quantization_rule_saturates_and_counts(tmp_path):
    model = KAN(SPEC.widths, grid_size=4, spline_order=1, seed=1)
    with torch.no_grad():
        model.layers[0].coef[0, 0, 0] = 1e3
        model.layers[1].coef[0, 1, 2] = -1e3
    path = tmp_path / "big.pt"
    torch.save(model.state_dict(), path)
    init = load_initial_state(path, SPEC)
    t = SPEC.coef_t
    assert init.saturated == 2
    assert init.coefficients[0][0, 0, 0] == t.max_raw and init.coefficients[1][0, 1, 2] == t.min_raw
    expected = t.quantize(model.layers[0].coef.detach().double().numpy()[0, 1])
    assert np.array_equal(init.coefficients[0][0, 1], expected)
    learner = make_learner(SPEC, initial=init.coefficients)
    assert all(np.array_equal(a, b) for a, b in zip(learner.coefficients_raw(), init.coefficients))


def test_build_with_init_is_bit_exact_and_reports_the_initial_error(capsys, tmp_path, model_file):
    config = tmp_path / "small.toml"
    config.write_text(CONFIG)
    out = tmp_path / "build"
    code, stdout, stderr = run_cli(capsys, "build", "kan_online", "--config", str(config), "--init", str(model_file),
                                   "--samples", "300", "--pipeline", "ii1", "--out", str(out))
    assert code == 0, stderr
    report = json.loads((out / "report.json").read_text())
    assert report["csim"]["bit_exact"] and report["init"]["saturated"] == 0
    error = report["init"]["float_vs_fixed"]
    # the fixed-point model is the float one up to the basis ROM's resolution (2^-6 of a cell) and the types
    assert error["rms"] < 0.05 * error["float_rms"] and "float vs fixed initial model" in stdout
    # the build starts from the quantized file: the HLS reference state, the RTL's init file and memories
    init = load_initial_state(model_file, SPEC)
    with np.load(out / "rtl" / "initial_state.npz") as data:
        assert all(np.array_equal(data[f"arr_{k}"], c) for k, c in enumerate(init.coefficients))
    first = [int(v) for v in (out / "tb_data" / "expected_predictions.txt").read_text().split("\n") if v and v[0] != "#"][:1]
    x0 = np.loadtxt(out / "tb_data" / "stimulus.txt", dtype=np.int64, ndmin=2)[:1, 1:3]
    fresh = make_learner(SPEC, initial=init.coefficients)
    assert first == [int(fresh.run_raw(x0, np.zeros((1, 1), np.int64), train=False)[0, 0])]


@pytest.mark.parametrize("change, message", [
    ("shape", "has shape (2, 2, 6), the spec needs (2, 2, 5)"),
    ("base", "SiLU base branch"),
    ("layers", "beyond the spec's 2 layers"),
    ("text", "not a torch state dict"),
])
def test_a_bad_init_file_is_one_line_and_exit_2(capsys, tmp_path, change, message):
    path = tmp_path / "bad.pt"
    if change == "text":
        path.write_text("not a model")
    else:
        widths = (2, 2, 1, 1) if change == "layers" else SPEC.widths
        model = KAN(widths, grid_size=5 if change == "shape" else 4, spline_order=1, base=change == "base", seed=0)
        torch.save(model.state_dict(), path)
    config = tmp_path / "small.toml"
    config.write_text(CONFIG)
    code, _, stderr = run_cli(capsys, "build", "kan_online", "--config", str(config), "--init", str(path),
                              "--samples", "50", "--out", str(tmp_path / "o"))
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert not (tmp_path / "o").exists()


def test_init_is_refused_for_the_mlp(capsys, tmp_path, model_file):
    code, _, stderr = run_cli(capsys, "build", "mlp_online", "--init", str(model_file), "--out", str(tmp_path / "o"))
    assert code == 2 and "--init is for kan_online" in stderr
