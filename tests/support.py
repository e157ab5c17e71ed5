"""Pieces shared by the test packages: one torch thread, and the skip for a missing llm extra."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from codesign.llm import missing_llm_packages

LLM_MISSING = missing_llm_packages()
requires_llm = pytest.mark.skipif(bool(LLM_MISSING), reason=f"llm extra not installed: {', '.join(LLM_MISSING)}")


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one intra-op thread inside the block, restored after it.

    The tests using it work on small tensors: on a busy shared 2-core machine a second OpenMP
    thread waits for a core and costs more than it saves (measured: F.unfold of a 30x1x8x8 batch
    20 ms with two threads at load 9, 0.5 ms with one).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
