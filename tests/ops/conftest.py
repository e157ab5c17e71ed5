"""Shared set-up of the operation tests: the specs, their HLS libraries (built once a session), their vectors."""

from __future__ import annotations

import pytest

from codesign.kan.spec import KANSpec, MLPSpec
from tests.ops.hls_library import KanOnlineOps, MlpOnlineOps

# The default spec (1/h a power of two: the grid multiply is a shift) and one with 1/h = 3 (a real
# multiply), k = 2 (3 banks, not a power of two) and a 5-bit ROM address.
SPECS = {"default": KANSpec(), "g6_k2": KANSpec(grid_size=6, spline_order=2, lut_bits=5)}


@pytest.fixture(scope="session", params=sorted(SPECS))
def spec_name(request: pytest.FixtureRequest) -> str:
    """The name of a spec of SPECS."""
    return request.param


@pytest.fixture(scope="session")
def hls_ops(spec_name: str, tmp_path_factory: pytest.TempPathFactory) -> KanOnlineOps:
    """The HLS functions compiled for the spec (cached for the session)."""
    return KanOnlineOps(SPECS[spec_name], tmp_path_factory.mktemp(f"hls_{spec_name}"))


@pytest.fixture(scope="session")
def kan_layer_sv(tmp_path_factory: pytest.TempPathFactory):
    """One run of rtl/kan_layer.sv (spec g6_k2, a 2 -> 2 last layer) beside the Python operations on the same samples."""
    from tests.ops.kan_layer_run import run_kan_layer

    return run_kan_layer(SPECS["g6_k2"], tmp_path_factory.getbasetemp() / "kan_layer_g6_k2")


# Two small MLPs, one per hidden activation; two layers each, as mlp_online_ops.cpp instantiates.
MLP_SPECS = {"relu": MLPSpec(widths=(3, 5, 2), activation="relu"), "hardtanh": MLPSpec(widths=(3, 5, 2), activation="hardtanh")}


@pytest.fixture(scope="session", params=sorted(MLP_SPECS))
def mlp_spec_name(request: pytest.FixtureRequest) -> str:
    """The name of a spec of MLP_SPECS."""
    return request.param


@pytest.fixture(scope="session")
def mlp_hls_ops(mlp_spec_name: str, tmp_path_factory: pytest.TempPathFactory) -> MlpOnlineOps:
    """The HLS functions of mlp_online.h compiled for the spec (cached for the session)."""
    return MlpOnlineOps(MLP_SPECS[mlp_spec_name], tmp_path_factory.mktemp(f"hls_mlp_{mlp_spec_name}"))
