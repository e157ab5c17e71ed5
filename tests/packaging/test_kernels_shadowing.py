"""Run from the repository root, the checkout's kernels/ must not shadow the `kernels` distribution transformers imports."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_importing_codesign_from_the_repository_root_imports_the_kernels_distribution():
    # python -c puts the working directory first on sys.path, as pytest and a REPL started there do
    code = "import codesign, sys; m = sys.modules.get('kernels'); print(m.__file__ if m else '')"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    if _installed("kernels"):
        assert out and not Path(out).resolve().is_relative_to(ROOT / "kernels"), out
    else:
        assert out == ""  # nothing to shadow, nothing imported
    # and a transformers model builds there (the failure the shadowing caused)
    if _installed("transformers"):
        build = ("import codesign, transformers; c = transformers.LlamaConfig(vocab_size=32, hidden_size=16, "
                 "intermediate_size=32, num_hidden_layers=1, num_attention_heads=2); transformers.LlamaForCausalLM(c)")
        subprocess.run([sys.executable, "-c", build], cwd=ROOT, capture_output=True, text=True, check=True)
