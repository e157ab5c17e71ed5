"""The KAN online learner behind a frozen Keras 3 network, through hls4ml's Keras 3 frontend.

The Keras twin of :mod:`codesign.fpga.hls4ml_head`: a user's Keras 3 model (HGQ2 layers, or HGQ2's
QKeras-compatible API ``qkeras.qlayers.QDense`` / ``QActivation`` with ``qkeras.quantized_bits``), frozen,
gets a :class:`KANOnlineHead` layer as its last layer (:func:`attach_online_head`); :func:`to_hls4ml`
converts it with hls4ml's Keras 3 frontend. What hls4ml sees behind the handler registered here is the
torch path's IR layer, templates and firmware writer, unchanged: the same extension, the same learner
firmware, the same stream semantics (one ``predict()`` over a stream is exact online learning; the next
continues from there; ``compile()`` starts again from the initial coefficients). The checks of
:mod:`codesign.fpga.hls4ml_head` (``check_stream``, ``head_state``, ...) apply to the converted model as
they are; :func:`check_backbone` adds the Keras side: the backbone's own fixed-point output against
hls4ml's C-simulation of it.

Keras runs on its torch backend (no TensorFlow): importing this module before keras makes torch the
default (``KERAS_BACKEND``); keras already running on another backend is refused in one line.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codesign.fpga import hls4ml_head
from codesign.fpga.hls4ml_head import SUPPORTED_IO_TYPES, StreamCheck, register_extension
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec

__all__ = [
    "KERAS_BACKEND", "check_keras", "register_extension", "KANOnlineHead", "attach_online_head", "unconvertible_layers", "to_hls4ml",
    "backbone_of", "BackboneCheck", "check_backbone", "check_headed_stream",
]

KERAS_BACKEND = "torch"  # the one Keras backend the head runs on: torch is already a dependency, TensorFlow is not
TARGET_INPUT = "target"  # the name of the target input attach_online_head adds (hls4ml names its input layer so)


def check_keras() -> None:
    """Raise a one-line ValueError unless keras (3) runs on the torch backend and hls4ml has its Keras 3 frontend."""
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", KERAS_BACKEND)
    setting = os.environ.get("KERAS_BACKEND")
    try:
        keras = importlib.import_module("keras")
    except ImportError as exc:  # e.g. KERAS_BACKEND=tensorflow without TensorFlow
        raise ValueError(f"keras does not import with KERAS_BACKEND={setting} ({exc}): the Keras online head needs "
                         "pip install 'codesign[keras]' and KERAS_BACKEND=torch") from None
    version = getattr(keras, "__version__", "?")
    if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < 3:
        raise ValueError(f"keras {version} is not Keras 3: the Keras online head needs pip install 'codesign[keras]'")
    backend = keras.backend.backend()
    if backend != KERAS_BACKEND:
        raise ValueError(f"keras runs on its {backend!r} backend (KERAS_BACKEND={setting or 'unset, from keras.json'}): "
                         "the Keras online head needs KERAS_BACKEND=torch, set before keras is imported")
    try:
        importlib.import_module("hls4ml.converters.keras_v3._base").KerasV3LayerHandler  # noqa: B018
    except (ImportError, AttributeError):
        raise ValueError(f"hls4ml {importlib.import_module('hls4ml').__version__} has no Keras 3 frontend "
                         "(hls4ml.converters.keras_v3._base.KerasV3LayerHandler): pip install 'hls4ml>=1.2'") from None


check_keras()

import hls4ml  # noqa: E402
import keras  # noqa: E402 - after the check, so that the backend is torch
from hls4ml.converters.keras_v3._base import KerasV3LayerHandler  # noqa: E402


@keras.saving.register_keras_serializable(package="codesign")
class KANOnlineHead(keras.layers.Layer):
    """The online KAN learner as a Keras layer: called on [features, target], it predicts, then learns, sample by sample.

    In Keras it runs the bit-exact Python reference (features and targets quantized to act_t); hls4ml
    converts it to the learner's HLS (the same arithmetic).
    """

    def __init__(self, spec: KANSpec, coefficients: list[np.ndarray] | None = None, seed: int = 0, train: bool = True,
                 **kwargs: Any):
        super().__init__(trainable=False, **kwargs)
        self.spec = spec
        self.seed = seed
        self.train_enabled = bool(train)
        self.learner = KANLearner(spec, coefficients, seed)
        self.initial_raw = self.learner.coefficients_raw()

    def compute_output_spec(self, inputs: list[Any]) -> Any:
        """A (batch, n_out) float tensor."""
        return keras.KerasTensor((inputs[0].shape[0], self.spec.n_outputs), dtype=self.compute_dtype)

    def call(self, inputs: list[Any]) -> Any:
        """Predictions (before each sample's update) over the batch, taken as a stream in order."""
        features, target = inputs
        act = self.spec.act_t
        x = act.quantize(np.asarray(keras.ops.convert_to_numpy(features), dtype=np.float64).reshape(-1, self.spec.n_inputs))
        y = act.quantize(np.asarray(keras.ops.convert_to_numpy(target), dtype=np.float64).reshape(-1, self.spec.n_outputs))
        pred = self.learner.run_raw(x, y, train=self.train_enabled)
        return keras.ops.convert_to_tensor(act.to_float(pred), dtype=self.compute_dtype)

    def get_config(self) -> dict[str, Any]:
        """The spec, the initial coefficients, the seed and the train flag (what from_config needs)."""
        return {**super().get_config(), "spec": self.spec.to_dict(), "seed": self.seed, "train": self.train_enabled,
                "coefficients": [self.spec.coef_t.to_float(c).tolist() for c in self.initial_raw]}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> KANOnlineHead:
        """The layer of get_config()."""
        config = dict(config)
        spec = spec_from_mapping("kan", config.pop("spec"))
        if not isinstance(spec, KANSpec):
            raise ValueError(f"the online head's spec is a KAN spec, got {type(spec).__name__}")
        coefficients = [np.asarray(c) for c in config.pop("coefficients")]
        config.pop("trainable", None)
        return cls(spec, coefficients, seed=config.pop("seed"), train=config.pop("train"), **config)


def attach_online_head(backbone: keras.Model, spec: KANSpec, coefficients: list[np.ndarray] | None = None,
                       seed: int = 0, train: bool = True) -> keras.Model:
    """The backbone (frozen) with an online KAN learner of ``spec`` behind it: inputs (backbone inputs..., target).

    The backbone's one output, of width spec.widths[0], feeds the head; the target has spec.widths[-1] values.
    """
    if not isinstance(backbone, keras.Model):
        raise ValueError(f"the backbone must be a keras.Model, got {type(backbone).__name__}")
    if not backbone.built or not backbone.inputs:
        raise ValueError(f"the Keras model {backbone.name!r} has no inputs yet: build it on keras.Input(...) first")
    if len(backbone.outputs) != 1:
        raise ValueError(f"the Keras model {backbone.name!r} has {len(backbone.outputs)} outputs; the head takes one")
    width = tuple(backbone.outputs[0].shape[1:])
    if width != (spec.n_inputs,):
        raise ValueError(f"the online head expects features ({spec.n_inputs},), the Keras model {backbone.name!r} "
                         f"gives {width}")
    backbone.trainable = False
    target = keras.Input((spec.n_outputs,), name=TARGET_INPUT)
    head = KANOnlineHead(spec, coefficients, seed, train, name="kan_online_head")
    return keras.Model([*backbone.inputs, target], head([backbone.outputs[0], target]), name=f"{backbone.name}_kan_head")


# ----------------------------------------------------------------------------- hls4ml's Keras 3 frontend


class _HeadHandler(KerasV3LayerHandler):
    """hls4ml's Keras 3 handler of KANOnlineHead: the torch path's IR layer, with the layer's spec and coefficients."""

    handles = (f"{__name__}.KANOnlineHead",)  # the class's own module.name: registered on import

    def handle(self, layer: KANOnlineHead, in_tensors: Any, out_tensors: Any) -> dict[str, Any]:
        """The IR layer's dict (KANOnlineHeadLayer of codesign.fpga.hls4ml_head)."""
        spec = layer.spec
        shapes = [tuple(t.shape[1:]) for t in in_tensors]
        if shapes != [(spec.n_inputs,), (spec.n_outputs,)]:
            raise ValueError(f"the online head {layer.name} expects features ({spec.n_inputs},) and target "
                             f"({spec.n_outputs},), got {', '.join(map(str, shapes))}")
        return {"class_name": "KANOnlineHeadLayer", "spec": spec, "initial_raw": layer.initial_raw, "seed": layer.seed,
                "train": layer.train_enabled}


def _kif(t: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keep-negative, integer, fractional) bits of an hls4ml fixed precision over a shape, as the bit-exact flow counts them."""
    k, i, f = int(t.signed), t.integer - int(t.signed), t.fractional
    return tuple(np.full(shape, v, dtype=np.int16) for v in (k, i, f))  # type: ignore[return-value]


def _register_bit_exact_rules() -> None:
    """The head's rules in hls4ml's bit-exact precision flow, which HGQ2 / QKeras-API models turn on.

    The head produces act_t; it takes any feature type (it rounds to act_t itself, so it asks for every bit
    the network produces) and asks for act_t's bits of the target; its output type stays act_t.
    """
    from hls4ml.model.optimizer.passes import bit_exact  # noqa: PLC0415

    missing = [n for n in ("_produce_kif", "_request_kif", "register_precision", "_maximum_kif_at_shape") if not hasattr(bit_exact, n)]
    if missing:
        raise ValueError(f"hls4ml {hls4ml.__version__}'s bit-exact flow has no {', '.join(missing)}: the Keras online head "
                         "is known to work with hls4ml 1.3")
    head_cls = hls4ml_head.KANOnlineHeadLayer

    @bit_exact._produce_kif.register(head_cls)
    def _(layer: Any) -> Any:
        return _kif(layer.get_output_variable().type.precision, tuple(layer.get_output_variable().shape))

    @bit_exact._request_kif.register(head_cls)
    def _(layer: Any) -> Any:
        features, target = (layer.get_input_variable(name) for name in layer.inputs)
        spec: KANSpec = layer.get_attr("spec")
        act = layer.model.config.backend.convert_precision_string(str(spec.act_t))
        return bit_exact._maximum_kif_at_shape(tuple(features.shape)), _kif(act, tuple(target.shape))

    @bit_exact.register_precision.register(head_cls)
    def _(node: Any) -> None:
        return None  # act_t, as the layer declared it


_bit_exact_registered: list[bool] = []


def _register_bit_exact_once() -> None:
    if not _bit_exact_registered:
        _register_bit_exact_rules()
        _bit_exact_registered.append(True)


def _handled(layer: keras.layers.Layer, v2_fallback: bool) -> bool:
    """Whether hls4ml's Keras 3 frontend (or its Keras 2 fallback) has a handler for the layer."""
    from hls4ml.converters.keras_v2_to_hls import layer_handlers as v2  # noqa: PLC0415
    from hls4ml.converters.keras_v3 import layer_handlers as v3  # noqa: PLC0415

    name = type(layer).__name__
    return f"{type(layer).__module__}.{name}" in v3 or name in v3 or (v2_fallback and name in v2)


def unconvertible_layers(model: keras.Model, v2_fallback: bool = True) -> list[str]:
    """The layers of the model hls4ml's Keras 3 frontend has no handler for, as 'name (module.Class)'."""
    return [f"{layer.name} ({type(layer).__module__}.{type(layer).__name__})"
            for layer in model.layers if not _handled(layer, v2_fallback)]


def to_hls4ml(model: keras.Model, output_dir: str | Path, backend: str = "Vitis", io_type: str = "io_parallel",
              default_precision: str = "ap_fixed<16,6>", allow_v2_fallback: bool = True, **convert_args: Any) -> Any:
    """Convert a headed Keras model with hls4ml's Keras 3 frontend; the inputs are (the backbone's inputs, target).

    The target input's type is the spec's act_t; HGQ2 / QKeras-API layers carry their own types, the rest
    follow ``default_precision``. A layer hls4ml cannot convert is refused in one line that names it.
    """
    check_keras()
    if io_type not in SUPPORTED_IO_TYPES:
        raise ValueError(f"the online head supports io_type {', '.join(SUPPORTED_IO_TYPES)}, not {io_type!r}")
    heads = [layer for layer in model.layers if isinstance(layer, KANOnlineHead)]
    if len(heads) != 1:
        raise ValueError(f"the Keras model {model.name!r} has {len(heads)} online heads; attach exactly one with attach_online_head")
    missing = unconvertible_layers(model, allow_v2_fallback)
    if missing:
        raise ValueError(f"hls4ml {hls4ml.__version__} cannot convert the layer {missing[0]} of {model.name!r}: its Keras 3 "
                         "frontend has no handler for it" + (f" ({len(missing) - 1} more)" if len(missing) > 1 else ""))
    register_extension(backend)
    _register_bit_exact_once()
    config = hls4ml.utils.config_from_keras_model(model, granularity="name", backend=backend,
                                                  default_precision=default_precision)
    config.setdefault("LayerName", {}).setdefault(TARGET_INPUT, {})["Precision"] = {"result": str(heads[0].spec.act_t)}
    try:
        # da4ml's fallback is left out: it is not a dependency, and a layer it would take is refused above
        return hls4ml.converters.convert_from_keras_model(model, output_dir=str(output_dir), backend=backend, io_type=io_type,
                                                          hls_config=config, allow_da_fallback=False,
                                                          allow_v2_fallback=allow_v2_fallback, **convert_args)
    except ValueError as exc:
        if "unexpected input layer chain" not in str(exc):
            raise
        # hls4ml's bit-exact flow (on for HGQ2 / QKeras-API models) types an input only through a quantizer behind it
        raise ValueError(f"an input of {model.name!r} reaches a layer without an input quantizer ({exc}): start the "
                         "backbone with a quantizer (QActivation(quantized_bits(...)) or input_quantizer=...)") from None


# ----------------------------------------------------------------------------- the Keras side of the check


def backbone_of(model: keras.Model) -> keras.Model:
    """The frozen backbone of a headed model: its inputs but the target, to the head's features."""
    head = next((layer for layer in model.layers if isinstance(layer, KANOnlineHead)), None)
    if head is None:
        raise ValueError(f"the Keras model {model.name!r} has no online head")
    features, target = head.input
    return keras.Model([t for t in model.inputs if t is not target], features)


@dataclass(frozen=True)
class BackboneCheck:
    """The Keras backbone's own output against hls4ml's C-simulation of it, raw integer for raw integer."""

    samples: int
    values: int
    mismatches: int  # values whose raw integers differ (or whose Keras value the hls4ml type cannot hold)
    network_t: str  # the backbone output's type in hls4ml

    @property
    def bit_exact(self) -> bool:
        """No mismatch."""
        return self.mismatches == 0


def check_backbone(check: StreamCheck, backbone: keras.Model, x: np.ndarray) -> BackboneCheck:
    """Compare the backbone's Keras output on ``x`` with hls4ml's trace of it (``check``, from check_stream on the same x)."""
    keras_out = np.asarray(backbone.predict(np.asarray(x, dtype=np.float32), batch_size=4096, verbose=0), dtype=np.float64)
    keras_out = keras_out.reshape(check.network_raw.shape)
    t = check.network_t
    keras_raw = t.quantize(keras_out)
    differ = (keras_raw != check.network_raw) | (t.to_float(keras_raw) != keras_out)
    return BackboneCheck(samples=len(keras_out), values=int(keras_out.size), mismatches=int(differ.sum()), network_t=str(t))


def check_headed_stream(hls_model: Any, model: keras.Model, x: np.ndarray, target: np.ndarray) -> tuple[StreamCheck, BackboneCheck]:
    """check_stream on a just-compiled headed model, and check_backbone on the same stream."""
    check = hls4ml_head.check_stream(hls_model, x, target)
    return check, check_backbone(check, backbone_of(model), x)
