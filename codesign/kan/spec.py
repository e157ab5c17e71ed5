"""The one spec of the fixed-point online learners, shared by the reference, the HLS and the RTL.

Every field carries its type, range, unit and meaning as a rule in its metadata
(:mod:`codesign.kan.spec_fields`); ``docs/config.md`` is generated from them. The arithmetic that these fields
parameterize is written down in ``docs/arithmetic.md``; the Python reference
(:mod:`codesign.kan.fixed_learner`) implements exactly that text.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, cast

from codesign.fixed import FixedType, OMode, QMode
from codesign.kan.spec_fields import (
    ChoiceRule,
    GridRangeRule,
    IntRule,
    RealRule,
    TypeRule,
    WidthsRule,
    check_fields,
    plain_value,
    spec_field,
)

__all__ = [
    "KANSpec",
    "MLPSpec",
    "GridConstants",
    "default_type",
    "with_precision",
]

# Exact intermediates are held in int64; 62 bits leaves head-room for one sign bit and a carry.
MAX_EXACT_BITS = 62


def default_type(width: int, int_bits: int, signed: bool = True) -> FixedType:
    """A datapath type with the project's default modes: convergent rounding, saturation."""
    return FixedType(width, int_bits, signed, QMode.AP_RND_CONV, OMode.AP_SAT)


@dataclass(frozen=True)
class GridConstants:
    """Integer constants of the uniform grid, derived once from a spec (see docs/arithmetic.md §2)."""

    lo_raw: int  # grid start in act_t raw units
    inv_h_raw: int  # 1/h as an unsigned integer mantissa (odd, or a power of two reduced to 1)
    inv_h_frac: int  # fractional bits of inv_h_raw (negative: 1/h is a multiple of 2)
    u_shift: int  # right shift (floor) from (x - lo) * inv_h to the grid coordinate u
    u_max: int  # G * 2^A - 1, the largest grid coordinate
    power_of_two: bool  # cell width is a power of two: the multiply is a shift


def _update_bits(coef_t: FixedType, g_t: FixedType, x_t: FixedType, lr_shift: int) -> int:
    """Width of the exact update c - 2^-s * g * x at the common fractional bits (docs/arithmetic.md §6, §9)."""
    f_delta = g_t.frac + x_t.frac + lr_shift
    f = max(coef_t.frac, f_delta)
    return max(coef_t.width + f - coef_t.frac, g_t.width + x_t.width + f - f_delta) + 1


# The rules (type, range, unit, meaning) of the fields both learners share; docs/config.md is generated from them.
_WIDTHS = WidthsRule("layer widths, input first: inputs, hidden layer widths, outputs", "units per layer", low=1, high=1024)
_ACT_T = TypeRule("samples, targets and every layer output", "fixed-point type")
_COEF_T = TypeRule("trainable coefficients; an update is rounded and saturated by its modes", "fixed-point type")
_ERR_T = TypeRule("prediction error y_hat - y, the gradient of 0.5 * e^2 at the output", "fixed-point type")
_GRAD_T = TypeRule("gradients passed back to earlier layers' outputs", "fixed-point type")
_LR_SHIFT = IntRule("learning rate 2^-lr_shift", "log2 of 1/learning rate", low=0, high=24)
_CLOCK_MHZ = RealRule("clock target of the hardware (build, estimate, explore); the learner's arithmetic does "
                      "not depend on it; default: the target board's clock in build and estimate", "MHz",
                      low=1.0, high=2000.0)


