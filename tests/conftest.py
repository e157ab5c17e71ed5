"""Suite-wide set-up: Triton in the interpreter on CPU tensors; tiers; global RNGs seeded per test; the packaged LLMs as fixtures.

Triton decides interpreter-or-compiler when a kernel is defined, so the switch is set here,
before any test module imports codesign.kernels. CODESIGN_TEST_GPU=1 runs them compiled on a GPU.
"""

import os
import random
import sys

if os.environ.get("CODESIGN_TEST_GPU") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

import codesign  # noqa: E402,F401  (imports the kernels distribution before the checkout's kernels/ can shadow it)

_TESTS = Path(__file__).parent
_LLM_FIXTURES = {"gemma", "minilm"}


def _tiers(item: pytest.Item) -> set[str]:
    """The tiers of a test, from where it lives and what it uses: rtl (Verilator), synth (Yosys), llm (packaged models)."""
    parts = Path(str(item.fspath)).resolve().relative_to(_TESTS.resolve()).parts
    tiers = set()
    if parts[-1].startswith(("test_synth", "test_pnr")):
        tiers.add("synth")
    elif parts[0] == "sim" or (parts[0] == "ops" and item.name.split("[")[0].endswith("_sv")):
        tiers.add("rtl")  # tests/ops: only the SystemVerilog harnesses; the HLS (g++ + ctypes) ones are fast
    if parts[0] in ("llm", "compress_e2e") or _LLM_FIXTURES & set(getattr(item, "fixturenames", ())):
        tiers.add("llm")
    return tiers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tiers, so that `-m "not rtl and not synth and not llm"` is the fast run."""
    for item in items:
        for tier in _tiers(item):
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def _seeded_global_generators() -> None:
    """Every test starts from the same global RNG state (torch, numpy, random), whatever ran before it.

    Tests draw from their own seeded generators; this keeps a test that reaches a global one (directly or
    inside a library) independent of the order and the subset of tests run.
    """
    random.seed(0)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(0)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(0)


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
