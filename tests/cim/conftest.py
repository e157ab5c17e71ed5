"""Run the CIM tests single-threaded: their tensors are small, and on a busy shared machine
every OpenMP region waits for a descheduled thread (measured here: unfold of a 30x1x8x8 batch
takes 20 ms with two threads at load 9, 0.5 ms with one). The setting is restored afterwards."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True, scope="package")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
