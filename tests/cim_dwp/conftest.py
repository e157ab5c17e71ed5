"""One torch thread in these tests: on a busy machine, two OpenMP threads made F.unfold of a
small batch take seconds instead of a millisecond (spinning threads waiting for a core)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
