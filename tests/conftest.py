"""Suite-wide set-up: Triton kernels run in the interpreter on CPU tensors; the packaged LLMs as fixtures.

Triton decides interpreter-or-compiler when a kernel is defined, so the switch is set here,
before any test module imports codesign.kernels. CODESIGN_TEST_GPU=1 runs them compiled on a GPU.
"""

import os

if os.environ.get("CODESIGN_TEST_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def gemma():
    """(Gemma-3-270M causal LM, tokenizer); a loading failure with the llm extra installed is an error, not a skip."""
    from codesign.llm import load_gemma

    return load_gemma()


@pytest.fixture(scope="session")
def minilm():
    """(MiniLM encoder, tokenizer)."""
    from codesign.llm import load_minilm

    return load_minilm()
