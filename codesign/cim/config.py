"""Configs of the simulated CIM chip: devices, faults, converters, tiles, and the whole chip.

Every config is a frozen dataclass that checks itself in ``__post_init__`` (one-line
``ValueError`` naming the bad value). Each field's docstring line gives unit, range, default
and source. :class:`CIMConfig` combines them; its ``device`` is a device name ("ideal",
"pcm", "rram", "mismatch") or that device's config object. ``config_to_dict`` /
``config_from_dict`` give a versioned plain-data form for checkpoints and config files.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "IdealConfig",
    "PCMConfig",
    "RRAMConfig",
    "MismatchConfig",
    "FaultConfig",
    "ConverterConfig",
    "TileConfig",
    "CIMConfig",
    "DeviceConfig",
    "DEVICE_CONFIGS",
    "MISMATCH_KINDS",
    "READ_NOISE_MODES",
    "DRIFT_COMPENSATIONS",
    "CONFIG_VERSION",
    "config_to_dict",
    "config_from_dict",
]

# Bump when a field changes meaning; config_from_dict reads the versions it knows and refuses others.
# Version 2: drift_compensation True means aihwkit's probe ("global"; in version 1 the all-ones probe,
# now "global_ones"), and PCM read noise is clipped at zero by default (version 1 did not clip).
CONFIG_VERSION = 2


def _check_number(value: Any, name: str, lo: float, hi: float, lo_open: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        bracket = "(" if lo_open else "["
        raise ValueError(f"{name}={value!r}: must be a number in {bracket}{lo:g}, {hi:g}]")


def _check_bits(value: Any, name: str) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name}={value!r}: converter bits must be a positive integer (or None for ideal)")
    if not 2 <= value <= 24:
        raise ValueError(f"{name}={value!r}: need 2..24 bits (signed symmetric levels need at least 2)")


@dataclass(frozen=True)
class IdealConfig:
    """A noise-free device: conductance = target, no drift, no read noise (no fields)."""

    name = "ideal"


@dataclass(frozen=True)
class PCMConfig:
    """Phase-change memory, the statistical model of Joshi et al. 2020 / Nandakumar et al. 2019.

    Fields:
      g_max_us: conductance of a weight of full tile scale, µS, (0, 100], default 25
        (Joshi et al., Nat. Commun. 11, 2473 (2020); IBM aihwkit PCMLikeNoiseModel).
      t0_s: time of the first read after programming, the drift reference, s, (0, 1e6],
        default 20 (same sources).
      t_read_s: duration of one read, the lower cut-off of the 1/f noise, s, (0, 1], default
        250e-9 (same sources).
      prog_noise_scale: multiplier on the programming-noise σ, dimensionless, [0, 10], default 1.
      drift_scale: multiplier on every drift exponent ν, dimensionless, [0, 10], default 1.
      read_noise_scale: multiplier on the 1/f read-noise σ, dimensionless, [0, 10], default 1.
      clip_read_noise: a noisy read of a device is clipped at zero conductance, max(g(t) + σ·ε, 0),
        bool, default True (as aihwkit's PCMLikeNoiseModel); applies to the per_time read noise (the
        per_call and per_input modes add the pair's noise unclipped, in weight units).
    """

    name = "pcm"
    g_max_us: float = 25.0
    t0_s: float = 20.0
    t_read_s: float = 250e-9
    prog_noise_scale: float = 1.0
    drift_scale: float = 1.0
    read_noise_scale: float = 1.0
    clip_read_noise: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.clip_read_noise, bool):
            raise ValueError(f"clip_read_noise={self.clip_read_noise!r}: expected True or False")
        _check_number(self.g_max_us, "g_max_us", 0.0, 100.0, lo_open=True)
        _check_number(self.t0_s, "t0_s", 0.0, 1e6, lo_open=True)
        _check_number(self.t_read_s, "t_read_s", 0.0, 1.0, lo_open=True)
        for name in ("prog_noise_scale", "drift_scale", "read_noise_scale"):
            _check_number(getattr(self, name), name, 0.0, 10.0)


@dataclass(frozen=True)
class RRAMConfig:
    """Resistive RAM: programming error after relaxation, a cubic fit to Wan et al. 2022.

    Fields:
      g_max_us: conductance of a weight of full tile scale, µS, (0, 40], default 40 (the
        conductance window of the NeuRRAM chip, Wan et al., Nature 608, 504 (2022); the fit
        below covers 0..40 µS).
      prog_noise_scale: multiplier on the programming-error σ, dimensionless, [0, 10], default 1.
    """

    name = "rram"
    g_max_us: float = 40.0
    prog_noise_scale: float = 1.0

    def __post_init__(self) -> None:
        _check_number(self.g_max_us, "g_max_us", 0.0, 40.0, lo_open=True)
        _check_number(self.prog_noise_scale, "prog_noise_scale", 0.0, 10.0)


MISMATCH_KINDS = ("multiplicative", "additive", "lognormal")
READ_NOISE_MODES = ("per_time", "per_call", "per_input")
# drift compensation: aihwkit's GlobalDriftCompensation (one-hot probes, mean |y|: the mean |w| of the layer) and
# PerColumnDriftCompensation (mean |w| of each output), or this simulator's former all-ones probe (Σ_o |Σ_i w_oi|)
DRIFT_COMPENSATIONS = ("global", "global_ones", "per_column", "none")


@dataclass(frozen=True)
class MismatchConfig:
    """Generic device mismatch: each weight is perturbed once, at programming.

    Fields:
      sigma: mismatch level σ, dimensionless (a fraction: 0.7 = 70 %), [0, 10], default 0.1;
        the DWP abstract (shared/seeds) sweeps 0..0.7.
      kind: "multiplicative" w·(1 + σε) (default), "additive" w + σ·ε in units of the tile's
        largest |w|, or "lognormal" w·exp(σε − σ²/2) (mean-preserving, never flips a sign).
    """

    name = "mismatch"
    sigma: float = 0.1
    kind: str = "multiplicative"

    def __post_init__(self) -> None:
        if isinstance(self.sigma, (int, float)) and not isinstance(self.sigma, bool) and self.sigma < 0:
            raise ValueError(f"sigma={self.sigma!r}: mismatch level must be >= 0")
        _check_number(self.sigma, "sigma", 0.0, 10.0)
        if self.kind not in MISMATCH_KINDS:
            raise ValueError(f"kind={self.kind!r}: unknown mismatch kind, choose one of {', '.join(MISMATCH_KINDS)}")


DeviceConfig = IdealConfig | PCMConfig | RRAMConfig | MismatchConfig
DEVICE_CONFIGS: dict[str, type] = {
    "ideal": IdealConfig,
    "pcm": PCMConfig,
    "rram": RRAMConfig,
    "mismatch": MismatchConfig,
}


@dataclass(frozen=True)
class FaultConfig:
    """Stuck devices, drawn once per device at programming (independent of the device model).

    Fields:
      stuck_on_rate: fraction of devices stuck at g_max (SET), [0, 1], default 0.
      stuck_off_rate: fraction of devices stuck at 0 (RESET), [0, 1], default 0. For scale:
        Chen et al., DATE 2015, measured 9.04 % stuck-at-1 and 1.75 % stuck-at-0 cells on an
        RRAM array. The two rates sum to at most 1.
    """

    stuck_on_rate: float = 0.0
    stuck_off_rate: float = 0.0

    def __post_init__(self) -> None:
        _check_number(self.stuck_on_rate, "stuck_on_rate", 0.0, 1.0)
        _check_number(self.stuck_off_rate, "stuck_off_rate", 0.0, 1.0)
        if self.stuck_on_rate + self.stuck_off_rate > 1.0:
            raise ValueError(
                f"stuck_on_rate + stuck_off_rate = {self.stuck_on_rate + self.stuck_off_rate:g}: must be <= 1"
            )

    @property
    def active(self) -> bool:
        """True when any device can be stuck."""
        return self.stuck_on_rate > 0 or self.stuck_off_rate > 0


@dataclass(frozen=True)
class ConverterConfig:
    """DAC at the rows, ADC at the columns of every tile (signed, symmetric, 2^b − 1 levels).

    Fields:
      dac_bits: input DAC resolution, bits, 2..24 or None (ideal), default 8 (8-bit PWM
        inputs of IBM's 14-nm PCM chip, Le Gallo et al., Nat. Electron. 6, 680 (2023)).
      input_range: DAC full scale in input units, (0, 1e9], or None (default): each input
        vector is scaled by its own max |x| per tile row block (aihwkit's ABS_MAX noise
        management), the scale being re-applied digitally after the ADC.
      adc_bits: output ADC resolution, bits, 2..24 or None (ideal), default 8 (same chip).
      adc_range: ADC full scale, in units of one full-scale input on one full-scale weight
        (a tile's partial sums span [−rows, rows] in these units), (0, 1e9], default 12
        (aihwkit IOParameters.out_bound).
      adc_noise: std of Gaussian noise at the ADC input, same units as adc_range, [0, 1e9],
        default 0 (aihwkit's out_noise is 0.06 in these units).
    """

    dac_bits: int | None = 8
    input_range: float | None = None
    adc_bits: int | None = 8
    adc_range: float = 12.0
    adc_noise: float = 0.0

    def __post_init__(self) -> None:
        _check_bits(self.dac_bits, "dac_bits")
        _check_bits(self.adc_bits, "adc_bits")
        if self.input_range is not None:
            _check_number(self.input_range, "input_range", 0.0, 1e9, lo_open=True)
        _check_number(self.adc_range, "adc_range", 0.0, 1e9, lo_open=True)
        _check_number(self.adc_noise, "adc_noise", 0.0, 1e9)

    @classmethod
    def ideal(cls) -> ConverterConfig:
        """Infinite-resolution, noise-free converters."""
        return cls(dac_bits=None, adc_bits=None, adc_noise=0.0)

    @property
    def is_ideal(self) -> bool:
        """True when the converters change nothing (no quantization, no noise)."""
        return self.dac_bits is None and self.adc_bits is None and self.adc_noise == 0.0


@dataclass(frozen=True)
class TileConfig:
    """Crossbar tile geometry and the IR-drop approximation.

    Fields:
      rows: inputs per tile (word lines), 1..65536, default 256 (the 256×256 cores of IBM's
        14-nm PCM chip, Le Gallo et al. 2023).
      cols: outputs per tile (bit-line pairs), 1..65536, default 256 (same chip).
      ir_drop: relative voltage lost at the row farthest from the column's sense circuit,
        for a fully loaded column (every device at g_max), dimensionless, [0, 0.5], default 0.
        Other rows and lighter columns lose proportionally less (docs/cim.md, "IR drop").
    """

    rows: int = 256
    cols: int = 256
    ir_drop: float = 0.0

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 65536:
                raise ValueError(f"{name}={v!r}: tile size must be an integer in 1..65536")
        _check_number(self.ir_drop, "ir_drop", 0.0, 0.5)


@dataclass(frozen=True)
class CIMConfig:
    """One simulated CIM chip: device model, faults, converters, tiles, drift compensation.

    Fields:
      device: a device name ("ideal", "pcm", "rram", "mismatch"; default "pcm") or a device
        config (IdealConfig, PCMConfig, RRAMConfig, MismatchConfig); a name becomes that
        device's default config.
      faults: stuck-at-ON/OFF rates (FaultConfig), default none.
      converter: DAC/ADC (ConverterConfig), default 8-bit/8-bit.
      tile: tile size and IR drop (TileConfig), default 256×256, no IR drop.
      drift_compensation: a reference read with a fixed probe at programming and a digital rescale
        by reference / probe at time t (no read noise, no converters in the probe). "global" (default;
        True means it): one factor per chip and layer from the mean |w| (aihwkit's
        GlobalDriftCompensation, one-hot probes); "per_column": one factor per output (aihwkit's
        PerColumnDriftCompensation); "global_ones": one factor from an all-ones probe, Σ_o |Σ_i w_oi|
        (this simulator's former default); "none" (False means it).
      read_noise: how reads draw the device read noise. "per_time" (default): one draw per
        device per inference time, the 1/f fluctuation accumulated up to t, which every read at
        that time sees (Joshi et al. 2020 and aihwkit draw it once per inference time; 1/f noise
        is dominated by its low frequencies, which reads close in time share); drawn again at the
        next drift_to, reproducible from (seed, layer, chip, t). "per_call": one draw per device
        per forward call, shared by the call's inputs, fresh at the next call (one Gaussian per
        device per call). "per_input": an independent draw for every input vector, computed
        exactly with a second matmul.
      exact: the layers compute F.linear / F.conv2d themselves, bit for bit (no tiles, no
        rescaling round-off), bool, default False; only with the ideal device, ideal converters,
        no faults and no IR drop (CIMConfig.ideal(exact=True)).
    """

    device: Any = "pcm"
    faults: FaultConfig = field(default_factory=FaultConfig)
    converter: ConverterConfig = field(default_factory=ConverterConfig)
    tile: TileConfig = field(default_factory=TileConfig)
    drift_compensation: Any = "global"
    read_noise: str = "per_time"
    exact: bool = False

    def __post_init__(self) -> None:
        device = self.device
        if isinstance(device, str):
            if device not in DEVICE_CONFIGS:
                raise ValueError(f"unknown device {device!r}: choose one of {', '.join(DEVICE_CONFIGS)}")
            object.__setattr__(self, "device", DEVICE_CONFIGS[device]())
        elif not isinstance(device, tuple(DEVICE_CONFIGS.values())):
            raise ValueError(f"device={device!r}: expected a device name or a device config")
        for name, kind in (("faults", FaultConfig), ("converter", ConverterConfig), ("tile", TileConfig)):
            if not isinstance(getattr(self, name), kind):
                raise ValueError(f"{name}={getattr(self, name)!r}: expected a {kind.__name__}")
        if isinstance(self.drift_compensation, bool):
            object.__setattr__(self, "drift_compensation", "global" if self.drift_compensation else "none")
        elif self.drift_compensation not in DRIFT_COMPENSATIONS:
            raise ValueError(f"drift_compensation={self.drift_compensation!r}: choose one of "
                             f"{', '.join(DRIFT_COMPENSATIONS)} (or True / False)")
        if self.read_noise not in READ_NOISE_MODES:
            raise ValueError(f"read_noise={self.read_noise!r}: choose one of {', '.join(READ_NOISE_MODES)}")
        if not isinstance(self.exact, bool):
            raise ValueError(f"exact={self.exact!r}: expected True or False")
        if self.exact and not (self.device.name == "ideal" and self.converter.is_ideal and not self.faults.active
                               and self.tile.ir_drop == 0):
            raise ValueError("exact=True: needs the ideal device, ideal converters, no faults and no IR drop "
                             "(CIMConfig.ideal(exact=True))")

    @property
    def device_name(self) -> str:
        """Registry name of the device model."""
        return self.device.name

    @classmethod
    def ideal(cls, tile: TileConfig | None = None, exact: bool = False) -> CIMConfig:
        """Every noise off and ideal converters: the exact matmul on tiles (to round-off), or with exact=True
        F.linear / F.conv2d bit for bit."""
        return cls(device="ideal", converter=ConverterConfig.ideal(), tile=tile or TileConfig(), exact=exact)

    def replace(self, **changes: Any) -> CIMConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


def _plain(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def config_to_dict(config: CIMConfig) -> dict[str, Any]:
    """Versioned plain-data form of a CIMConfig (JSON/TOML friendly)."""
    return {
        "version": CONFIG_VERSION,
        "device": config.device_name,
        "device_params": _plain(config.device),
        "faults": _plain(config.faults),
        "converter": _plain(config.converter),
        "tile": _plain(config.tile),
        "drift_compensation": config.drift_compensation,
        "read_noise": config.read_noise,
        "exact": config.exact,
    }


def _build(kind: type, data: Any, name: str) -> Any:
    if data is None:
        return kind()
    if not isinstance(data, Mapping):
        raise ValueError(f"{name}: expected a table of fields, got {data!r}")
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{name}: unknown field {unknown[0]!r}; known: {', '.join(sorted(known)) or 'none'}")
    return kind(**data)


def config_from_dict(data: Mapping[str, Any]) -> CIMConfig:
    """Inverse of :func:`config_to_dict`; missing sections take their defaults."""
    version = data.get("version", CONFIG_VERSION)
    if version not in (1, CONFIG_VERSION):
        raise ValueError(f"CIM config version {version!r} is not supported (this is version {CONFIG_VERSION})")
    if version == 1:  # the same chip as version 1 meant it
        data = dict(data)
        if data.get("drift_compensation", True) is True:
            data["drift_compensation"] = "global_ones"
        if data.get("device", "pcm") == "pcm":
            data["device_params"] = {"clip_read_noise": False, **(data.get("device_params") or {})}
    sections = {"version", "device", "device_params", "faults", "converter", "tile", "drift_compensation", "read_noise", "exact"}
    unknown = sorted(set(data) - sections)
    if unknown:
        raise ValueError(f"CIM config: unknown section {unknown[0]!r}")
    device = data.get("device", "pcm")
    if device not in DEVICE_CONFIGS:
        raise ValueError(f"unknown device {device!r}: choose one of {', '.join(DEVICE_CONFIGS)}")
    return CIMConfig(
        device=_build(DEVICE_CONFIGS[device], data.get("device_params"), "device_params"),
        faults=_build(FaultConfig, data.get("faults"), "faults"),
        converter=_build(ConverterConfig, data.get("converter"), "converter"),
        tile=_build(TileConfig, data.get("tile"), "tile"),
        drift_compensation=data.get("drift_compensation", "global"),
        read_noise=data.get("read_noise", "per_time"),
        exact=data.get("exact", False),
    )
