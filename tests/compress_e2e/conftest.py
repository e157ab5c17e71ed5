"""Real models for the end-to-end tests: each loaded once per session (the harness also caches them per process)."""

import pytest
import torch

from codesign.llm import missing_llm_packages

MISSING = missing_llm_packages()
requires_llm = pytest.mark.skipif(bool(MISSING), reason=f"llm extra not installed: {', '.join(MISSING)}")


@pytest.fixture(scope="session")
def minilm():
    """(MiniLM encoder, tokenizer)."""
    from codesign.llm import load_minilm

    return load_minilm()


@pytest.fixture(scope="session")
def gemma():
    """(Gemma-3-270M causal LM, tokenizer); a loading failure with the extra installed is an error, not a skip."""
    from codesign.llm import load_gemma

    return load_gemma()


@pytest.fixture(scope="session")
def minilm_sentences():
    """Calibration (train) and held-out (test) Wikipedia sentences, few of each."""
    from codesign.llm import wiki_sentences

    return {"train": wiki_sentences("train", 32), "test": wiki_sentences("test", 32)}


@pytest.fixture(autouse=True, scope="session")
def one_thread():
    """One torch thread: on a shared 2-core runner a second thread waits on the first (measured 4x slower)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
