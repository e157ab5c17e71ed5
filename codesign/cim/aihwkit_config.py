"""IBM aihwkit's ``InferenceRPUConfig`` read into a :class:`~codesign.cim.config.CIMConfig`, and back.

:func:`cim_config_from_aihwkit` takes an aihwkit ``InferenceRPUConfig`` (read by attribute names, so
aihwkit is imported only if the object comes from it), an aihwkit model whose analog layers share one
config, or a plain nested dict with the same field names (enum values by name, "ABS_MAX", or by value,
"AbsMax"; ``noise_model`` a dict with ``type`` "PCMLikeNoiseModel"; ``drift_compensation`` a class name
or None). Every field is accounted for: it maps onto a CIMConfig field (:data:`MAPPED`), or it is accepted
at the value that means what codesign's chip does (:data:`REQUIRED`), or it only matters when another
field switches it on (:data:`INERT`). Anything else, including a name aihwkit does not have, is refused
by name with a one-line ``ValueError``, unless the caller names it in ``ignore`` and so accepts the
difference. :func:`aihwkit_dict` is the inverse (a plain dict of aihwkit field names);
:func:`to_aihwkit_rpu_config` builds the real aihwkit object from it when aihwkit is installed.
The table in docs/cim.md ("Settings from aihwkit") is this module's mapping.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from codesign.cim.config import CIMConfig, ConverterConfig, PCMConfig, TileConfig

__all__ = ["MAPPED", "REQUIRED", "INERT", "AIHWKIT_DEFAULTS", "cim_config_from_aihwkit", "aihwkit_dict", "to_aihwkit_rpu_config"]

# aihwkit field (dotted path) -> the CIMConfig field it sets
MAPPED: dict[str, str] = {
    "forward.is_perfect": "converter = ConverterConfig.ideal() (True)",
    "forward.inp_res": "converter.dac_bits (1/(2^b − 2), or 2^b − 2 steps; ≤ 0: None)",
    "forward.inp_bound": "converter.input_range (with noise_management NONE; 1 with ABS_MAX)",
    "forward.noise_management": "converter.input_range (ABS_MAX: None, per-vector scaling; NONE: inp_bound)",
    "forward.out_res": "converter.adc_bits (1/(2^b − 2), or 2^b − 2 steps; ≤ 0: None)",
    "forward.out_bound": "converter.adc_range (out_bound / inp_bound; ≤ 0 only with out_res ≤ 0)",
    "forward.out_noise": "converter.adc_noise (out_noise / inp_bound)",
    "noise_model.type": "device (PCMLikeNoiseModel: \"pcm\")",
    "noise_model.g_max": "device.g_max_us",
    "noise_model.t_read": "device.t_read_s",
    "noise_model.t_0": "device.t0_s",
    "noise_model.prog_noise_scale": "device.prog_noise_scale",
    "noise_model.read_noise_scale": "device.read_noise_scale",
    "noise_model.drift_scale": "device.drift_scale",
    "drift_compensation": "drift_compensation (GlobalDriftCompensation: \"global\", PerColumnDriftCompensation: "
                          "\"per_column\", None: \"none\")",
    "mapping.max_input_size": "tile.rows",
    "mapping.max_output_size": "tile.cols",
}

_PCM_PROG_COEFF = (0.26348, 1.9650, -1.1731)

# aihwkit field -> the value at which it does what codesign's chip does (and why codesign has nothing else)
REQUIRED: dict[str, tuple[Any, str]] = {
    "forward.mv_type": ("ONE_PASS", "one signed read per MVM"),
    "forward.inp_noise": (0.0, "no input noise model"),
    "forward.inp_sto_round": (False, "the DAC rounds to nearest"),
    "forward.inp_asymmetry": (0.0, "no DAC asymmetry model"),
    "forward.out_noise_std": (0.0, "ADC noise is the same on every output"),
    "forward.out_sto_round": (False, "the ADC rounds to nearest"),
    "forward.out_scale": (1.0, "no analog output scale"),
    "forward.out_asymmetry": (0.0, "no ADC asymmetry model"),
    "forward.bound_management": ("NONE", "no bound management: the ADC saturates"),
    "forward.w_noise_type": ("NONE", "read noise comes from the device model"),
    "forward.ir_drop": (0.0, "codesign's IR drop (TileConfig.ir_drop) is a different model"),
    "forward.out_nonlinearity": (0.0, "no output non-linearity model"),
    "forward.slope_calibration": (0.0, "no output non-linearity model"),
    "forward.v_offset_std": (0.0, "no voltage offset model"),
    "forward.r_series": (0.0, "no series resistance model"),
    "forward.w_read_asymmetry_dtod": (0.0, "no read asymmetry model"),
    "noise_model.g_min": (0.0, "a pair's idle device is at 0 µS"),
    "noise_model.g_converter": ("SinglePairConductanceConverter", "one differential pair per weight"),
    "noise_model.prog_coeff": (_PCM_PROG_COEFF, "the published PCM programming-noise polynomial"),
    "noise_model.prog_coeff_g_max_reference": (25.0, "the polynomial is in units of g_max/25 µS"),
    "clip.type": ("NONE", "training-time weight clipping: clip the float weights before converting"),
    "remap.type": ("NONE", "training-time weight remapping"),
    "modifier.type": ("NONE", "training-time weight noise: see codesign.cim.hwa for training through the chip"),
    "mapping.digital_bias": (True, "the bias is added digitally"),
    "mapping.weight_scaling_omega": (1.0, "each tile is scaled to its largest |w| (0 leaves weights unscaled "
                                          "against the fixed ADC range)"),
    "mapping.weight_scaling_columnwise": (False, "one scale per tile"),
    "mapping.weight_scaling_lr_compensation": (False, "one scale per tile"),
    "mapping.learn_out_scaling": (False, "the output scale is the tile scale, not learned"),
    "mapping.out_scaling_columnwise": (False, "one scale per tile"),
    "pre_post.input_range.enable": (False, "input ranges are calibrated (calibrate_input_ranges), not learned"),
    "runtime.data_type": ("FLOAT", "the simulator computes in float32"),
}

# fields that change nothing while the field that switches them on is at its REQUIRED value
INERT: frozenset[str] = frozenset({
    "forward.w_noise", "forward.ir_drop_g_ratio", "forward.out_nonlinearity_std", "forward.v_offset_w_min",
    "forward.max_bm_factor", "forward.max_bm_res", "forward.bm_test_negative_bound", "forward.nm_thres",
    "clip.fixed_value", "clip.sigma",
    "remap.remapped_wmax", "remap.max_scale_range", "remap.max_scale_ref",
    *(f"modifier.{n}" for n in ("std_dev", "per_batch_sample", "res", "sto_round", "dorefa_clip", "pdrop",
                                "enable_during_test", "rel_to_actual_wmax", "assumed_wmax", "copy_last_column",
                                "coeffs", "g_max", "pcm_zero_thres", "pcm_t_inference", "pcm_prob_at_reset",
                                "pcm_prob_at_gmax", "pcm_prob_at_random", "pcm_t0")),
    *(f"pre_post.input_range.{n}" for n in ("learn_input_range", "init_value", "init_from_data", "init_std_alpha",
                                            "decay", "input_min_percentage", "manage_output_clipping",
                                            "output_min_percentage", "gradient_scale", "gradient_relative",
                                            "calibration_info", "fast_mode", "dynamic", "act_range_momentum")),
    "tile_class", "tile_array_class", "mapping.tile_array_class",
    "runtime.on_the_fly_bindings", "runtime.offload_input", "runtime.offload_gradient",  # where the simulation runs
})

# where aihwkit's own default is not the value codesign needs: a dict that leaves them out means aihwkit's default
AIHWKIT_DEFAULTS: dict[str, Any] = {"forward.bound_management": "ITERATIVE", "mapping.weight_scaling_omega": 0.0}

_DRIFT = {"GlobalDriftCompensation": "global", "PerColumnDriftCompensation": "per_column", None: "none"}
_NOISE_MODEL_FIELDS = ("g_max", "t_read", "t_0", "prog_noise_scale", "read_noise_scale", "drift_scale", "prog_coeff",
                       "prog_coeff_g_max_reference")
_READ_ONLY = {"device", "backward", "update"}  # fixed by InferenceRPUConfig (init=False): ideal backward and update


_ENUM_PATHS = {"forward.mv_type", "forward.bound_management", "forward.noise_management", "forward.w_noise_type",
               "clip.type", "remap.type", "modifier.type"}


def _enum_name(path: str, value: Any) -> Any:
    """An enum (or its name, or its CamelCase value given as a string) as its NAME."""
    if isinstance(value, enum.Enum):
        return value.name
    if path in _ENUM_PATHS and isinstance(value, str) and value and not value.isupper():
        return re.sub(r"(?<!^)(?=[A-Z])", "_", value).upper()
    return value


def _flatten_object(obj: Any, prefix: str, out: dict[str, Any]) -> None:
    for f in dataclasses.fields(obj):
        if not f.init or (not prefix and f.name in _READ_ONLY):
            continue
        value = getattr(obj, f.name)
        path = f"{prefix}{f.name}"
        if f.name == "noise_model" and not prefix:
            out["noise_model.type"] = type(value).__name__
            conv = getattr(value, "g_converter", None)
            if conv is not None:
                out["noise_model.g_converter"] = type(conv).__name__
                out["noise_model.g_min"] = getattr(conv, "g_min", 0.0)
            for name in _NOISE_MODEL_FIELDS:
                if hasattr(value, name):
                    out[f"noise_model.{name}"] = getattr(value, name)
        elif f.name == "drift_compensation" and not prefix:
            out[path] = None if value is None else type(value).__name__
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            _flatten_object(value, f"{path}.", out)
        else:
            out[path] = value


def _flatten_dict(data: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            _flatten_dict(value, f"{path}.", out)
        else:
            out[path] = value


def _analog_config(model: Any) -> Any:
    """The one rpu_config shared by every analog layer of an aihwkit model."""
    configs = [m.rpu_config for m in model.modules() if getattr(m, "rpu_config", None) is not None]
    if not configs:
        raise ValueError(f"{type(model).__name__}: no analog layer (no rpu_config) in this model")
    flat = [_flat(c) for c in configs]
    if any(f != flat[0] for f in flat[1:]):
        raise ValueError(f"{type(model).__name__}: its analog layers have different rpu_configs; convert each layer's")
    return configs[0]


def _flat(source: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(source, Mapping):
        out.update(AIHWKIT_DEFAULTS)
        _flatten_dict(source, "", out)
    elif dataclasses.is_dataclass(source) and not isinstance(source, type):
        _flatten_object(source, "", out)
    elif hasattr(source, "modules"):
        return _flat(_analog_config(source))
    else:
        raise ValueError(f"expected an aihwkit InferenceRPUConfig, an aihwkit model or a dict, got {type(source).__name__}")
    if isinstance(out.get("noise_model.prog_coeff"), list):
        out["noise_model.prog_coeff"] = tuple(out["noise_model.prog_coeff"])
    return {k: _enum_name(k, v) for k, v in out.items()}


def _bits(path: str, res: Any) -> int | None:
    """aihwkit's resolution (a step fraction 1/(2^b − 2) or a step count 2^b − 2; ≤ 0 is ideal) as bits."""
    if not isinstance(res, (int, float)) or isinstance(res, bool) or not math.isfinite(res):
        raise ValueError(f"aihwkit field {path}={res!r}: expected a number")
    if res <= 0:
        return None
    steps = 1.0 / res if res < 1 else float(res)
    bits = math.log2(steps + 2)
    if abs(bits - round(bits)) > 1e-6 or not 2 <= round(bits) <= 24:
        raise ValueError(f"aihwkit field {path}={res!r}: codesign's converters have 2^b − 1 levels, "
                         f"{path} = 1/(2^b − 2) for b in 2..24 (e.g. 1/254 for 8 bits)")
    return int(round(bits))


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, tuple):
        return isinstance(a, (tuple, list)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, bool) or isinstance(a, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(b, float) and isinstance(a, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def _refuse(path: str, value: Any, why: str) -> ValueError:
    return ValueError(f"aihwkit field {path}={value!r} has no equivalent in codesign.cim ({why}); "
                      f"pass ignore=({path!r},) to accept the difference")


def cim_config_from_aihwkit(source: Any, ignore: Iterable[str] = ()) -> CIMConfig:
    """The CIMConfig of an aihwkit InferenceRPUConfig, aihwkit model or dict; unmappable fields are refused by name."""
    flat = _flat(source)
    ignored = set(ignore)
    for path in sorted(ignored - set(flat)):
        raise ValueError(f"ignore={path!r}: not a field of this config")
    get = flat.get
    for path in sorted(flat):
        value = flat[path]
        if path in ignored or path in MAPPED or path in INERT:
            continue
        if path in REQUIRED:
            required, why = REQUIRED[path]
            if not _same(value, required):
                raise _refuse(path, value, f"codesign needs {required!r}: {why}")
            continue
        raise ValueError(f"unknown aihwkit field {path!r}: no known meaning here; pass ignore=({path!r},) to skip it")

    def take(path: str, default: Any) -> Any:
        return default if path in ignored else get(path, default)

    # device
    model_type = take("noise_model.type", "PCMLikeNoiseModel")
    if model_type != "PCMLikeNoiseModel":
        raise _refuse("noise_model.type", model_type, "only PCMLikeNoiseModel has a codesign device model")
    device = PCMConfig(
        g_max_us=float(take("noise_model.g_max", 25.0)),
        t0_s=float(take("noise_model.t_0", 20.0)),
        t_read_s=float(take("noise_model.t_read", 250e-9)),
        prog_noise_scale=float(take("noise_model.prog_noise_scale", 1.0)),
        read_noise_scale=float(take("noise_model.read_noise_scale", 1.0)),
        drift_scale=float(take("noise_model.drift_scale", 1.0)),
        clip_read_noise=True,  # aihwkit clips a noisy read at zero conductance
    )
    drift = take("drift_compensation", "GlobalDriftCompensation")
    if drift not in _DRIFT:
        raise _refuse("drift_compensation", drift, "codesign's probes are GlobalDriftCompensation and "
                                                    "PerColumnDriftCompensation")
    # converters
    if take("forward.is_perfect", False):
        converter = ConverterConfig.ideal()
    else:
        nm = take("forward.noise_management", "ABS_MAX")
        inp_bound = take("forward.inp_bound", 1.0)
        if not isinstance(inp_bound, (int, float)) or isinstance(inp_bound, bool) or not inp_bound > 0:
            raise ValueError(f"aihwkit field forward.inp_bound={inp_bound!r}: expected a number > 0")
        if nm == "ABS_MAX":
            if not _same(inp_bound, 1.0):
                raise _refuse("forward.inp_bound", inp_bound, "with ABS_MAX noise management codesign's DAC full "
                                                              "scale is the vector's max |x| (inp_bound 1)")
            input_range = None
        elif nm == "NONE":
            input_range = float(inp_bound)
        else:
            raise _refuse("forward.noise_management", nm, "codesign scales by ABS_MAX or clips at a fixed range (NONE)")
        out_res = take("forward.out_res", 1 / 510)
        adc_bits = _bits("forward.out_res", out_res)
        out_bound = take("forward.out_bound", 12.0)
        if not isinstance(out_bound, (int, float)) or isinstance(out_bound, bool):
            raise ValueError(f"aihwkit field forward.out_bound={out_bound!r}: expected a number")
        if out_bound <= 0 and adc_bits is not None:
            raise _refuse("forward.out_bound", out_bound, "codesign's ADC always has a full scale when it quantizes")
        out_noise = take("forward.out_noise", 0.06)
        converter = ConverterConfig(
            dac_bits=_bits("forward.inp_res", take("forward.inp_res", 1 / 126)),
            input_range=input_range,
            adc_bits=adc_bits,
            adc_range=float(out_bound) / float(inp_bound) if out_bound > 0 else ConverterConfig().adc_range,
            adc_noise=float(out_noise) / float(inp_bound),
        )
    tile = TileConfig(rows=_tile_size("mapping.max_input_size", take("mapping.max_input_size", 512)),
                      cols=_tile_size("mapping.max_output_size", take("mapping.max_output_size", 512)))
    return CIMConfig(device=device, converter=converter, tile=tile, drift_compensation=_DRIFT[drift],
                     read_noise="per_time")


def _tile_size(path: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65536:
        raise _refuse(path, value, "a tile has 1..65536 rows and columns (aihwkit's 0 means one tile per layer)")
    return value


def _steps(bits: int | None) -> float:
    return -1.0 if bits is None else 1.0 / (2**bits - 2)


def aihwkit_dict(config: CIMConfig) -> dict[str, Any]:
    """The aihwkit InferenceRPUConfig fields (plain dict) of a CIMConfig; one-line ValueError where aihwkit has none."""
    device = config.device
    if not isinstance(device, PCMConfig):
        raise ValueError(f"device {config.device_name!r}: aihwkit's counterpart here is PCMLikeNoiseModel only (pcm)")
    if not device.clip_read_noise:
        raise ValueError("clip_read_noise=False: aihwkit's PCMLikeNoiseModel always clips a read at zero")
    if config.faults.active:
        raise ValueError("faults: aihwkit's InferenceRPUConfig has no stuck devices")
    if config.tile.ir_drop != 0:
        raise ValueError("tile.ir_drop: aihwkit's IR-drop model is a different one")
    if config.read_noise != "per_time":
        raise ValueError(f"read_noise={config.read_noise!r}: aihwkit draws read noise once per inference time (per_time)")
    if config.drift_compensation not in ("global", "per_column", "none"):
        raise ValueError(f"drift_compensation={config.drift_compensation!r}: aihwkit has no such probe")
    conv = config.converter
    inp_bound = 1.0 if conv.input_range is None else conv.input_range
    forward: dict[str, Any] = {
        "is_perfect": False,
        "inp_res": _steps(conv.dac_bits),
        "inp_bound": inp_bound,
        "noise_management": "ABS_MAX" if conv.input_range is None else "NONE",
        "out_res": _steps(conv.adc_bits),
        "out_bound": conv.adc_range * inp_bound if conv.adc_bits is not None else -1.0,
        "out_noise": conv.adc_noise * inp_bound,
        "bound_management": "NONE",
        "w_noise_type": "NONE",
        "w_noise": 0.0,
        "ir_drop": 0.0,
    }
    drift = {v: k for k, v in _DRIFT.items()}[config.drift_compensation]
    return {
        "forward": forward,
        "noise_model": {"type": "PCMLikeNoiseModel", "g_max": device.g_max_us, "g_min": 0.0, "t_read": device.t_read_s,
                        "t_0": device.t0_s, "prog_noise_scale": device.prog_noise_scale,
                        "read_noise_scale": device.read_noise_scale, "drift_scale": device.drift_scale},
        "drift_compensation": drift,
        "mapping": {"max_input_size": config.tile.rows, "max_output_size": config.tile.cols, "digital_bias": True,
                    "weight_scaling_omega": 1.0, "weight_scaling_columnwise": False},
        "clip": {"type": "NONE"},
        "modifier": {"type": "NONE"},
        "remap": {"type": "NONE"},
    }


def to_aihwkit_rpu_config(config: CIMConfig) -> Any:
    """aihwkit's InferenceRPUConfig for a CIMConfig (needs aihwkit installed; see docs/cim_vs_aihwkit.md)."""
    try:
        from aihwkit.inference.compensation import drift as aihwkit_drift  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from aihwkit.inference.noise.pcm import PCMLikeNoiseModel  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from aihwkit.simulator.configs import InferenceRPUConfig  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from aihwkit.simulator.parameters import enums  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError as exc:
        raise ValueError(f"aihwkit is not installed ({exc}); docs/cim_vs_aihwkit.md gives the build recipe") from exc
    data = aihwkit_dict(config)
    rpu = InferenceRPUConfig()
    enum_types = {"noise_management": enums.NoiseManagementType, "bound_management": enums.BoundManagementType,
                  "w_noise_type": enums.WeightNoiseType}
    for name, value in data["forward"].items():
        setattr(rpu.forward, name, enum_types[name][value] if name in enum_types else value)
    nm = data["noise_model"]
    rpu.noise_model = PCMLikeNoiseModel(g_max=nm["g_max"], t_read=nm["t_read"], t_0=nm["t_0"],
                                        prog_noise_scale=nm["prog_noise_scale"], read_noise_scale=nm["read_noise_scale"],
                                        drift_scale=nm["drift_scale"])
    drift = data["drift_compensation"]
    rpu.drift_compensation = None if drift is None else getattr(aihwkit_drift, drift)()
    for name, value in data["mapping"].items():
        setattr(rpu.mapping, name, value)
    rpu.clip.type = enums.WeightClipType.NONE
    rpu.modifier.type = enums.WeightModifierType.NONE
    rpu.remap.type = enums.WeightRemapType.NONE
    return rpu
