"""The KAN online learner as the last layer of an hls4ml model, through hls4ml's extension API.

A frozen torch network and a :class:`KANOnlineHead` behind it (:func:`attach_online_head`) convert
with hls4ml's pytorch frontend (:func:`to_hls4ml`); the target is the model's second input. What
this module registers with hls4ml (:func:`register_extension`): a pytorch layer handler for
``KANOnlineHead``, an IR layer, a config and a function-call template for the Vivado and Vitis
backends, and a pass in the backend's write flow that writes the learner's generated firmware
(``codesign.fpga.kan.firmware``, unchanged) into ``firmware/codesign_kan_head/``. hls4ml's ``compile()`` and
``predict()`` then run the whole model in its C-simulation; the learner's coefficients are static,
so one ``predict()`` over a stream is exact online learning, sample after sample, and the next
``predict()`` continues from there (a new ``compile()`` starts again from the initial coefficients).

Conversions: each feature (the network's output, in its hls4ml type) and each target is assigned
to the spec's act_t (rounded and saturated by act_t's modes); the prediction leaves as act_t.
Limits: the Vivado and Vitis backends, ``io_parallel``, one head per model, as the model's output.
"""

from __future__ import annotations

import ctypes
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codesign import __version__
from codesign.fixed import FixedType, OMode, QMode
from codesign.fpga.kan import firmware as kan_firmware
from codesign.fpga.templates import library_headers, render
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec

__all__ = [
    "SUPPORTED_BACKENDS", "SUPPORTED_IO_TYPES", "FIRMWARE_FOLDER", "check_extension_api", "register_extension",
    "KANOnlineHead", "HeadedNetwork", "attach_online_head", "to_hls4ml", "head_layer", "fixed_type_of",
    "predictions_raw", "head_state", "traced_stream", "reference_stream", "StreamCheck", "check_stream",
]

SUPPORTED_BACKENDS = ("Vivado", "Vitis")
SUPPORTED_IO_TYPES = ("io_parallel",)
FIRMWARE_FOLDER = "codesign_kan_head"  # under the hls4ml project's firmware/

# What of hls4ml's extension API the head uses: module -> attributes.
_EXTENSION_API = {
    "hls4ml.model.layers": ("Layer", "register_layer"),
    "hls4ml.converters": ("register_pytorch_layer_handler", "get_supported_pytorch_layers", "convert_from_pytorch_model"),
    "hls4ml.utils.torch": ("HLS4MLModule",),
    "hls4ml.backends.template": ("LayerConfigTemplate", "FunctionCallTemplate"),
    "hls4ml.model.optimizer": ("ModelOptimizerPass",),
    "hls4ml.backends.backend": ("Backend",),
}
_BACKEND_METHODS = ("register_template", "register_pass")


def check_extension_api() -> None:
    """Raise a one-line ValueError when the installed hls4ml lacks a part of the extension API the head uses."""
    try:
        version = importlib.import_module("hls4ml").__version__
    except ImportError:
        raise ValueError("hls4ml is not installed: pip install 'hls4ml>=1.0'") from None
    missing = []
    for module_name, names in _EXTENSION_API.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(module_name)
            continue
        missing += [f"{module_name}.{n}" for n in names if not hasattr(module, n)]
    backend_cls = getattr(importlib.import_module("hls4ml.backends.backend"), "Backend", None)
    if backend_cls is not None:
        missing += [f"Backend.{m}" for m in _BACKEND_METHODS if not hasattr(backend_cls, m)]
    if missing:
        raise ValueError(f"hls4ml {version} has no extension API ({', '.join(missing)} missing): "
                         "the online head needs hls4ml >= 1.0 (pip install 'hls4ml>=1.0')")


check_extension_api()

import hls4ml  # noqa: E402 - after the check, so an old hls4ml fails with one line
import torch  # noqa: E402
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate  # noqa: E402
from hls4ml.model.optimizer import ModelOptimizerPass  # noqa: E402
from hls4ml.utils.torch import HLS4MLModule  # noqa: E402


