"""Perturbed weight realizations for noise-aware training: K simulated chips of one weight.

``sample_weights(weight, config, k, seed)`` maps a weight tensor (Linear or Conv2d) onto K
chips with the crossbar's mapping (per-tile scaling, device model, faults, IR drop, drift to
``t_seconds`` with global compensation, optionally one read-noise draw) and returns the K
realized weights in weight units, shaped (K, *weight.shape). Gradients pass straight
through to ``weight`` (the returned tensor is ``weight + (realized − weight).detach()``),
the usual estimator of noise-injection training. Converters are not part of a weight
realization; use the CIM layers to include them.
"""

from __future__ import annotations

from torch import Tensor

from codesign.cim.config import CIMConfig
from codesign.cim.crossbar import Crossbar

__all__ = ["sample_weights"]


def sample_weights(weight: Tensor, config: CIMConfig, k: int, seed: int, t_seconds: float = 0.0,
                   read_noise: bool = True, layer_id: int = 0) -> Tensor:
    """K device realizations of a weight, (K, *weight.shape), differentiable (straight-through)."""
    if not isinstance(weight, Tensor) or weight.dim() < 2:
        raise ValueError(f"weight: expected a tensor with at least 2 dimensions (out, in, ...), got {type(weight).__name__}")
    out_features = weight.shape[0]
    matrix = weight.detach().reshape(out_features, -1)
    crossbar = Crossbar(matrix.shape[1], out_features, config)
    crossbar.program(matrix, seed, n_chips=k, layer_id=layer_id)
    if t_seconds:
        crossbar.drift_to(t_seconds)
    realized = crossbar.realized_weights(read_noise=read_noise).reshape(k, *weight.shape).to(weight.dtype)
    return weight.unsqueeze(0) + (realized - weight.unsqueeze(0)).detach()
