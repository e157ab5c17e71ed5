"""The HLS functions as shared libraries: kan_online_ops.cpp (and mlp_online_ops.cpp) compiled with g++ for one spec, called through ctypes.

The library is built from the generated firmware headers of the spec (parameters.h, basis_roms.h,
as the HLS project has them) and the headers of hls/codesign, like hls4ml's bridge to its C++.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np

from codesign.fpga.csim import find_ap_types, find_compiler
from codesign.fpga.kan.firmware import render_firmware
from codesign.fpga.mlp.firmware import render_firmware as render_mlp_firmware
from codesign.kan.fixed_learner import init_kan_coefficients
from codesign.kan.mlp_learner import init_mlp_weights
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.resources import resource_dir

HERE = Path(__file__).resolve().parent
_I64 = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")


def compile_shared(source: Path, folder: Path, name: str, flags: list[str] = ()) -> ctypes.CDLL:
    """g++ -shared -fPIC source (with the ap_types and hls/codesign headers) into folder/name.so, loaded."""
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}.so"
    command = [
        find_compiler(), "-O1", "-std=c++14", "-shared", "-fPIC", "-w", f"-I{find_ap_types()}",
        f"-I{resource_dir('hls') / 'codesign'}", f"-I{folder}", *flags, str(source), "-o", str(library),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"g++ failed on {source.name}:\n{done.stderr[-3000:]}"
    return ctypes.CDLL(str(library))


class KanOnlineOps:
    """The HLS functions of kan_online.h for one two-layer spec; every method takes and returns raw int64 arrays."""

    def __init__(self, spec: KANSpec, folder: Path):
        if len(spec.layer_shapes) != 2:
            raise ValueError("kan_online_ops.cpp instantiates two layers")
        self.spec = spec
        folder.mkdir(parents=True, exist_ok=True)
        firmware = render_firmware(spec, init_kan_coefficients(spec), seed=0)
        for name in ("parameters.h", "basis_roms.h"):
            (folder / name).write_text(firmware[f"firmware/{name}"])
        self.lib = compile_shared(HERE / "kan_online_ops.cpp", folder, "kan_online_ops")
        signatures = {
            "ops_grid_coordinate": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64, _I64],
            "ops_read_rom": [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, _I64, _I64],
            "ops_read_window": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64],
            "ops_layer_forward": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64],
            "ops_layer_input_gradient": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64, _I64, _I64],
            "ops_layer_update": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64, _I64, _I64],
            "ops_output_error": [ctypes.c_longlong, _I64, _I64, _I64],
        }
        for name, args in signatures.items():
            getattr(self.lib, name).argtypes = args
            getattr(self.lib, name).restype = ctypes.c_int

    def _shape(self, layer: int) -> tuple[int, int, int, int]:
        n_in, n_out = self.spec.layer_shapes[layer]
        return n_in, n_out, self.spec.spline_order + 1, self.spec.n_coef

    @staticmethod
    def _arr(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    def _check(self, status: int) -> None:
        assert status == 0, "the HLS wrapper has no such layer"

    def grid_coordinate(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cell, addr, clamped) of each raw act_t value."""
        x = self._arr(x)
        cell, addr, clamped = (np.zeros_like(x) for _ in range(3))
        self._check(self.lib.ops_grid_coordinate(0, x.size, x, cell, addr, clamped))
        return cell, addr, clamped

    def read_rom(self, layer: int, addr: np.ndarray, derivative: bool) -> np.ndarray:
        """(n, n_in) addresses -> (n, n_in, k1) raw basis (or derivative) values."""
        n_in, _, k1, _ = self._shape(layer)
        addr = self._arr(addr).reshape(-1, n_in)
        values = np.zeros((addr.shape[0], n_in, k1), dtype=np.int64)
        self._check(self.lib.ops_read_rom(layer, int(derivative), addr.shape[0], addr, values))
        return values

    def read_window(self, layer: int, coef: np.ndarray, cell: np.ndarray) -> np.ndarray:
        """(n, o, i, m) coefficients and (n, n_in) cells -> (n, o, i, k1) windows."""
        n_in, n_out, k1, _ = self._shape(layer)
        coef, cell = self._arr(coef), self._arr(cell)
        window = np.zeros((coef.shape[0], n_out, n_in, k1), dtype=np.int64)
        self._check(self.lib.ops_read_window(layer, coef.shape[0], coef, cell, window))
        return window

    def layer_forward(self, layer: int, window: np.ndarray, basis: np.ndarray) -> np.ndarray:
        """(n, o, i, k1) windows and (n, i, k1) basis values -> (n, o) raw act_t outputs."""
        _, n_out, _, _ = self._shape(layer)
        window, basis = self._arr(window), self._arr(basis)
        y = np.zeros((window.shape[0], n_out), dtype=np.int64)
        self._check(self.lib.ops_layer_forward(layer, window.shape[0], window, basis, y))
        return y

    def layer_input_gradient(self, layer: int, window: np.ndarray, dbasis: np.ndarray, clamped: np.ndarray,
                             g_out: np.ndarray) -> np.ndarray:
        """(n, i) raw grad_t gradients at the layer's inputs."""
        n_in, _, _, _ = self._shape(layer)
        window, dbasis, clamped, g_out = map(self._arr, (window, dbasis, clamped, g_out))
        g_in = np.zeros((window.shape[0], n_in), dtype=np.int64)
        self._check(self.lib.ops_layer_input_gradient(layer, window.shape[0], window, dbasis, clamped, g_out, g_in))
        return g_in

    def output_error(self, y_hat: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(n, n_out) raw act_t predictions and targets -> (n, n_out) raw err_t errors."""
        y_hat, y = self._arr(y_hat), self._arr(y)
        e = np.zeros_like(y_hat)
        self._check(self.lib.ops_output_error(y_hat.shape[0], y_hat, y, e))
        return e

    def layer_update(self, layer: int, coef: np.ndarray, cell: np.ndarray, window: np.ndarray, basis: np.ndarray,
                     g_out: np.ndarray) -> np.ndarray:
        """The updated (n, o, i, m) coefficients (a copy)."""
        coef = self._arr(coef).copy()
        cell, window, basis, g_out = map(self._arr, (cell, window, basis, g_out))
        self._check(self.lib.ops_layer_update(layer, coef.shape[0], coef, cell, window, basis, g_out))
        return coef


class MlpOnlineOps:
    """The HLS functions of mlp_online.h (and output_error) for one two-layer MLP spec, on raw int64 arrays."""

    def __init__(self, spec: MLPSpec, folder: Path):
        if len(spec.layer_shapes) != 2:
            raise ValueError("mlp_online_ops.cpp instantiates two layers")
        self.spec = spec
        folder.mkdir(parents=True, exist_ok=True)
        firmware = render_mlp_firmware(spec, init_mlp_weights(spec), seed=0)
        (folder / "parameters.h").write_text(firmware["firmware/parameters.h"])
        # parameters.h includes "codesign/mlp_online.h"
        self.lib = compile_shared(HERE / "mlp_online_ops.cpp", folder, "mlp_online_ops", [f"-I{resource_dir('hls')}"])
        signatures = {
            "ops_dense_forward": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64, _I64],
            "ops_activation_mask": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64],
            "ops_dense_input_gradient": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64],
            "ops_dense_update": [ctypes.c_int, ctypes.c_longlong, _I64, _I64, _I64],
            "ops_output_error": [ctypes.c_longlong, _I64, _I64, _I64],
        }
        for name, args in signatures.items():
            getattr(self.lib, name).argtypes = args
            getattr(self.lib, name).restype = ctypes.c_int

    @staticmethod
    def _arr(a: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.int64)

    def dense_forward(self, layer: int, w: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, o, n_in + 1) weights and (n, n_in) inputs -> (z, y), each (n, n_out): the cast sums and the activations."""
        w, x = self._arr(w), self._arr(x)
        n_out = self.spec.layer_shapes[layer][1]
        z, y = np.zeros((w.shape[0], n_out), np.int64), np.zeros((w.shape[0], n_out), np.int64)
        assert self.lib.ops_dense_forward(layer, w.shape[0], w, x, z, y) == 0
        return z, y

    def activation_mask(self, layer: int, z: np.ndarray, g: np.ndarray) -> np.ndarray:
        """(n, n_out) cast sums and output gradients -> the gradients through the activation."""
        z, g = self._arr(z), self._arr(g)
        out = np.zeros_like(g)
        assert self.lib.ops_activation_mask(layer, z.shape[0], z, g, out) == 0
        return out

    def dense_input_gradient(self, layer: int, w: np.ndarray, g_out: np.ndarray) -> np.ndarray:
        """(n, o, n_in + 1) weights and (n, n_out) gradients -> (n, n_in) raw grad_t gradients at the inputs."""
        w, g_out = self._arr(w), self._arr(g_out)
        g_in = np.zeros((w.shape[0], self.spec.layer_shapes[layer][0]), np.int64)
        assert self.lib.ops_dense_input_gradient(layer, w.shape[0], w, g_out, g_in) == 0
        return g_in

    def dense_update(self, layer: int, w: np.ndarray, x: np.ndarray, g_out: np.ndarray) -> np.ndarray:
        """The updated (n, o, n_in + 1) weights (a copy)."""
        w = self._arr(w).copy()
        assert self.lib.ops_dense_update(layer, w.shape[0], w, self._arr(x), self._arr(g_out)) == 0
        return w

    def output_error(self, y_hat: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(n, n_out) raw act_t predictions and targets -> (n, n_out) raw err_t errors."""
        y_hat, y = self._arr(y_hat), self._arr(y)
        e = np.zeros_like(y_hat)
        assert self.lib.ops_output_error(y_hat.shape[0], y_hat, y, e) == 0
        return e
