"""Kernel tests run Triton's interpreter on CPU tensors: the switch must be set before any kernel is defined."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

from tests.support import one_torch_thread  # noqa: E402


@pytest.fixture(autouse=True)
def single_thread():
    """These tests use small tensors, where a second thread costs more (on a shared 2-core runner) than it saves."""
    with one_torch_thread():
        yield


@pytest.fixture
def interpreted_kernels():
    """Fail (not skip) when the kernels were defined before TRITON_INTERPRET=1 was set: CI must not lose them."""
    from codesign.kernels.lut_matmul import is_interpreted

    if not is_interpreted():
        pytest.fail("codesign.kernels was imported before TRITON_INTERPRET=1 was set; the kernel tests cannot run")
