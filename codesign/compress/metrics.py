"""Reconstruction error measures: plain and activation-weighted, relative to the weight."""

from __future__ import annotations

import torch

__all__ = ["activation_covariance", "relative_error", "activation_error"]


def activation_covariance(x: torch.Tensor) -> torch.Tensor:
    """Second moment E[x x^T] [K, K] in float64 of calibration activations x [..., K]."""
    flat = x.reshape(-1, x.shape[-1]).double()
    if flat.shape[0] == 0:
        raise ValueError("calibration activations are empty")
    return flat.T @ flat / flat.shape[0]


def relative_error(weight: torch.Tensor, approx: torch.Tensor) -> float:
    """||W - Ŵ||_F / ||W||_F."""
    w = weight.double()
    return float((w - approx.double()).norm() / w.norm().clamp(min=1e-300))


def activation_error(weight: torch.Tensor, approx: torch.Tensor, covariance: torch.Tensor) -> float:
    """Relative output error sqrt(E||x (W - Ŵ)^T||^2 / E||x W^T||^2) under the activations' second moment."""
    w = weight.double()
    diff = w - approx.double()
    num = ((diff @ covariance) * diff).sum()
    den = ((w @ covariance) * w).sum()
    return float((num.clamp(min=0) / den.clamp(min=1e-300)).sqrt())
