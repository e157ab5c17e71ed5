"""codesign.fpga.rtl_emit: the RTL folder of a spec holds exactly the reference's initial state and ROMs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from codesign.fpga.rtl_emit import RTL_MANIFEST, emit_rtl, load_rtl_manifest, rtl_parameters
from codesign.kan.fixed_learner import basis_roms
from codesign.kan.run import make_learner
from codesign.kan.spec import KANSpec, MLPSpec


def _words(path, bits: int, count: int) -> list[list[int]]:
    """A .mem file's words split into signed fields."""
    out = []
    for line in path.read_text().split():
        word = int(line, 16)
        fields = [(word >> (k * bits)) & ((1 << bits) - 1) for k in range(count)]
        out.append([f - (1 << bits) if f >> (bits - 1) else f for f in fields])
    return out


def test_kan_memories_hold_the_reference_state(tmp_path):
    spec = KANSpec(widths=(3, 2), grid_size=6, spline_order=2)  # k = 2: 4 banks, one unused per window
    manifest = emit_rtl(spec, tmp_path, seed=3)
    banks, depth = manifest["state"]["banks"], manifest["state"]["depth"]
    assert banks == 4 and depth == 2  # 8 coefficients per edge
    coef = make_learner(spec, seed=3).coefficients_raw()[0]  # (out, in, G + k)
    w = spec.coef_t.width
    for i in range(3):
        for b in range(banks):
            words = _words(tmp_path / f"coef_l000_i{i:03d}_b{b:03d}.mem", w, 2)
            for q, word in enumerate(words):
                m = q * banks + b
                for o in range(2):
                    assert word[o] == (coef[o, i, m] if m < spec.n_coef else 0)
    brom, drom = basis_roms(spec)
    assert _words(tmp_path / "dbasis.mem", spec.dbasis_t.width, 3) == drom.T.tolist()
    basis = [[v & ((1 << spec.basis_t.width) - 1) for v in row] for row in _words(tmp_path / "basis.mem", spec.basis_t.width, 3)]
    assert basis == brom.T.tolist()
    assert load_rtl_manifest(tmp_path) == json.loads((tmp_path / RTL_MANIFEST).read_text())


def test_mlp_rows_hold_weights_then_bias(tmp_path):
    spec = MLPSpec(widths=(2, 3, 1))
    emit_rtl(spec, tmp_path, seed=0)
    (w, b), _ = make_learner(spec, seed=0).params_raw()
    rows = _words(tmp_path / "weights_l000.mem", spec.coef_t.width, 3)
    assert rows == np.concatenate([w, b[:, None]], axis=1).tolist()


def test_parameters_follow_the_spec():
    spec = KANSpec(widths=(1, 1), grid_size=5)
    params = rtl_parameters(spec)
    g = spec.grid_constants()
    assert (params["INV_H"], params["INV_H_FRAC"], params["U_SHIFT"], params["LO_RAW"]) == (
        g.inv_h_raw, g.inv_h_frac, g.u_shift, g.lo_raw,
    )
    assert params["INV_H"] > 1  # h = 0.4: the grid coordinate needs a real multiply
    assert (params["W_COEF"], params["F_COEF"], params["Q_COEF"], params["O_COEF"]) == (16, 10, 4, 0)
    assert params["PIPE"] == "64'd0" and rtl_parameters(spec, "staged")["PIPE"] == "64'd1"


def test_bad_input_is_refused(tmp_path):
    (tmp_path / "keep.txt").write_text("user file")
    with pytest.raises(FileExistsError, match="--force"):
        emit_rtl(KANSpec(), tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "user file"
    with pytest.raises(ValueError, match="seed=-1"):
        emit_rtl(KANSpec(), tmp_path / "new", seed=-1)
    with pytest.raises(ValueError, match="at most 7 layers"):
        rtl_parameters(KANSpec(widths=(1,) * 9))
    with pytest.raises(FileNotFoundError, match=RTL_MANIFEST):
        load_rtl_manifest(tmp_path)
