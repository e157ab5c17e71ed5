"""Save a compressed model to a folder and load it back: safetensors for every tensor, a small JSON manifest.

    save_compressed(model, "out/")          # model.safetensors + compressed.json (+ config.json)
    model = load_compressed("out/")         # a transformers model: rebuilt from config.json, no original weights
    model = load_compressed("out/", model=skeleton)   # any other torch module: its uncompressed skeleton

model.safetensors holds the whole state (compressed layers' codes, scales, codebooks, factors and
every other parameter; tied tensors once). compressed.json names the format and its version, the
module class, and for each compressed layer its stored layout (codesign.compress.qtensor.flatten_weight),
so the layers can be rebuilt before the tensors are loaded. A transformers model's config is written
as config.json beside it, with a `quantization_config` (quant_method "codesign", the same layer records) that
lets transformers' from_pretrained rebuild the model once codesign is imported (codesign.compress.hf_quantizer).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

from codesign.compress.linear import QuantizedLinear
from codesign.compress.lowrank import LowRankLinear
from codesign.compress.qtensor import unflatten_weight

__all__ = ["FORMAT", "FORMAT_VERSION", "COMPRESSED_FILES", "QUANT_METHOD", "WEIGHTS_GUARD", "save_compressed",
           "write_compressed", "load_compressed", "read_manifest", "compressed_layers", "state_bytes",
           "read_layer_tensors", "build_layers"]

FORMAT = "codesign-compressed"
FORMAT_VERSION = 2
MANIFEST, TENSORS, CONFIG = "compressed.json", "model.safetensors", "config.json"
COMPRESSED_FILES = (TENSORS, MANIFEST, CONFIG)
#: the quant_method of the quantization_config in config.json (transformers' name for codesign's quantizer)
QUANT_METHOD = "codesign"
#: config.json's `transformers_weights` in a saved folder. transformers skips a quant_method it does not know and
#: would start the compressed layers' weights random; a weights file name not ending in .safetensors makes it stop
#: with this text instead. codesign's quantizer (registered when codesign is imported) removes it before loading.
WEIGHTS_GUARD = ("model.safetensors holds layers compressed by codesign: import codesign before from_pretrained, "
                 "or load the folder with codesign.compress.load_compressed")


def _safetensors():
    try:
        import safetensors.torch  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError("saving compressed models needs safetensors: pip install 'codesign[llm]'") from exc
    return safetensors.torch


def compressed_layers(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    """Qualified name -> module for every compressed linear (QuantizedLinear, LowRankLinear) of the model."""
    return {n: m for n, m in model.named_modules() if isinstance(m, (QuantizedLinear, LowRankLinear))}


def state_bytes(model: torch.nn.Module) -> int:
    """Bytes of the model's state (parameters and persistent buffers), a tensor shared by several modules counted once."""
    seen: dict[tuple[int, int], int] = {}
    for tensor in model.state_dict().values():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset())
        seen[key] = max(seen.get(key, 0), tensor.numel() * tensor.element_size())
    return sum(seen.values())


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def _layer_record(module: torch.nn.Module) -> dict:
    bias = module.bias is not None
    if isinstance(module, QuantizedLinear):
        return {"module": "quantized", "layout": module.layout, "kernel": module.kernel, "bias": bias}
    return {"module": "lowrank", "bias": bias}


def save_compressed(model: torch.nn.Module, out: Path | str, meta: Mapping | None = None, *,
                    force: bool = False) -> Path:
    """Save the model to the folder `out` (codesign's output-folder policy: force replaces an earlier save only)."""
    from codesign.outputs import OutputFolder  # noqa: PLC0415

    folder = OutputFolder(out, "compress", force=force, expected=COMPRESSED_FILES, option="folder")
    with folder.writing() as work:
        write_compressed(model, work, meta)
    return folder.target


def write_compressed(model: torch.nn.Module, out: Path | str, meta: Mapping | None = None) -> Path:
    """Write model.safetensors, compressed.json (format, version, class, layer layouts, `meta`) and config.json into out."""
    out = Path(out)
    layers = compressed_layers(model)
    if not layers:
        raise ValueError("the model has no compressed layers to save (run codesign.compress.quantize_ first)")
    config = getattr(model, "config", None)
    transformers_model = type(model).__module__.startswith("transformers.") and hasattr(config, "to_json_file")
    floats = [p.dtype for p in model.parameters() if p.is_floating_point()]
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "class": f"{type(model).__module__}.{type(model).__qualname__}",
        "transformers_class": type(model).__name__ if transformers_model else None,
        "dtype": str(floats[0]).replace("torch.", "") if floats else None,
        "attn_implementation": getattr(config, "_attn_implementation", None) if transformers_model else None,
        **dict(meta or {}),
        "layers": {name: _layer_record(m) for name, m in layers.items()},
    }
    _safetensors().save_model(model, str(out / TENSORS), metadata={"format": FORMAT,
                                                                 "format_version": str(FORMAT_VERSION)})
    # safetensors writes its file 0600; the user's umask decides, as for every other file written here
    os.chmod(out / TENSORS, 0o666 & ~_umask())
    if transformers_model:
        _write_config(config, document, out / CONFIG)
    (out / MANIFEST).write_text(json.dumps(document, indent=1))
    return out