class KANOnlineHead(HLS4MLModule):
    """The online KAN learner as a torch module: forward(features, target) predicts, then learns, sample by sample.

    In torch it runs the bit-exact Python reference (features and targets quantized to act_t); hls4ml
    converts it to the learner's HLS (the same arithmetic).
    """

    def __init__(self, spec: KANSpec, coefficients: list[np.ndarray] | None = None, seed: int = 0, train: bool = True):
        super().__init__()
        self.spec = spec
        self.seed = seed
        self.train_enabled = bool(train)
        self.learner = KANLearner(spec, coefficients, seed)
        self.initial_raw = self.learner.coefficients_raw()

    def forward(self, features: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Predictions (before each sample's update) over the batch, taken as a stream in order."""
        act = self.spec.act_t
        x = act.quantize(features.detach().cpu().double().numpy().reshape(-1, self.spec.n_inputs))
        y = act.quantize(target.detach().cpu().double().numpy().reshape(-1, self.spec.n_outputs))
        pred = self.learner.run_raw(x, y, train=self.train_enabled)
        return torch.from_numpy(act.to_float(pred))


class HeadedNetwork(torch.nn.Module):
    """A frozen network with the online head behind it: forward(x, target) = head(network(x), target)."""

    def __init__(self, network: torch.nn.Module, head: KANOnlineHead):
        super().__init__()
        self.network = network.eval()
        for p in self.network.parameters():
            p.requires_grad_(False)
        self.head = head

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The head's predictions for the network's outputs."""
        return self.head(self.network(x), target)


def attach_online_head(network: torch.nn.Module, spec: KANSpec, coefficients: list[np.ndarray] | None = None,
                       seed: int = 0, train: bool = True) -> HeadedNetwork:
    """The network (frozen) with an online KAN learner of ``spec`` behind it; its width is spec.widths[0]."""
    return HeadedNetwork(network, KANOnlineHead(spec, coefficients, seed, train))


# ----------------------------------------------------------------------------- hls4ml IR, templates, writer


class KANOnlineHeadLayer(hls4ml.model.layers.Layer):
    """hls4ml's IR of the head: inputs (features, target), output the prediction in act_t."""

    def initialize(self) -> None:
        """The output variable: n_out predictions, of the spec's act_t."""
        spec: KANSpec = self.get_attr("spec")
        precision = self.model.config.backend.convert_precision_string(str(spec.act_t))
        self.add_output_variable([spec.n_outputs], precision=precision)


_CONFIG = """struct config{index} {{
    static const unsigned n_in = {n_in};
    static const unsigned n_out = {n_out};
    static const bool train = {train};
}};
"""
_CALL = "codesign::hls4ml_head::kan_online_head<{input_t}, {target_t}, {output_t}, {config}>({input}, {target}, {output});"


class _HeadConfigTemplate(LayerConfigTemplate):
    def __init__(self):
        super().__init__(KANOnlineHeadLayer)

    def format(self, node: KANOnlineHeadLayer) -> str:
        spec: KANSpec = node.get_attr("spec")
        return _CONFIG.format(index=node.index, n_in=spec.n_inputs, n_out=spec.n_outputs,
                              train="true" if node.get_attr("train") else "false")


class _HeadFunctionTemplate(FunctionCallTemplate):
    def __init__(self):
        super().__init__(KANOnlineHeadLayer, include_header=[f"{FIRMWARE_FOLDER}/kan_online_head.h"])

    def format(self, node: KANOnlineHeadLayer) -> str:
        target = node.get_input_variable(node.inputs[1])
        params = self._default_function_params(node)
        return _CALL.format(**params, target_t=target.type.name, target=target.name)


def _write_head_firmware(model: Any) -> bool:
    """Write each head's learner firmware into firmware/codesign_kan_head/ of the hls4ml project."""
    heads = [n for n in model.get_layers() if isinstance(n, KANOnlineHeadLayer)]
    if not heads:
        return False
    head = heads[0]
    spec: KANSpec = head.get_attr("spec")
    folder = Path(model.config.get_output_dir()) / "firmware" / FIRMWARE_FOLDER
    files = dict(kan_firmware.render_firmware(spec, head.get_attr("initial_raw"), head.get_attr("seed")))
    files = {Path(rel).name: text for rel, text in files.items()}  # firmware/x -> x
    files[f"{kan_firmware.LEARNER}.h"] = render(
        "common/top.h", version=__version__, learner=kan_firmware.LEARNER, top=f"{kan_firmware.LEARNER}_top",
        guard=f"{kan_firmware.LEARNER.upper()}_H_", state_what=kan_firmware.STATE_WHAT,
    )
    files.update({f"codesign/{name}": text for name, text in library_headers().items()})
    files["kan_online_head.h"] = render("hls4ml_head/kan_online_head.h", version=__version__,
                                        spec_line=json.dumps(spec.to_dict()))
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return True


def _parse_head(operation: str, layer_name: str, input_names: list[str], input_shapes: list[list[int | None]], node: Any,
                class_object: KANOnlineHead, data_reader: Any, config: Any) -> tuple[dict[str, Any], list[int | None]]:
    """hls4ml's pytorch handler of KANOnlineHead: the layer dict and the output shape."""
    spec: KANSpec = class_object.spec
    if len(input_shapes) != 2:
        raise ValueError(f"the online head {layer_name} takes (features, target), got {len(input_shapes)} inputs")
    (features, target) = (list(s[1:]) for s in input_shapes)
    if features != [spec.n_inputs] or target != [spec.n_outputs]:
        raise ValueError(f"the online head {layer_name} expects features ({spec.n_inputs},) and target "
                         f"({spec.n_outputs},), got {tuple(features)} and {tuple(target)}")
    layer = {
        "class_name": "KANOnlineHeadLayer", "name": layer_name, "inputs": input_names,
        "spec": spec, "initial_raw": class_object.initial_raw, "seed": class_object.seed,
        "train": class_object.train_enabled,
    }
    return layer, [None, spec.n_outputs]


_registered_backends: set[str] = set()


def register_extension(backend: str) -> None:
    """Register the head with hls4ml: its pytorch handler and IR layer, and its templates and writer pass for ``backend``."""
    if backend not in SUPPORTED_BACKENDS:
        raise ValueError(f"the online head supports the hls4ml backends {', '.join(SUPPORTED_BACKENDS)}, not {backend!r}")
    if "KANOnlineHead" not in hls4ml.converters.get_supported_pytorch_layers():
        hls4ml.converters.register_pytorch_layer_handler("KANOnlineHead", _parse_head)
    hls4ml.model.layers.register_layer("KANOnlineHeadLayer", KANOnlineHeadLayer)  # a dict entry: idempotent
    if backend in _registered_backends:
        return
    hls_backend = hls4ml.backends.get_backend(backend)
    hls_backend.register_template(_HeadConfigTemplate)
    hls_backend.register_template(_HeadFunctionTemplate)
    hls_backend.register_pass("codesign_write_kan_head", ModelOptimizerPass("codesign_write_kan_head", _write_head_firmware),
                              flow=f"{backend.lower()}:write")
    _registered_backends.add(backend)


def to_hls4ml(model: HeadedNetwork, input_shape: tuple[int, ...], output_dir: str | Path, backend: str = "Vitis",
              io_type: str = "io_parallel", default_precision: str = "ap_fixed<16,6>", **convert_args: Any) -> Any:
    """Convert a headed network with hls4ml's pytorch frontend; the inputs are (x of input_shape, target).

    The target input's type is the spec's act_t; the rest of the model follows ``default_precision``.
    """
    if io_type not in SUPPORTED_IO_TYPES:
        raise ValueError(f"the online head supports io_type {', '.join(SUPPORTED_IO_TYPES)}, not {io_type!r}")
    register_extension(backend)
    spec = model.head.spec
    shapes = [tuple(input_shape), (spec.n_outputs,)]
    config = hls4ml.utils.config_from_pytorch_model(model, shapes, granularity="name", backend=backend,
                                                    default_precision=default_precision)
    config.setdefault("LayerName", {}).setdefault("target", {})["Precision"] = {"result": str(spec.act_t)}
    return hls4ml.converters.convert_from_pytorch_model(model, output_dir=str(output_dir), backend=backend,
                                                        io_type=io_type, hls_config=config, **convert_args)


# ----------------------------------------------------------------------------- checking it against the reference


def head_layer(hls_model: Any) -> KANOnlineHeadLayer:
    """The model's online head, which must be its one output."""
    heads = [n for n in hls_model.get_layers() if isinstance(n, KANOnlineHeadLayer)]
    if len(heads) != 1:
        raise ValueError(f"the model has {len(heads)} online heads; exactly one is supported")
    if hls_model.get_output_variables() != [heads[0].get_output_variable()]:
        raise ValueError("the online head must be the model's only output")
    return heads[0]


def fixed_type_of(precision: Any) -> FixedType:
    """An hls4ml fixed-point precision as a FixedType (same width, integer bits, sign and modes)."""
    for needed in ("integer", "rounding_mode", "saturation_mode"):
        if not hasattr(precision, needed):
            raise ValueError(f"the hls4ml type {precision} is not a fixed-point type")
    if precision.saturation_bits not in (None, 0):
        raise ValueError(f"the hls4ml type {precision} has saturation bits, which the reference does not model")
    q = QMode[f"AP_{precision.rounding_mode.name}"] if precision.rounding_mode is not None else QMode.AP_TRN
    o = OMode[f"AP_{precision.saturation_mode.name}"] if precision.saturation_mode is not None else OMode.AP_WRAP
    return FixedType(precision.width, precision.integer, precision.signed, q, o)


def predictions_raw(hls_model: Any, predictions: np.ndarray) -> np.ndarray:
    """hls4ml's predictions (doubles of act_t values) as raw act_t integers; refuses a value act_t does not hold."""
    act = head_layer(hls_model).get_attr("spec").act_t
    pred = np.asarray(predictions, dtype=np.float64).reshape(len(predictions), -1)
    raw = act.quantize(pred)
    if not np.array_equal(act.to_float(raw), pred):
        raise ValueError("a prediction is not an act_t value: the head's output type was changed")
    return raw


def head_state(hls_model: Any) -> np.ndarray:
    """The head's coefficients now, raw, in the reference's order, read from the compiled model's library."""
    # hls4ml keeps the loaded library (ctypes) there; kan_online_head.h exports the C-simulation-only reader
    lib = getattr(hls_model, "_top_function_lib", None)
    if lib is None:
        raise ValueError("the model is not compiled: call compile() first")
    n = lib.codesign_kan_head_state_size()
    state = np.zeros(n, dtype=np.int64)
    lib.codesign_kan_head_read_state(state.ctypes.data_as(ctypes.POINTER(ctypes.c_longlong)))
    return state


def _input_raw(hls_model: Any, name: str, values: np.ndarray) -> tuple[np.ndarray, FixedType]:
    """Raw values of an input as hls4ml's C-simulation assigns doubles to the input layer's type."""
    t = fixed_type_of(hls_model.graph[name].get_output_variable().type.precision)
    return t.quantize(np.asarray(values, dtype=np.float64)), t


def _trace(hls_model: Any, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, FixedType, np.ndarray, np.ndarray]:
    """hls4ml's trace of the stream: the network's output, raw in its own type, and that type; the head's targets
    and predictions, raw act_t."""
    head = head_layer(hls_model)
    act = head.get_attr("spec").act_t
    feature_node = hls_model.graph[head.inputs[0]]
    feature_node.set_attr("trace", True)
    pred, trace = hls_model.trace([np.ascontiguousarray(x, dtype=np.float64),
                                   np.ascontiguousarray(target, dtype=np.float64)])
    feature_t = fixed_type_of(feature_node.get_output_variable().type.precision)
    feature_raw = feature_t.quantize(trace[feature_node.name].reshape(len(x), -1))
    if not np.array_equal(feature_t.to_float(feature_raw), trace[feature_node.name].reshape(len(x), -1)):
        raise ValueError(f"the traced output of {feature_node.name} is not a value of its type {feature_t}")
    target_raw, target_t = _input_raw(hls_model, head.inputs[1], np.reshape(target, (len(target), -1)))
    return feature_raw, feature_t, act.cast(target_raw, target_t), predictions_raw(hls_model, pred)


def traced_stream(hls_model: Any, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """hls4ml's own trace of the stream (it recompiles: the head starts again from its initial coefficients).

    Returns raw act_t arrays: the head's features (the network's output after the stated conversion),
    its targets (after the same conversion) and its predictions.
    """
    network_raw, network_t, targets, predictions = _trace(hls_model, x, target)
    return head_layer(hls_model).get_attr("spec").act_t.cast(network_raw, network_t), targets, predictions


def reference_stream(hls_model: Any, features_raw: np.ndarray, targets_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Python reference of the model's head on raw act_t features and targets: (predictions, final state)."""
    head = head_layer(hls_model)
    spec: KANSpec = head.get_attr("spec")
    initial = [spec.coef_t.to_float(c) for c in head.get_attr("initial_raw")]
    learner = KANLearner(spec, initial)
    pred = learner.run_raw(features_raw, targets_raw, train=bool(head.get_attr("train")))
    return pred, kan_firmware.flat_state(learner.coefficients_raw())


@dataclass(frozen=True)
class StreamCheck:
    """hls4ml's C-simulation of a stream against the Python reference, integer for integer."""

    samples: int
    prediction_mismatches: int
    state_values: int
    state_mismatches: int
    trace_mismatches: int  # predict() against hls4ml's trace() of the same stream
    features_outside_grid: int  # features the learner clamped to the grid edge
    features_raw: np.ndarray = field(repr=False)  # the head's act_t inputs, from hls4ml's trace
    targets_raw: np.ndarray = field(repr=False)
    network_raw: np.ndarray = field(repr=False)  # the network's output before the conversion, raw in network_t
    network_t: FixedType = field(repr=False)
    predicted_raw: np.ndarray = field(repr=False)  # hls4ml's predict() over the stream, raw act_t

    @property
    def bit_exact(self) -> bool:
        """No mismatch of any kind."""
        return self.prediction_mismatches == self.state_mismatches == self.trace_mismatches == 0


def check_stream(hls_model: Any, x: np.ndarray, target: np.ndarray) -> StreamCheck:
    """predict() a stream on a just-compiled model, then compare with the reference fed hls4ml's own features.

    The features come from hls4ml's trace() of the same stream, which recompiles the model and runs the
    stream again: afterwards the head holds the stream's final coefficients, as after predict().
    """
    head = head_layer(hls_model)
    spec: KANSpec = head.get_attr("spec")
    if not np.array_equal(head_state(hls_model), kan_firmware.flat_state(head.get_attr("initial_raw"))):
        raise ValueError("the head has learned since compile(): call compile() before check_stream")
    x = np.ascontiguousarray(x, dtype=np.float64)
    target = np.ascontiguousarray(np.reshape(target, (len(target), -1)), dtype=np.float64)
    predicted = predictions_raw(hls_model, hls_model.predict([x, target]))
    state = head_state(hls_model)
    network_raw, network_t, targets, traced = _trace(hls_model, x, target)
    features = spec.act_t.cast(network_raw, network_t)
    ref_pred, ref_state = reference_stream(hls_model, features, targets)
    lo, hi = (spec.act_t.quantize(v) for v in spec.grid_range)
    return StreamCheck(
        samples=len(x), prediction_mismatches=int((predicted != ref_pred).any(axis=1).sum()),
        state_values=len(ref_state), state_mismatches=int((state != ref_state).sum()),
        trace_mismatches=int((traced != predicted).any(axis=1).sum()),
        features_outside_grid=int(((features < lo) | (features >= hi)).sum()),
        features_raw=features, targets_raw=targets, network_raw=network_raw, network_t=network_t, predicted_raw=predicted,
    )
