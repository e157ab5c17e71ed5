"""Shared set-up of the operation tests: the specs, their HLS libraries (built once a session), their vectors."""

from __future__ import annotations

import pytest

from codesign.kan.spec import KANSpec
from tests.ops.hls_library import KanOnlineOps

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
