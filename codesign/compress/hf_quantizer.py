"""transformers' from_pretrained for a folder save_compressed wrote: the quantization method "codesign".

    import codesign                      # registers the method with transformers (codesign.compress.__init__)
    model = transformers.AutoModelForCausalLM.from_pretrained("out/")   # the same model as load_compressed("out/")

save_compressed writes into config.json a `quantization_config` holding every compressed layer's record
(the same as compressed.json's). The quantizer below replaces those layers of the model transformers
builds by the QuantizedLinear / LowRankLinear that the records and the stored tensors describe, then
transformers loads every tensor of model.safetensors into the model as for any checkpoint. Importing
this module imports transformers' quantizer registry; codesign.compress imports it only once transformers
has (register_with_transformers).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import torch
from transformers.quantizers.base import HfQuantizer
from transformers.utils.quantization_config import QuantizationConfigMixin

from codesign.compress.checkpoint import (
    FORMAT,
    FORMAT_VERSION,
    QUANT_METHOD,
    WEIGHTS_GUARD,
    build_layers,
    read_layer_tensors,
)

__all__ = ["CodesignQuantizationConfig", "CodesignHfQuantizer", "register"]

# the guard's first words (not all of it: a folder written with other wording after them is recognised too)
_GUARD_START = WEIGHTS_GUARD.split(":")[0]


class CodesignQuantizationConfig(QuantizationConfigMixin):
    """The quantization_config of a saved folder: format and version, the saved class, each compressed layer's record."""

    def __init__(self, format: str | None = None, format_version: int | None = None,  # noqa: A002 - the JSON key
                 layers: dict | None = None, transformers_class: str | None = None,
                 attn_implementation: str | None = None, **kwargs: Any) -> None:
        self.quant_method = QUANT_METHOD  # type: ignore[assignment] # transformers' enum lists only its own methods
        self.format = format
        self.format_version = format_version
        self.layers: dict = layers or {}
        self.transformers_class = transformers_class
        self.attn_implementation = attn_implementation
        if format != FORMAT:
            raise ValueError(f"config.json's quantization_config is not a {FORMAT} one (format {format!r})")
        if format_version != FORMAT_VERSION:
            raise ValueError(f"config.json's quantization_config has format version {format_version!r}; this codesign "
                             f"reads version {FORMAT_VERSION} (recompress the model)")
        if not isinstance(layers, dict) or not layers:
            raise ValueError("config.json's quantization_config names no compressed layers (damaged config.json)")


def _layer_names(model: torch.nn.Module, saved: list[str], saved_class: str | None) -> dict[str, str]:
    """Saved layer name -> the name in this model: the same, or with the base model's prefix taken off or put on."""
    own = dict(model.named_modules())
    prefix = getattr(model, "base_model_prefix", "") or ""
    names = {}
    for name in saved:
        candidates = [name]
        if prefix:
            candidates += [name.removeprefix(prefix + "."), f"{prefix}.{name}"]
        found = next((c for c in candidates if c in own), None)
        if found is None and prefix and saved_class != type(model).__name__ and not name.startswith(prefix + "."):
            continue  # a head this class lacks (AutoModel of a ...ForCausalLM folder): transformers drops its tensors
        if found is None:
            hint = (f"the folder holds a {saved_class}: load it with transformers.{saved_class} or its Auto class"
                    if saved_class and saved_class != type(model).__name__ else "damaged config.json")
            raise ValueError(f"the folder's compressed layer {name!r} is not in a {type(model).__name__} ({hint})")
        names[name] = found
    return names


class CodesignHfQuantizer(HfQuantizer):
    """Loads a folder save_compressed wrote: its compressed layers are built before transformers loads the tensors."""

    requires_calibration = True  # it only loads what codesign compressed; quantizing on load is codesign.compress's
    quantization_config: CodesignQuantizationConfig

    def update_attn_implementation(self, config: Any) -> Any:
        """The attention the model was saved with, unless the caller asked for one; the weights guard comes off."""
        weights = getattr(config, "transformers_weights", None)
        if isinstance(weights, str) and weights.startswith(_GUARD_START):
            del config.transformers_weights  # model.safetensors is found as in any folder
        if config._attn_implementation is None and self.quantization_config.attn_implementation:
            config._attn_implementation = self.quantization_config.attn_implementation
        return config

    def _process_model_before_weight_loading(self, model: Any, **kwargs: Any) -> Any:
        files = kwargs.get("checkpoint_files") or []
        if len(files) != 1 or not str(files[0]).endswith(".safetensors"):
            raise ValueError(f"a codesign-compressed model is one model.safetensors file, found {len(files)} "
                             f"checkpoint files ({', '.join(os.path.basename(str(f)) for f in files)})")
        records = self.quantization_config.layers
        names = _layer_names(model, list(records), self.quantization_config.transformers_class)
        with torch.device("cpu"):  # transformers builds the model on the meta device; the stored tensors are real
            layers = build_layers(records, read_layer_tensors(files[0], records))
        from codesign.llm.swap import replace_modules  # noqa: PLC0415

        replace_modules(model, {names[name]: layer for name, layer in layers.items() if name in names})
        return model

    def is_serializable(self) -> bool:
        """False: a compressed model is saved with codesign.compress.save_compressed, not save_pretrained."""
        return False

    @property
    def is_trainable(self) -> bool:
        """False: the stored codes are buffers, not trainable weights."""
        return False


def register(auto: Any) -> None:
    """Register the config and the quantizer in transformers.quantizers.auto (the module given), once."""
    if QUANT_METHOD not in auto.AUTO_QUANTIZATION_CONFIG_MAPPING:
        auto.register_quantization_config(QUANT_METHOD)(CodesignQuantizationConfig)
    if QUANT_METHOD not in auto.AUTO_QUANTIZER_MAPPING:
        auto.register_quantizer(QUANT_METHOD)(CodesignHfQuantizer)


# importing this module first (not through codesign.compress's hook) registers as well; register runs once
register(importlib.import_module("transformers.quantizers.auto"))
