"""The harness tests load real packaged models: skipped only where the llm extra is not installed."""

import pytest

from codesign.llm import missing_llm_packages

MISSING = missing_llm_packages()
requires_llm = pytest.mark.skipif(bool(MISSING), reason=f"llm extra not installed: {', '.join(MISSING)}")


@pytest.fixture(scope="session")
def gemma():
    """(model, tokenizer); a loading failure with the extra installed is an error, not a skip."""
    from codesign.llm import load_gemma

    return load_gemma()


@pytest.fixture(scope="session")
def minilm():
    from codesign.llm import load_minilm

    return load_minilm()
