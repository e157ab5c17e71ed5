"""One torch thread in these tests (tests.support.one_torch_thread)."""

import pytest

from tests.support import one_torch_thread


@pytest.fixture(autouse=True)
def _one_torch_thread():
    with one_torch_thread():
        yield
