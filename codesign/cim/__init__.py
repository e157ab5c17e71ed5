"""CIM backend: simulated noisy compute-in-memory crossbars, converters, energy.

Configs (:mod:`.config`), device models and their registry (:mod:`.devices`), converters
(:mod:`.converters`), the tiled crossbar mapping (:mod:`.crossbar`) and its read path
(:mod:`.readout`), torch layers and batched Monte-Carlo over chips (:mod:`.layers`), perturbed
weight realizations for noise-aware training (:mod:`.perturb`), hardware-aware training through the chip
(:mod:`.hwa`, :func:`~.layers.chip_twin`), and the energy estimate
(:mod:`.energy`).
"""

from codesign.cim.calibration import calibrate_input_ranges
from codesign.cim.config import (
    CIMConfig,
    ConverterConfig,
    FaultConfig,
    IdealConfig,
    MismatchConfig,
    PCMConfig,
    RRAMConfig,
    TileConfig,
    config_from_dict,
    config_to_dict,
)
from codesign.cim.crossbar import Crossbar
from codesign.cim.devices import DEVICE_MODELS, make_device
from codesign.cim.layers import (
    CIMConv2d,
    CIMLinear,
    chip_inputs,
    chip_twin,
    cim_layers,
    convert_to_cim,
    drift_model,
    evaluate_chips,
    program_model,
    sample_model,
)
from codesign.cim.perturb import sample_weights

__all__ = [
    "CIMConfig",
    "ConverterConfig",
    "FaultConfig",
    "IdealConfig",
    "MismatchConfig",
    "PCMConfig",
    "RRAMConfig",
    "TileConfig",
    "config_from_dict",
    "config_to_dict",
    "Crossbar",
    "DEVICE_MODELS",
    "make_device",
    "CIMConv2d",
    "CIMLinear",
    "chip_inputs",
    "cim_layers",
    "convert_to_cim",
    "drift_model",
    "evaluate_chips",
    "program_model",
    "sample_model",
    "chip_twin",
    "sample_weights",
    "calibrate_input_ranges",
]
