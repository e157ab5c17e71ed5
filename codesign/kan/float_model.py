"""Floating-point KAN and MLP models (torch) and a predict-then-update online learner.

Layout: a :class:`KANLayer` with ``in_features`` inputs, ``out_features``
outputs, grid size ``G`` and spline order ``k`` holds ``coef`` of shape
``(out, in, G + k)``; edge ``(o, i)`` computes
``phi_{o,i}(x_i) = sum_m coef[o, i, m] B_m(x_i)`` (plus ``base_weight[o, i] *
silu(x_i)`` when the base branch is enabled) and ``y_o = sum_i phi_{o,i}(x_i)``.
The basis ``B_m`` follows :mod:`codesign.kan.bspline` (uniform grid on
``grid_range``, inputs clamped to the grid). There is no bias, normalisation
or grid update.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeGuard, cast

import numpy as np
import torch
from torch import Tensor, nn

from codesign.kan.bspline import (
    bspline_basis,
    knot_vector,
    validate_grid,
)

__all__ = [
    "KANLayer",
    "KAN",
    "MLP",
    "ACTIVATIONS",
]

ACTIVATIONS: tuple[str, ...] = ("relu", "hardtanh", "tanh", "silu")


def _is_int(value: object) -> TypeGuard[int | np.integer]:
    """Return True for a genuine integer (bool excluded)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_positive_int(name: str, value: object) -> None:
    """Raise ValueError unless ``value`` is an integer >= 1."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _check_widths(widths: Sequence[int]) -> tuple[int, ...]:
    """Validate a layer-width list and return it as a tuple of ints."""
    try:
        ws = tuple(widths)
    except TypeError:
        raise ValueError(f"widths must be a sequence of positive integers, got {widths!r}") from None
    if len(ws) < 2:
        raise ValueError(f"widths needs at least 2 entries (input and output), got {list(ws)!r}")
    for w in ws:
        if not _is_int(w) or w < 1:
            raise ValueError(f"widths must all be positive integers, got {w!r} in {list(ws)!r}")
    return tuple(int(w) for w in ws)


def _make_generator(seed: int | None) -> torch.Generator | None:
    """Return a seeded CPU generator, or None to use the global RNG."""
    if seed is None:
        return None
    if not _is_int(seed):
        raise ValueError(f"seed must be an integer or None, got {seed!r}")
    gen = torch.Generator()
    gen.manual_seed(int(seed))
    return gen


def _check_input(x: Tensor, in_features: int) -> None:
    """Raise ValueError if ``x`` is not a tensor whose last dim is ``in_features``."""
    if not isinstance(x, Tensor):
        raise ValueError(f"input must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] != in_features:
        raise ValueError(
            f"input last dimension must be {in_features}, got shape {tuple(x.shape)}"
        )


class KANLayer(nn.Module):
    """One KAN layer: ``y_o = sum_i sum_m coef[o, i, m] B_m(x_i)`` (+ optional silu base)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        grid_size: int = 8,
        spline_order: int = 3,
        grid_range: tuple[float, float] = (-1.0, 1.0),
        base: bool = False,
        init_scale: float = 0.1,
        generator: torch.Generator | None = None,
        seed: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        """Build the layer; ``coef ~ N(0, init_scale**2)``, ``base_weight ~ U(+-1/sqrt(in))``."""
        super().__init__()
        _check_positive_int("in_features", in_features)
        _check_positive_int("out_features", out_features)
        try:
            lo, hi = grid_range
        except (TypeError, ValueError):
            raise ValueError(f"grid_range must be a pair (lo, hi), got {grid_range!r}") from None
        validate_grid(grid_size, spline_order, lo, hi)
        if not isinstance(init_scale, (int, float)) or not math.isfinite(init_scale) or init_scale < 0:
            raise ValueError(f"init_scale must be a finite number >= 0, got {init_scale!r}")
        if generator is not None and seed is not None:
            raise ValueError("pass either generator or seed, not both")
        if generator is None:
            generator = _make_generator(seed)
        dtype = torch.get_default_dtype() if dtype is None else dtype

        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.grid_size = int(grid_size)
        self.spline_order = int(spline_order)
        self.grid_range = (float(lo), float(hi))
        self.base = bool(base)
        self.init_scale = float(init_scale)

        n_basis = self.grid_size + self.spline_order
        # Draw in float64 so that the initial values do not depend on ``dtype``.
        coef = torch.randn(
            self.out_features, self.in_features, n_basis, generator=generator, dtype=torch.float64
        )
        self.coef = nn.Parameter((coef * self.init_scale).to(dtype))
        # the extended knots (G + 2k + 1, float64) travel in the state dict, so a saved model says its G, k and range
        self.register_buffer("grid", torch.from_numpy(self.knots()))
        if self.base:
            bound = 1.0 / math.sqrt(self.in_features)
            w = torch.rand(
                self.out_features, self.in_features, generator=generator, dtype=torch.float64
            )
            self.base_weight = nn.Parameter(((2.0 * w - 1.0) * bound).to(dtype))
        else:
            self.register_parameter("base_weight", None)

    @property
    def lo(self) -> float:
        """Lower end of the grid."""
        return self.grid_range[0]

    @property
    def hi(self) -> float:
        """Upper end of the grid."""
        return self.grid_range[1]

    @property
    def h(self) -> float:
        """Grid cell width ``(hi - lo) / G``."""
        return (self.hi - self.lo) / self.grid_size

    @property
    def n_basis(self) -> int:
        """Number of coefficients per edge, ``G + k``."""
        return self.grid_size + self.spline_order

    def knots(self) -> np.ndarray:
        """Extended knot vector (float64) of length ``G + 2k + 1``."""
        return knot_vector(self.grid_size, self.spline_order, self.lo, self.hi)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        """A state dict saved before the grid was kept loads as before (its grid is this layer's)."""
        state_dict.setdefault(prefix + "grid", self.grid)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def basis(self, x: Tensor) -> Tensor:
        """B-spline basis of the inputs, shape (..., in, G+k)."""
        _check_input(x, self.in_features)
        return bspline_basis(x, self.grid_size, self.spline_order, self.lo, self.hi)

    def edge_functions(self, x: Tensor) -> Tensor:
        """Per-edge values ``phi_{o,i}(x_i)``, shape (..., out, in)."""
        b = self.basis(x)
        phi = torch.einsum("...im,oim->...oi", b, self.coef)
        if self.base_weight is not None:
            phi = phi + self.base_weight * nn.functional.silu(x).unsqueeze(-2)
        return phi

    def forward(self, x: Tensor) -> Tensor:
        """Layer output ``y_o = sum_i phi_{o,i}(x_i)``, shape (..., out)."""
        b = self.basis(x)
        flat = b.reshape(*b.shape[:-2], self.in_features * self.n_basis)
        y = flat @ self.coef.reshape(self.out_features, -1).t()
        if self.base_weight is not None:
            y = y + nn.functional.silu(x) @ self.base_weight.t()
        return y

    def extra_repr(self) -> str:
        """Summary shown by ``repr``."""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"grid_size={self.grid_size}, spline_order={self.spline_order}, "
            f"grid_range={self.grid_range}, base={self.base}"
        )


