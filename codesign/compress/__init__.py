"""LLM weight compression: k-means, integer, VQ and Q + L R quantizers, and low-bit matmul dispatch.

Quantize a weight with a config (`quantize(w, KMeansConfig(bits=2))`), multiply with
`lowbit_matmul(x, qw)` (Triton kernel on a supported GPU, torch reference elsewhere), or swap an
nn.Linear for a `QuantizedLinear`. Storage formats: docs/compress_formats.md.
"""

from codesign.compress.formats import PackingFormat, format_for_bits, pack_codes, unpack_codes
from codesign.compress.integer import IntConfig, quantize_int
from codesign.compress.kmeans import KMeansConfig, lloyd_max, quantize_kmeans
from codesign.compress.linear import CompressConfig, QuantizedLinear, quantize
from codesign.compress.matmul import lowbit_matmul, reference_matmul, reset_fallback_warnings
from codesign.compress.metrics import activation_covariance, activation_error, relative_error
from codesign.compress.qer import QERConfig, activation_scaling, choose_preserved_rank, quantize_qer
from codesign.compress.qtensor import LowRankQuantizedWeight, QuantizedWeight, ScalarQuantizedWeight, VQWeight
from codesign.compress.vq import VQConfig, quantize_vq, vq_training_weight

__all__ = [
    "PackingFormat",
    "format_for_bits",
    "pack_codes",
    "unpack_codes",
    "KMeansConfig",
    "IntConfig",
    "VQConfig",
    "QERConfig",
    "CompressConfig",
    "quantize",
    "quantize_kmeans",
    "quantize_int",
    "quantize_vq",
    "quantize_qer",
    "lloyd_max",
    "vq_training_weight",
    "activation_scaling",
    "choose_preserved_rank",
    "ScalarQuantizedWeight",
    "VQWeight",
    "LowRankQuantizedWeight",
    "QuantizedWeight",
    "QuantizedLinear",
    "lowbit_matmul",
    "reference_matmul",
    "reset_fallback_warnings",
    "activation_covariance",
    "relative_error",
    "activation_error",
]
