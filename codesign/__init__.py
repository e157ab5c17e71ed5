"""codesign: hardware/algorithm co-design for machine learning."""

import importlib
import os
import sys
from pathlib import Path

__version__ = "0.1.0"
__all__ = ["__version__"]


def _import_the_kernels_distribution() -> None:
    """Import the `kernels` distribution (transformers >= 5.25 imports it) before a source checkout's kernels/ can
    shadow it.

    Run from the repository root (pytest, python -c, a REPL), the folder kernels/ (installed as codesign.kernels) is the
    first `kernels` on sys.path, and every transformers model then fails to build.
    """
    root = Path(__file__).resolve().parent.parent
    if "kernels" in sys.modules or not (root / "pyproject.toml").is_file():
        return  # already imported, or an installed wheel: no checkout folder to shadow anything
    shadowing = [p for p in sys.path if Path(p or os.getcwd()).resolve() == root]
    if not shadowing:
        return
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if p not in shadowing]
    try:
        importlib.import_module("kernels")
    except ImportError:  # the distribution is not installed (the llm extra is optional): transformers will not ask
        pass
    finally:
        sys.path[:] = saved


_import_the_kernels_distribution()

# registers the "codesign" quantization method with transformers (from_pretrained of a compressed folder); light
import codesign.compress  # noqa: E402, F401
