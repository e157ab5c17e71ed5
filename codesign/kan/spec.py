"""The one spec of the fixed-point online learners, shared by the reference, the HLS and the RTL.

Every field is documented with its unit and range. The arithmetic that these fields
parameterize is written down in ``docs/arithmetic.md``; the Python reference
(:mod:`codesign.kan.fixed_learner`) implements exactly that text.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from codesign.fixed import FixedType, OMode, QMode

__all__ = [
    "KANSpec",
    "MLPSpec",
    "GridConstants",
    "default_type",
    "with_precision",
    "spec_from_mapping",
]

# Exact intermediates are held in int64; 62 bits leaves head-room for one sign bit and a carry.
MAX_EXACT_BITS = 62


def default_type(width: int, int_bits: int, signed: bool = True) -> FixedType:
    """A datapath type with the project's default modes: convergent rounding, saturation."""
    return FixedType(width, int_bits, signed, QMode.AP_RND_CONV, OMode.AP_SAT)


def _parse_type(value: Any, name: str) -> FixedType:
    if isinstance(value, FixedType):
        return value
    if isinstance(value, str):
        return FixedType.parse(value)
    raise ValueError(f"{name}: expected an ap_fixed type string or FixedType, got {value!r}")


@dataclass(frozen=True)
class GridConstants:
    """Integer constants of the uniform grid, derived once from a spec (see docs/arithmetic.md §2)."""

    lo_raw: int  # grid start in act_t raw units
    inv_h_raw: int  # 1/h as an unsigned integer mantissa (odd, or a power of two reduced to 1)
    inv_h_frac: int  # fractional bits of inv_h_raw (negative: 1/h is a multiple of 2)
    u_shift: int  # right shift (floor) from (x - lo) * inv_h to the grid coordinate u
    u_max: int  # G * 2^A - 1, the largest grid coordinate
    power_of_two: bool  # cell width is a power of two: the multiply is a shift


def _check_type_fits(t: FixedType, name: str) -> None:
    if t.width > 32:
        raise ValueError(f"{name}={t}: widths above 32 bits are not supported by the learner")


def _update_bits(coef_t: FixedType, g_t: FixedType, x_t: FixedType, lr_shift: int) -> int:
    """Width of the exact update c - 2^-s * g * x at the common fractional bits (docs/arithmetic.md §6, §9)."""
    f_delta = g_t.frac + x_t.frac + lr_shift
    f = max(coef_t.frac, f_delta)
    return max(coef_t.width + f - coef_t.frac, g_t.width + x_t.width + f - f_delta) + 1


