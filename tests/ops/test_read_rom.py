"""read_rom (§3): the Python function, the HLS function and rtl/kan_decode.sv (grid, ROM read, bank rotation).

kan_decode reads the ROM at the address its kan_grid computes and rotates the k+1 values into
bank order (bank b holds window position j = (b - cell) mod P, unused when j > k): the test undoes
the rotation and compares the values of every input with the Python grid_coordinate + read_rom.
"""

from __future__ import annotations

import numpy as np
import pytest

from codesign.kan.kan_online import grid_coordinate, read_rom
from tests.ops.conftest import SPECS
from tests.ops.rtl_vectors import pack, run_module, unpack
from tests.ops.test_grid_coordinate import grid_inputs
from tests.ops.vectors import reference_tables


def _python_read_rom(rom: np.ndarray, addr: np.ndarray) -> np.ndarray:
    values = np.zeros((1, addr.size, rom.shape[0]), dtype=np.int64)
    read_rom(np.ascontiguousarray(addr, dtype=np.int64)[None], rom, values, 0, addr.size)
    return values[0]


@pytest.mark.parametrize("derivative", [False, True], ids=["basis", "dbasis"])
def test_read_rom_python_equals_hls_at_every_address(spec_name, hls_ops, derivative):
    spec = SPECS[spec_name]
    _, _, brom, drom = reference_tables(spec)
    n_in = spec.layer_shapes[0][0]
    # every address once, then every address in reverse (each input of a vector sees each address)
    addr = np.concatenate([np.arange(1 << spec.lut_bits), np.arange(1 << spec.lut_bits)[::-1]])
    py = _python_read_rom(drom if derivative else brom, addr)
    hls = hls_ops.read_rom(0, addr.reshape(-1, n_in), derivative).reshape(-1, spec.spline_order + 1)
    bad = np.argwhere(py != hls)
    assert bad.size == 0, f"address {addr[bad[:5, 0]]} j {bad[:5, 1]}: python {py[tuple(bad[:5].T)]} hls {hls[tuple(bad[:5].T)]}"


def _kan_decode(spec, build, **cuts):
    """kan_decode's parameters for `spec` (its ROMs written into `build`), two inputs, plus `cuts`."""
    _, _, brom, drom = reference_tables(spec)
    g = spec.grid_constants()
    k1 = spec.spline_order + 1
    banks = 1 << (k1 - 1).bit_length()
    build.mkdir(parents=True, exist_ok=True)
    for name, rom, t in (("basis.mem", brom, spec.basis_t), ("dbasis.mem", drom, spec.dbasis_t)):
        digits = (k1 * t.width + 3) // 4
        (build / name).write_text("".join(f"{w:0{digits}x}\n" for w in pack(rom.T, t.width)))
    w_baddr = max(1, (-(-spec.n_coef // banks)).bit_length())
    return dict(N_IN=2, G=spec.grid_size, K=spec.spline_order, A=spec.lut_bits, P=banks, W_BADDR=w_baddr,
                W_ACT=spec.act_t.width, W_B=spec.basis_t.width, W_D=spec.dbasis_t.width, LO_RAW=g.lo_raw,
                INV_H=g.inv_h_raw, U_SHIFT=g.u_shift, HAS_D=1,
                BASIS_FILE=f'"{build / "basis.mem"}"', DBASIS_FILE=f'"{build / "dbasis.mem"}"', **cuts)


_DECODE_SOURCES = ["pipe_reg.sv", "const_mult.sv", "kan_grid.sv", "kan_decode.sv"]


def test_read_rom_python_equals_kan_decode_sv(tmp_path_factory):
    spec_name = "g6_k2"  # k + 1 = 3 values in P = 4 banks: the rotation and an unused bank
    spec = SPECS[spec_name]
    _, grid, brom, drom = reference_tables(spec)
    k1, n_in = spec.spline_order + 1, 2
    banks = 1 << (k1 - 1).bit_length()
    x = grid_inputs(spec, np.random.default_rng(3))
    x = x[: x.size // n_in * n_in].reshape(-1, n_in)
    build = tmp_path_factory.getbasetemp() / f"kan_decode_{spec_name}"
    params = _kan_decode(spec, build)
    out = run_module(_DECODE_SOURCES, "kan_decode", params, {"x": pack(x, spec.act_t.width)}, ["bb", "db", "used"], build)
    bb = unpack(out["bb"], spec.basis_t.width, n_in * banks, spec.basis_t.signed).reshape(-1, n_in, banks)
    db = unpack(out["db"], spec.dbasis_t.width, n_in * banks, spec.dbasis_t.signed).reshape(-1, n_in, banks)
    used = unpack(out["used"], 1, n_in * banks, False).reshape(-1, n_in, banks)
    for t in range(x.shape[0]):
        for i in range(n_in):
            cell, addr, _ = grid_coordinate(int(x[t, i]), grid)
            for rom, sv, name in ((brom, bb, "basis"), (drom, db, "dbasis")):
                py = _python_read_rom(rom, np.array([addr]))[0]
                for b in range(banks):
                    j = (b - cell) % banks
                    assert used[t, i, b] == (j < k1), f"x={x[t, i]} bank {b}: used {used[t, i, b]}"
                    expect = py[j] if j < k1 else 0
                    assert sv[t, i, b] == expect, f"{name} x={x[t, i]} (cell {cell}, addr {addr}) j={j}: sv {sv[t, i, b]} python {expect}"


def test_kan_decode_rows_register_delays_only_the_basis_rows_sv(tmp_path_factory):
    # CUT_ROWS registers bb and db alone: read before each clock edge they hold the previous input's
    # rows, while the bank addresses and `used` (which go on to the banks) follow the input at once
    spec = SPECS["g6_k2"]
    x = grid_inputs(spec, np.random.default_rng(4))
    x = x[: x.size // 2 * 2].reshape(-1, 2)
    outs = ["bb", "db", "baddr", "used"]
    runs = {}
    for rows in (0, 1):
        build = tmp_path_factory.getbasetemp() / f"kan_decode_rows{rows}"
        runs[rows] = run_module(_DECODE_SOURCES, "kan_decode", _kan_decode(spec, build, CUT_ROWS=rows),
                                {"x": pack(x, spec.act_t.width)}, outs, build, clock=True)
    for name in ("bb", "db"):
        assert runs[1][name][1:] == runs[0][name][:-1], f"{name} is not the previous input's with CUT_ROWS=1"
        assert runs[1][name][1:] != runs[0][name][1:], f"{name} follows the input at once with CUT_ROWS=1"
    for name in ("baddr", "used"):
        assert runs[1][name] == runs[0][name], f"{name} is delayed by CUT_ROWS"
