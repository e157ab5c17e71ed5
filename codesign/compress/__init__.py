"""LLM weight compression: k-means, integer, VQ and Q + L R quantizers, and low-bit matmul dispatch.

Quantize a model's linears in place (`quantize_(model, KMeansConfig(bits=4))`), save and load it
(`save_compressed(model, dir)`, `load_compressed(dir)`), quantize a weight with a config
(`quantize(w, KMeansConfig(bits=2))`), multiply with
`lowbit_matmul(x, qw)` (Triton kernel on a supported GPU, torch reference elsewhere), or swap an
nn.Linear for a `QuantizedLinear`. Storage formats: docs/compress_formats.md. Importing this package
registers the quantization method "codesign" with transformers, so that `from_pretrained` loads a saved
folder (codesign.compress.hf_quantizer), without importing transformers itself.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Any

# Public name -> the submodule that defines it. Loaded on first use, so that importing a light
# submodule (the command line's parser, codesign.compress.cli) does not pull in torch and brevitas.
_SOURCES = {
    "apply": ("quantize_", "select_linears"),
    "checkpoint": ("save_compressed", "load_compressed"),
    "block_tune": ("BlockTuneConfig",),
    "e2e_tune": ("EndToEndConfig", "tune_end_to_end"),
    "model_guard": ("ModelGuardConfig", "srr_model_guard"),
    "registry": ("register_quantizer", "needs_covariance", "config_to_dict", "config_from_dict"),
    "formats": ("PackingFormat", "format_for_bits", "pack_codes", "unpack_codes"),
    "gptq": ("ErrorFeedbackConfig", "quantize_error_feedback"),
    "integer": ("IntConfig", "AsymIntConfig", "quantize_int", "quantize_int_asym"),
    "kmeans": ("KMeansConfig", "lloyd_max", "quantize_kmeans"),
    "linear": ("CompressConfig", "QuantizedLinear", "quantize"),
    "matmul": ("lowbit_matmul", "reference_matmul", "reset_fallback_warnings"),
    "metrics": ("activation_covariance", "activation_error", "relative_error"),
    "qer": ("QERConfig", "activation_scaling", "choose_preserved_rank", "quantize_qer"),
    "qtensor": ("LowRankQuantizedWeight", "QuantizedWeight", "ScalarQuantizedWeight", "VQWeight"),
    "vq": ("VQConfig", "quantize_vq", "vq_training_weight"),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = [name for names in _SOURCES.values() for name in names]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'codesign.compress' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"codesign.compress.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# transformers' quantizer registry. Importing it takes seconds (it imports torch and every quantizer), so codesign
# registers its quantizer when something imports it (from_pretrained does), not before.
_REGISTRY = "transformers.quantizers.auto"


def _register(registry: Any) -> None:
    try:
        quantizer = importlib.import_module("codesign.compress.hf_quantizer")
        if hasattr(quantizer, "register"):  # else it is being imported (its import imported the registry): it registers
            quantizer.register(registry)
    except Exception as exc:  # noqa: BLE001 - a transformers codesign cannot extend must still load its own models
        warnings.warn(f"codesign: from_pretrained cannot load codesign-compressed folders with this transformers "
                      f"({type(exc).__name__}: {exc}); use codesign.compress.load_compressed", RuntimeWarning,
                      stacklevel=2)


class _ThenRegister(importlib.abc.Loader):
    """The registry's own loader, followed by codesign's registration once the module has run."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ...: the original loader's
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _register(module)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """A meta path finder that finds nothing itself: it gives transformers' registry, as found, a loader that registers."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != _REGISTRY:
            return None
        sys.meta_path.remove(self)  # once: the registry is imported once, and the finders after it find it
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader)
        return spec


def _register_with_transformers() -> None:
    if _REGISTRY in sys.modules:
        _register(sys.modules[_REGISTRY])
    elif not any(isinstance(finder, _RegisterOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegisterOnImport())


_register_with_transformers()
