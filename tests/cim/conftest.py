"""Run the CIM tests single-threaded (tests.support.one_torch_thread)."""

import pytest

from tests.support import one_torch_thread


@pytest.fixture(autouse=True, scope="package")
def _one_thread():
    with one_torch_thread():
        yield
