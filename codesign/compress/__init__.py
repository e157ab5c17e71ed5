"""LLM weight compression: k-means, integer, VQ and Q + L R quantizers, and low-bit matmul dispatch.

Quantize a model's linears in place (`quantize_(model, KMeansConfig(bits=4))`), save and load it
(`save_compressed(model, dir)`, `load_compressed(dir)`), quantize a weight with a config
(`quantize(w, KMeansConfig(bits=2))`), multiply with
`lowbit_matmul(x, qw)` (Triton kernel on a supported GPU, torch reference elsewhere), or swap an
nn.Linear for a `QuantizedLinear`. Storage formats: docs/compress_formats.md.
"""

import importlib
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
