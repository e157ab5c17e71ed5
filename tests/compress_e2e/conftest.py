"""End-to-end compression tests: a few Wikipedia sentences, one torch thread (the models come from tests/conftest.py)."""

import pytest

from tests.support import one_torch_thread


@pytest.fixture(scope="session")
def minilm_sentences():
    """Calibration (train) and held-out (test) Wikipedia sentences, few of each."""
    from codesign.llm import wiki_sentences

    return {"train": wiki_sentences("train", 32), "test": wiki_sentences("test", 32)}


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """One torch thread (tests.support.one_torch_thread: measured 4x faster here on a shared 2-core runner)."""
    with one_torch_thread():
        yield