@dataclass(frozen=True)
class _LearnerSpecBase:
    widths: tuple[int, ...]
    act_t: FixedType
    coef_t: FixedType
    err_t: FixedType
    grad_t: FixedType
    lr_shift: int
    clock_mhz: float

    def _validate_common(self) -> None:
        widths = tuple(self.widths)
        if len(widths) < 2:
            raise ValueError(f"widths={widths!r}: need at least an input and an output width")
        if any((not isinstance(w, int)) or w < 1 for w in widths):
            raise ValueError(f"widths={widths!r}: every width must be a positive integer")
        if not isinstance(self.lr_shift, int) or not 0 <= self.lr_shift <= 24:
            raise ValueError(f"lr_shift={self.lr_shift!r}: must be an integer in 0..24")
        if not (isinstance(self.clock_mhz, (int, float)) and 1.0 <= self.clock_mhz <= 2000.0):
            raise ValueError(f"clock_mhz={self.clock_mhz!r}: must be in 1..2000 MHz")
        for name in ("act_t", "coef_t", "err_t", "grad_t"):
            t = getattr(self, name)
            _check_type_fits(t, name)
            if not t.signed:
                raise ValueError(f"{name}={t}: must be a signed type (values and updates change sign)")

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
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, FixedType):
                v = str(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out


@dataclass(frozen=True)
class KANSpec(_LearnerSpecBase):
    """A fixed-point KAN online learner (B-spline edges on a uniform grid, exact online SGD).

    Fields (units, ranges):
      widths: layer widths, input first (e.g. (2, 4, 1)); each >= 1.
      grid_size: G, cells of the uniform grid, 1..256; every edge has G + k coefficients.
      spline_order: k, B-spline order, 1..5; k + 1 basis functions are non-zero per input.
      grid_range: (lo, hi) of the grid in input units; both exactly representable in act_t.
        Inputs outside [lo, hi) are clamped to the grid edge (docs/arithmetic.md §2).
      lut_bits: A, address bits of the basis/derivative ROMs (2^A entries per basis), 1..12.
      act_t: samples, targets and every layer output.
      coef_t: spline coefficients; the update is rounded and saturated by its modes.
      basis_t: entries of the basis ROM (values in [0, 1]).
      dbasis_t: entries of the derivative ROM (d b_j / dt on the local coordinate).
      dphi_t: per-edge derivative d phi / dt, before the 1/h factor (backward path).
      err_t: prediction error y_hat - y, the gradient of 0.5 * e^2 at the output.
      grad_t: gradients passed back to earlier layers' outputs.
      lr_shift: learning rate 2^-lr_shift, 0..24.
      clock_mhz: clock target of the hardware implementations.
    """

    widths: tuple[int, ...] = (2, 4, 1)
    grid_size: int = 8
    spline_order: int = 3
    grid_range: tuple[float, float] = (-1.0, 1.0)
    lut_bits: int = 6
    act_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    coef_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    basis_t: FixedType = field(default_factory=lambda: default_type(18, 1, signed=False))
    dbasis_t: FixedType = field(default_factory=lambda: default_type(18, 2))
    dphi_t: FixedType = field(default_factory=lambda: default_type(18, 6))
    err_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    grad_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    lr_shift: int = 4
    clock_mhz: float = 250.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "widths", tuple(self.widths))
        object.__setattr__(self, "grid_range", tuple(float(v) for v in self.grid_range))
        for name in ("act_t", "coef_t", "basis_t", "dbasis_t", "dphi_t", "err_t", "grad_t"):
            object.__setattr__(self, name, _parse_type(getattr(self, name), name))
        self._validate_common()
        if not isinstance(self.grid_size, int) or not 1 <= self.grid_size <= 256:
            raise ValueError(f"grid_size={self.grid_size!r}: G must be an integer in 1..256")
        if not isinstance(self.spline_order, int) or not 1 <= self.spline_order <= 5:
            raise ValueError(f"spline_order={self.spline_order!r}: k must be an integer in 1..5")
        if not isinstance(self.lut_bits, int) or not 1 <= self.lut_bits <= 12:
            raise ValueError(f"lut_bits={self.lut_bits!r}: must be an integer in 1..12")
        lo, hi = self.grid_range
        if len(self.grid_range) != 2 or not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise ValueError(f"grid_range={self.grid_range!r}: need finite lo < hi")
        for name in ("basis_t", "dbasis_t", "dphi_t"):
            _check_type_fits(getattr(self, name), name)
        if self.basis_t.int_bits < 1:
            raise ValueError(f"basis_t={self.basis_t}: needs >= 1 integer bit (linear bases reach 1.0)")
        if not self.dbasis_t.signed or not self.dphi_t.signed:
            raise ValueError("dbasis_t and dphi_t must be signed types")
        for v in (lo, hi):
            if float(self.act_t.to_float(self.act_t.quantize([v]))[0]) != v:
                raise ValueError(f"grid_range={self.grid_range!r}: {v} is not exactly representable in act_t={self.act_t}")
        self._check_exact_widths()

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
            "coefficient update": max(_update_bits(self.coef_t, gt, self.basis_t, self.lr_shift) for gt in g_types),
            "derivative accumulator": self.dbasis_t.width + self.coef_t.width + sum_bits,
            "input gradient": max(gt.width for gt in g_types) + self.dphi_t.width + sum_bits + g.inv_h_raw.bit_length(),
        }
        for what, bits in checks.items():
            if bits > MAX_EXACT_BITS:
                raise ValueError(f"the {what} needs {bits} bits, more than {MAX_EXACT_BITS}: narrow the types")


@dataclass(frozen=True)
class MLPSpec(_LearnerSpecBase):
    """A fixed-point MLP online learner (dense layers, exact online SGD), the baseline to KAN.

    Fields as in KANSpec where shared; coef_t holds weights and biases.
      activation: hidden activation, "relu" or "hardtanh" (clip to [-1, 1]); the last layer is linear.
    """

    widths: tuple[int, ...] = (2, 24, 1)
    activation: str = "relu"
    act_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    coef_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    err_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    grad_t: FixedType = field(default_factory=lambda: default_type(16, 6))
    lr_shift: int = 5
    clock_mhz: float = 250.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "widths", tuple(self.widths))
        for name in ("act_t", "coef_t", "err_t", "grad_t"):
            object.__setattr__(self, name, _parse_type(getattr(self, name), name))
        self._validate_common()
        if self.activation not in ("relu", "hardtanh"):
            raise ValueError(f"activation={self.activation!r}: must be 'relu' or 'hardtanh'")
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


def spec_from_mapping(kind: str, data: Mapping[str, Any]) -> KANSpec | MLPSpec:
    """Build a spec from plain data (a parsed TOML/YAML config); unknown keys are an error."""
    cls = {"kan": KANSpec, "mlp": MLPSpec}.get(kind)
    if cls is None:
        raise ValueError(f"unknown learner kind {kind!r}: expected 'kan' or 'mlp'")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown {kind} spec field(s) {', '.join(unknown)}; valid: {', '.join(sorted(names))}")
    kwargs = dict(data)
    for key in ("widths", "grid_range"):
        if key in kwargs:
            kwargs[key] = tuple(kwargs[key])
    return cls(**kwargs)