class _LearnerSpecBase:
    """What both learner specs share: the widths, the common types, the learning rate and the clock target."""

    widths: tuple[int, ...]
    act_t: FixedType
    coef_t: FixedType
    err_t: FixedType
    grad_t: FixedType
    lr_shift: int
    clock_mhz: float

    @property
    def lr_shift_max(self) -> int:
        """The largest learning-rate shift the learner takes at run time (lr_shift: a fixed shift)."""
        return self.lr_shift

    @property
    def n_inputs(self) -> int:
        """Width of the input sample."""
        return self.widths[0]

    @property
    def n_outputs(self) -> int:
        """Width of the prediction."""
        return self.widths[-1]

    @property
    def layer_shapes(self) -> list[tuple[int, int]]:
        """(n_in, n_out) of every layer."""
        return list(zip(self.widths[:-1], self.widths[1:]))

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (type strings, lists) for JSON/TOML reports and configs."""
        return {f.name: plain_value(getattr(self, f.name)) for f in dataclasses.fields(cast(Any, self))}  # a dataclass subclass


@dataclass(frozen=True)
class KANSpec(_LearnerSpecBase):
    """A fixed-point KAN online learner (B-spline edges on a uniform grid, exact online SGD).

    Every field's type, range, unit and meaning is its rule in the field's metadata
    (codesign.kan.spec_fields); docs/config.md is generated from those rules.
    """

    widths: tuple[int, ...] = spec_field((2, 4, 1), _WIDTHS)
    grid_size: int = spec_field(8, IntRule("G, cells of the uniform grid; every edge has G + k coefficients", "cells",
                                           low=1, high=8192))
    spline_order: int = spec_field(3, IntRule("k, B-spline order; k + 1 basis functions are non-zero per input",
                                              "", low=1, high=5))
    grid_range: tuple[float, float] = spec_field((-1.0, 1.0), GridRangeRule(
        "(lo, hi) of the grid; inputs outside [lo, hi) are clamped to the grid edge", "input units"))
    lut_bits: int = spec_field(6, IntRule("A, address bits of the basis and derivative ROMs (2^A entries per basis)",
                                          "address bits", low=1, high=12))
    act_t: FixedType = spec_field(rule=_ACT_T, factory=lambda: default_type(16, 6))
    coef_t: FixedType = spec_field(rule=_COEF_T, factory=lambda: default_type(16, 6))
    basis_t: FixedType = spec_field(rule=TypeRule("entries of the basis ROM (values in [0, 1]; linear bases reach 1.0)",
                                                  "fixed-point type", signed=None, min_int_bits=1),
                                    factory=lambda: default_type(18, 1, signed=False))
    dbasis_t: FixedType = spec_field(rule=TypeRule("entries of the derivative ROM (d b_j / dt on the local coordinate)",
                                                   "fixed-point type"), factory=lambda: default_type(18, 2))
    dphi_t: FixedType = spec_field(rule=TypeRule("per-edge derivative d phi / dt, before the 1/h factor (backward path)",
                                                 "fixed-point type"), factory=lambda: default_type(18, 6))
    err_t: FixedType = spec_field(rule=_ERR_T, factory=lambda: default_type(16, 6))
    grad_t: FixedType = spec_field(rule=_GRAD_T, factory=lambda: default_type(16, 6))
    lr_shift: int = spec_field(4, _LR_SHIFT)
    lr_shift_span: int = spec_field(0, IntRule(
        "run-time learning-rate shifts: the AXI shell's LR_SHIFT register takes lr_shift .. lr_shift + span (a smaller "
        "learning rate than the build's, never a larger one); 0: the shift is fixed and no shifter is built", "shifts",
        low=0, high=7))
    clock_mhz: float = spec_field(250.0, _CLOCK_MHZ)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.lr_shift + self.lr_shift_span > _LR_SHIFT.high:
            raise ValueError(f"lr_shift + lr_shift_span = {self.lr_shift + self.lr_shift_span}: the largest learning-rate "
                             f"shift is {_LR_SHIFT.high}")
        lo, hi = self.grid_range
        for v in (lo, hi):
            if float(self.act_t.to_float(self.act_t.quantize([v]))[0]) != v:
                raise ValueError(f"grid_range={self.grid_range!r}: {v} is not exactly representable in act_t={self.act_t}")
        self._check_exact_widths()

    @property
    def lr_shift_max(self) -> int:
        """The largest learning-rate shift of the run-time range (lr_shift when the shift is fixed)."""
        return self.lr_shift + self.lr_shift_span

    @property
    def n_coef(self) -> int:
        """Coefficients per edge, G + k."""
        return self.grid_size + self.spline_order

    @property
    def cell_width(self) -> float:
        """h = (hi - lo) / G."""
        lo, hi = self.grid_range
        return (hi - lo) / self.grid_size

    @property
    def num_parameters(self) -> int:
        """Trainable coefficients in all layers."""
        return sum(i * o for i, o in self.layer_shapes) * self.n_coef

    def grid_constants(self) -> GridConstants:
        """The integer grid constants of docs/arithmetic.md §2."""
        lo, _ = self.grid_range
        fa = self.act_t.frac
        lo_raw = int(round(lo * 2.0**fa))
        inv_h = 1.0 / self.cell_width
        # 18 significant bits for 1/h, then trailing zeros stripped: a power of two becomes a shift.
        exp = math.floor(math.log2(inv_h))
        frac = 17 - exp
        raw = int(round(inv_h * 2.0**frac))
        while raw % 2 == 0 and raw > 0:
            raw //= 2
            frac -= 1
        u_shift = fa + frac - self.lut_bits
        return GridConstants(
            lo_raw=lo_raw,
            inv_h_raw=raw,
            inv_h_frac=frac,
            u_shift=u_shift,
            u_max=self.grid_size * (1 << self.lut_bits) - 1,
            power_of_two=(raw == 1),
        )

    def _check_exact_widths(self) -> None:
        """Every exact intermediate of docs/arithmetic.md must fit MAX_EXACT_BITS."""
        g = self.grid_constants()
        n_max = max(self.widths)
        sum_bits = math.ceil(math.log2(n_max * (self.spline_order + 1))) + 1
        # the output gradient of the last layer is err_t, of the others grad_t
        g_types = (self.err_t, self.grad_t)
        checks = {
            "(x - lo) * inv_h": self.act_t.width + 1 + g.inv_h_raw.bit_length(),
            "forward accumulator": self.basis_t.width + self.coef_t.width + sum_bits,
            # at the common fraction bits of the largest shift, the product term of the smallest is span bits wider
            "coefficient update": max(_update_bits(self.coef_t, gt, self.basis_t, self.lr_shift_max) for gt in g_types)
            + self.lr_shift_span,
            "derivative accumulator": self.dbasis_t.width + self.coef_t.width + sum_bits,
            "input gradient": max(gt.width for gt in g_types) + self.dphi_t.width + sum_bits + g.inv_h_raw.bit_length(),
        }
        for what, bits in checks.items():
            if bits > MAX_EXACT_BITS:
                raise ValueError(f"the {what} needs {bits} bits, more than {MAX_EXACT_BITS}: narrow the types")


@dataclass(frozen=True)
class MLPSpec(_LearnerSpecBase):
    """A fixed-point MLP online learner (dense layers, exact online SGD), the baseline to KAN.

    Fields as in KANSpec where shared (their rules in the field metadata); coef_t holds weights and biases.
    """

    widths: tuple[int, ...] = spec_field((2, 24, 1), _WIDTHS)
    activation: str = spec_field("relu", ChoiceRule("hidden activation (hardtanh clips to [-1, 1]); the last layer is "
                                                    "linear", "", choices=("relu", "hardtanh")))
    act_t: FixedType = spec_field(rule=_ACT_T, factory=lambda: default_type(16, 6))
    coef_t: FixedType = spec_field(rule=_COEF_T, factory=lambda: default_type(16, 6))
    err_t: FixedType = spec_field(rule=_ERR_T, factory=lambda: default_type(16, 6))
    grad_t: FixedType = spec_field(rule=_GRAD_T, factory=lambda: default_type(16, 6))
    lr_shift: int = spec_field(5, _LR_SHIFT)
    clock_mhz: float = spec_field(250.0, _CLOCK_MHZ)

    def __post_init__(self) -> None:
        check_fields(self)
        n_max = max(self.widths)
        checks = {
            "dense accumulator": self.coef_t.width + self.act_t.width + math.ceil(math.log2(n_max + 1)) + 2,
            "weight update": max(_update_bits(self.coef_t, gt, self.act_t, self.lr_shift) for gt in (self.err_t, self.grad_t)),
            "input gradient": max(self.err_t.width, self.grad_t.width) + self.coef_t.width + math.ceil(math.log2(n_max)) + 1,
        }
        for what, bits in checks.items():
            if bits > MAX_EXACT_BITS:
                raise ValueError(f"the {what} needs {bits} bits, more than {MAX_EXACT_BITS}: narrow the types")

    @property
    def num_parameters(self) -> int:
        """Weights and biases in all layers."""
        return sum(i * o + o for i, o in self.layer_shapes)


def with_precision(spec: KANSpec | MLPSpec, width: int, int_bits: int) -> KANSpec | MLPSpec:
    """The same learner with act, coef, err and grad types set to ap_fixed<width,int_bits> (default modes)."""
    t = default_type(width, int_bits)
    return dataclasses.replace(spec, act_t=t, coef_t=t, err_t=t, grad_t=t)