class KAN(nn.Module):
    """Stack of :class:`KANLayer` with layer widths ``widths`` (input first, output last)."""

    def __init__(
        self,
        widths: Sequence[int],
        grid_size: int = 8,
        spline_order: int = 3,
        grid_range: tuple[float, float] = (-1.0, 1.0),
        base: bool = False,
        init_scale: float = 0.1,
        seed: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        """Build the network; one generator seeded with ``seed`` initialises all layers."""
        super().__init__()
        self.widths = _check_widths(widths)
        generator = _make_generator(seed)
        self.layers = nn.ModuleList(
            KANLayer(
                w_in,
                w_out,
                grid_size=grid_size,
                spline_order=spline_order,
                grid_range=grid_range,
                base=base,
                init_scale=init_scale,
                generator=generator,
                dtype=dtype,
            )
            for w_in, w_out in zip(self.widths[:-1], self.widths[1:])
        )
        first = self.kan_layers()[0]
        self.grid_size = first.grid_size
        self.spline_order = first.spline_order
        self.grid_range = first.grid_range
        self.base = first.base

    def kan_layers(self) -> list[KANLayer]:
        """The layers, input first (self.layers, typed)."""
        return [cast(KANLayer, layer) for layer in self.layers]

    @property
    def in_features(self) -> int:
        """Input width."""
        return self.widths[0]

    @property
    def out_features(self) -> int:
        """Output width."""
        return self.widths[-1]

    def forward(self, x: Tensor) -> Tensor:
        """Network output, shape (..., widths[-1])."""
        _check_input(x, self.widths[0])
        for layer in self.layers:
            x = layer(x)
        return x

    def num_parameters(self) -> int:
        """Total number of trainable scalars."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


class MLP(nn.Module):
    """Float MLP baseline: Linear layers with ``activation`` between them (none at the output)."""

    def __init__(
        self,
        widths: Sequence[int],
        activation: str = "relu",
        bias: bool = True,
        seed: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        """Build the network; weights and biases ~ U(+-1/sqrt(fan_in)) as in torch's default."""
        super().__init__()
        self.widths = _check_widths(widths)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        self.bias = bool(bias)
        generator = _make_generator(seed)
        dtype = torch.get_default_dtype() if dtype is None else dtype
        self.layers = nn.ModuleList()
        for w_in, w_out in zip(self.widths[:-1], self.widths[1:]):
            lin = nn.Linear(w_in, w_out, bias=self.bias, dtype=dtype)
            bound = 1.0 / math.sqrt(w_in)
            with torch.no_grad():
                w = torch.rand(w_out, w_in, generator=generator, dtype=torch.float64)
                lin.weight.copy_((2.0 * w - 1.0) * bound)
                if lin.bias is not None:
                    b = torch.rand(w_out, generator=generator, dtype=torch.float64)
                    lin.bias.copy_((2.0 * b - 1.0) * bound)
            self.layers.append(lin)

    def linear_layers(self) -> list[nn.Linear]:
        """The layers, input first (self.layers, typed)."""
        return [cast(nn.Linear, layer) for layer in self.layers]

    @property
    def in_features(self) -> int:
        """Input width."""
        return self.widths[0]

    @property
    def out_features(self) -> int:
        """Output width."""
        return self.widths[-1]

    def act(self, z: Tensor) -> Tensor:
        """Apply the hidden activation."""
        if self.activation == "relu":
            return torch.relu(z)
        if self.activation == "hardtanh":
            return nn.functional.hardtanh(z)
        if self.activation == "tanh":
            return torch.tanh(z)
        return nn.functional.silu(z)

    def forward(self, x: Tensor) -> Tensor:
        """Network output, shape (..., widths[-1])."""
        _check_input(x, self.widths[0])
        for n, layer in enumerate(self.layers):
            x = layer(x)
            if n < len(self.layers) - 1:
                x = self.act(x)
        return x

    def num_parameters(self) -> int:
        """Total number of trainable scalars."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)