def _write_config(config, document: Mapping, path: Path) -> None:  # noqa: ANN001 - a transformers PreTrainedConfig
    """config.json: the model's config with the quantization_config from_pretrained reads, and the weights guard."""
    data = json.loads(config.to_json_string())
    if document.get("dtype"):
        data["dtype"] = document["dtype"]  # from_pretrained's dtype="auto" reads it: the dtype load_compressed uses
    data["quantization_config"] = {
        "quant_method": QUANT_METHOD,
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "transformers_class": document["transformers_class"],
        "attn_implementation": document.get("attn_implementation"),
        "layers": document["layers"],
    }
    data["transformers_weights"] = WEIGHTS_GUARD
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_manifest(out: Path | str) -> dict:
    """The compressed.json document of a saved folder; ValueError for a missing, unreadable or other-version manifest."""
    path = Path(out) / MANIFEST
    if not path.is_file():
        raise ValueError(f"{path} not found: not a compressed-model folder")
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable manifest ({type(exc).__name__})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} manifest")
    if document.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path} has format version {document.get('format_version')!r}; this codesign reads "
                         f"version {FORMAT_VERSION} (recompress the model)")
    return document


def _damaged(path: Path, exc: Exception) -> ValueError:
    return ValueError(f"{path} is not a readable safetensors file (truncated or damaged: "
                      f"{str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})")


def _read_tensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise ValueError(f"{path} not found")
    st = _safetensors()
    try:
        return st.load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types for damaged files
        raise _damaged(path, exc) from None


def read_layer_tensors(path: Path | str, layers: Iterable[str]) -> dict[str, torch.Tensor]:
    """The stored tensors of the named layers only (name.field -> tensor, on the CPU); ValueError for a missing or damaged file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path} not found")
    _safetensors()
    from safetensors import safe_open  # noqa: PLC0415

    prefixes = tuple(name + "." for name in layers)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return {key: f.get_tensor(key) for key in f.keys() if key.startswith(prefixes)}
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types for damaged files
        raise _damaged(path, exc) from None


def _transformers_skeleton(out: Path, document: dict) -> torch.nn.Module:
    name = document.get("transformers_class")
    if not name:
        raise ValueError(f"{out} holds a {document.get('class')} (not a transformers model): pass its uncompressed "
                         "skeleton as load_compressed(folder, model=...)")
    transformers = importlib.import_module("transformers")
    cls = getattr(transformers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise ValueError(f"transformers has no model class {name!r}")
    config = transformers.AutoConfig.from_pretrained(str(out))
    # they describe the folder to from_pretrained, not the model built here
    for key in ("quantization_config", "transformers_weights"):
        config.__dict__.pop(key, None)
    options: dict = {"attn_implementation": document["attn_implementation"]} if document.get("attn_implementation") else {}
    if document.get("dtype"):
        # built in that dtype as from_pretrained builds it (rotary frequencies stay float32), not cast after
        options["dtype"] = getattr(torch, document["dtype"])
    return cls._from_config(config, **options)


def _build_layer(name: str, record: dict, tensors: Mapping[str, torch.Tensor]) -> torch.nn.Module:
    prefix = name + "."
    own = {key[len(prefix):]: t for key, t in tensors.items() if key.startswith(prefix)}
    bias = own.get("bias") if record.get("bias") else None
    if record.get("bias") and bias is None:
        raise ValueError(f"stored tensor {prefix}bias is missing")
    if record.get("module") == "quantized":
        return QuantizedLinear(unflatten_weight(record["layout"], own), bias, record.get("kernel", "auto"))
    if record.get("module") == "lowrank":
        if "left" not in own or "right" not in own:
            raise ValueError(f"stored low-rank factors of {name} are missing")
        return LowRankLinear(own["left"], own["right"], bias)
    raise ValueError(f"unknown module kind {record.get('module')!r} for layer {name}")


def build_layers(records: Mapping[str, dict], tensors: Mapping[str, torch.Tensor]) -> dict[str, torch.nn.Module]:
    """Layer name -> the QuantizedLinear or LowRankLinear its manifest record and stored tensors describe."""
    if not isinstance(records, Mapping) or not all(isinstance(r, Mapping) for r in records.values()):
        raise ValueError("the layer records are not a mapping of layer name -> record")
    layers = {}
    for name, record in records.items():
        try:
            layers[name] = _build_layer(name, dict(record), tensors)
        except (KeyError, TypeError) as exc:  # a record lacking a field, or one of the wrong type
            raise ValueError(f"the record of layer {name} is damaged ({type(exc).__name__}: {exc})") from None
        except ValueError as exc:  # a layout the stored tensors do not fit
            raise ValueError(f"layer {name}: {exc}") from None
    return layers


def load_compressed(out: Path | str, model: torch.nn.Module | None = None) -> torch.nn.Module:
    """The model saved in out, in eval mode: a transformers model is rebuilt from config.json; any other needs `model`.

    model: the uncompressed module of the same architecture; its compressed layers are replaced and
    every tensor is loaded from the folder (in place).
    """
    from codesign.llm.swap import replace_modules  # noqa: PLC0415

    out = Path(out)
    document = read_manifest(out)
    tensors = _read_tensors(out / TENSORS)
    if model is None:
        model = _transformers_skeleton(out, document)
    replace_modules(model, build_layers(document.get("layers"), tensors))
    try:
        missing, unexpected = _safetensors().load_model(model, str(out / TENSORS), strict=False)
    except RuntimeError as exc:
        raise ValueError(f"{out / TENSORS} does not fit the model: {str(exc).splitlines()[0][:200]}") from None
    if missing or unexpected:
        what = f"missing {missing[0]!r}" if missing else f"unexpected {unexpected[0]!r}"
        raise ValueError(f"{out / TENSORS} does not fit the model ({what}; {len(missing)} missing, "
                         f"{len(unexpected)} unexpected)")
    return model.eval()
