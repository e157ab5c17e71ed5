"""Exact intermediate types of the HLS datapath (docs/arithmetic.md §9), per layer.

Sums and products in the arithmetic spec are exact. The HLS library declares each exact
intermediate as an ``ap_fixed`` with the fractional bits of its terms and enough integer bits
for the largest possible magnitude, so that the only rounding or saturation is the one cast
the spec names. Widths are at least those of §9; where a bound of §9 does not cover a case
(an ``err_t`` wider than ``grad_t`` in the backward sum, a learning-rate step larger than the
coefficient range in the update), the width grows to the exact bound, so C-sim stays exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from codesign.fixed import FixedType
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["ExactType", "KANLayerTypes", "MLPLayerTypes", "kan_layer_types", "mlp_layer_types"]


@dataclass(frozen=True)
class ExactType:
    """A wrap-free intermediate: ``width`` bits with ``frac`` fractional bits (modes AP_TRN, AP_WRAP)."""

    width: int
    frac: int
    signed: bool = True

    @property
    def int_bits(self) -> int:
        """Integer bits (width - frac)."""
        return self.width - self.frac

    def __str__(self) -> str:
        return f"{'ap_fixed' if self.signed else 'ap_ufixed'}<{self.width},{self.int_bits}>"


@dataclass(frozen=True)
class KANLayerTypes:
    """The types one KAN layer's configuration struct declares."""

    g_t: FixedType  # gradient at the layer's outputs: err_t (last layer) or grad_t
    fwd_acc_t: ExactType  # sum_i sum_j B * c
    dacc_t: ExactType  # sum_j D * c
    bwd_sum_t: ExactType  # sum_o g * dphi
    upd_t: ExactType  # c - 2^-s * g * B


@dataclass(frozen=True)
class MLPLayerTypes:
    """The types one MLP layer's configuration struct declares."""

    g_t: FixedType  # gradient at the layer's outputs
    acc_t: ExactType  # b + sum_i w * x
    bwd_sum_t: ExactType  # sum_o g * w
    upd_t: ExactType  # w - 2^-s * g * x


def _sum_growth(terms: int) -> int:
    """Bits a sum of ``terms`` equal-width terms grows by, with the spare bit of §9."""
    return math.ceil(math.log2(max(terms, 1))) + 1


def _update_type(coef_t: FixedType, g_t: FixedType, other: FixedType, lr_shift: int, lr_shift_max: int) -> ExactType:
    """Exact type of c - 2^-s * g * v for c: coef_t, g: g_t, v: other (an input or a basis value), any s in lr_shift..lr_shift_max."""
    frac = max(coef_t.frac, g_t.frac + other.frac + lr_shift_max)
    # |c| <= 2^(I_c - 1), |2^-s g v| <= 2^(I_g + I_v - 1 - s): the difference needs one bit more
    # than the larger; the doc's width (W_coef + max(0, F_delta - F_coef) + 2) is kept as a floor.
    int_bits = max(coef_t.int_bits, g_t.int_bits + max(other.int_bits, 1) - lr_shift) + 1
    width = max(int_bits + frac, coef_t.width + max(0, g_t.frac + other.frac + lr_shift_max - coef_t.frac) + 2)
    return ExactType(width, frac)


def kan_layer_types(spec: KANSpec, layer: int) -> KANLayerTypes:
    """The exact intermediates of KAN layer ``layer`` (0 = input layer)."""
    n_layers = len(spec.layer_shapes)
    g_t = spec.err_t if layer == n_layers - 1 else spec.grad_t
    growth = _sum_growth(max(spec.widths) * (spec.spline_order + 1))
    fwd = ExactType(spec.basis_t.width + spec.coef_t.width + growth, spec.basis_t.frac + spec.coef_t.frac)
    dacc = ExactType(spec.dbasis_t.width + spec.coef_t.width + growth, spec.dbasis_t.frac + spec.coef_t.frac)
    bwd = ExactType(g_t.width + spec.dphi_t.width + growth, g_t.frac + spec.dphi_t.frac)
    return KANLayerTypes(g_t, fwd, dacc, bwd, _update_type(spec.coef_t, g_t, spec.basis_t, spec.lr_shift, spec.lr_shift_max))


def mlp_layer_types(spec: MLPSpec, layer: int) -> MLPLayerTypes:
    """The exact intermediates of MLP layer ``layer`` (0 = input layer)."""
    n_layers = len(spec.layer_shapes)
    n_in, n_out = spec.layer_shapes[layer]
    g_t = spec.err_t if layer == n_layers - 1 else spec.grad_t
    # n_in products and the bias: the same bound as MLPSpec's check of the dense accumulator.
    acc = ExactType(spec.coef_t.width + spec.act_t.width + _sum_growth(n_in + 1) + 1, spec.coef_t.frac + spec.act_t.frac)
    bwd = ExactType(g_t.width + spec.coef_t.width + _sum_growth(n_out), g_t.frac + spec.coef_t.frac)
    return MLPLayerTypes(g_t, acc, bwd, _update_type(spec.coef_t, g_t, spec.act_t, spec.lr_shift, spec.lr_shift_max))
