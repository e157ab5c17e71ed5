"""Device models of the CIM crossbar and the registry that maps a device name to its model.

| name       | model                      | source                                              |
|------------|----------------------------|-----------------------------------------------------|
| "ideal"    | :class:`IdealDevice`       | exact targets                                       |
| "pcm"      | :class:`PCMDevice`         | Joshi et al. 2020 / Nandakumar et al. 2019          |
| "rram"     | :class:`RRAMDevice`        | Wan et al. 2022 (NeuRRAM), cubic fit                |
| "mismatch" | :class:`MismatchDevice`    | generic w·(1+σε), additive, log-normal              |

Stuck-at faults (:mod:`.faults`) apply on top of any of them.
"""

from __future__ import annotations

from codesign.cim.config import DEVICE_CONFIGS, DeviceConfig
from codesign.cim.devices.base import DeviceModel, DeviceState, pair_targets
from codesign.cim.devices.faults import apply_faults, draw_faults
from codesign.cim.devices.ideal import IdealDevice
from codesign.cim.devices.mismatch import MismatchDevice, mismatch_weights
from codesign.cim.devices.pcm import PCMDevice
from codesign.cim.devices.rram import RRAMDevice

__all__ = [
    "DEVICE_MODELS",
    "DeviceModel",
    "DeviceState",
    "IdealDevice",
    "PCMDevice",
    "RRAMDevice",
    "MismatchDevice",
    "make_device",
    "mismatch_weights",
    "pair_targets",
    "draw_faults",
    "apply_faults",
]

DEVICE_MODELS: dict[str, type[DeviceModel]] = {
    "ideal": IdealDevice,
    "pcm": PCMDevice,
    "rram": RRAMDevice,
    "mismatch": MismatchDevice,
}


def make_device(config: DeviceConfig | str) -> DeviceModel:
    """The device model for a device config (or a device name, with default parameters)."""
    if isinstance(config, str):
        if config not in DEVICE_MODELS:
            raise ValueError(f"unknown device {config!r}: choose one of {', '.join(DEVICE_MODELS)}")
        return DEVICE_MODELS[config]()
    name = getattr(config, "name", None)
    if name not in DEVICE_MODELS or not isinstance(config, DEVICE_CONFIGS[name]):
        raise ValueError(f"device config {config!r} is not one of {', '.join(DEVICE_MODELS)}")
    return DEVICE_MODELS[name](config)
