"""A QKeras-API backbone trained offline in Keras, the online KAN head adapting to drift in hls4ml's C-simulation.

The drifting qubit-readout stream (codesign.tasks, "qubit_readout": IQ points of |0> and |1> whose blob
centres rotate and wander): a small Keras 3 network written with HGQ2's QKeras-compatible API (2 -> 16 ->
4 quantized features, and a Dense classifier on top for the offline training only) is trained on the first
CALIBRATION samples, then frozen. A 4-4-1 KAN head is trained offline on the same samples (the Python
reference, a few passes) and attached behind the backbone; hls4ml converts the whole model (its Keras 3
frontend), compiles it and runs the rest of the stream through it: the head predicts each sample, then
learns from its label (train on), or only predicts (frozen). check_stream and check_backbone compare it,
integer for integer, with the Keras backbone and the Python reference.

    python -m codesign.examples.hls4ml_keras_head [--seed 0] [--samples 8000] [--frozen] [--backend Vitis] [--out prj]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codesign.kan.fixed_learner import KANLearner
from codesign.kan.spec import KANSpec
from codesign.tasks import TaskStream, make_stream

SPEC = KANSpec(widths=(4, 4, 1), grid_size=8, spline_order=3, lut_bits=6)
CALIBRATION = 2000  # samples the backbone and the head are trained on offline; the stream after them runs online
WINDOW = 2000  # accuracy "before" is over the first WINDOW online samples, "after" over the last WINDOW
DRIFT_AMPLITUDE = 1.5  # rad: the blobs rotate by up to this much either way ...
DRIFT_PERIOD = 4  # ... over a period of four stream lengths (a quarter period per stream)
HEAD_PASSES = 3  # offline passes of the head over the calibration features


def stream(seed: int, samples: int = 8000) -> TaskStream:
    """The drifting qubit-readout stream of the example (the drift period four times the stream)."""
    return make_stream("qubit_readout", samples, seed, drift_amplitude=DRIFT_AMPLITUDE, drift_period=float(DRIFT_PERIOD * samples))


def trained_backbone(data: TaskStream, seed: int, epochs: int = 40) -> Any:
    """The QKeras-API backbone (2 -> 16 -> 4, 8-10 bit), trained with a Dense classifier on the calibration samples; frozen."""
    from codesign.fpga import hls4ml_keras_head  # noqa: PLC0415

    hls4ml_keras_head.check_keras()  # keras on the torch backend: before keras is imported
    import keras  # noqa: PLC0415
    from qkeras import quantized_bits, quantized_relu  # noqa: PLC0415
    from qkeras.qlayers import QActivation, QDense  # noqa: PLC0415

    keras.utils.set_random_seed(seed)
    iq = keras.Input((2,), name="iq")
    h = QActivation(quantized_bits(9, 1))(iq)  # the input's fixed-point type (hls4ml needs one)
    h = QDense(16, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(h)
    h = QActivation(quantized_relu(8, 2))(h)
    h = QDense(SPEC.n_inputs, kernel_quantizer=quantized_bits(7, 1), bias_quantizer=quantized_bits(7, 1))(h)
    features = QActivation(quantized_bits(9, 1), name="features")(h)  # the backbone's output type: ap_fixed<10,2>
    classifier = keras.Model(iq, keras.layers.Dense(1, activation="tanh")(features))
    classifier.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    classifier.fit(data.x[:CALIBRATION].astype(np.float32), data.y[:CALIBRATION].astype(np.float32),
                   epochs=epochs, batch_size=256, verbose=0)
    backbone = keras.Model(iq, features, name="backbone")
    backbone.trainable = False
    return backbone


def pretrained_head(backbone: Any, data: TaskStream, seed: int) -> list[np.ndarray]:
    """The head's initial coefficients: the Python reference after HEAD_PASSES passes over the calibration features."""
    feats = backbone.predict(data.x[:CALIBRATION].astype(np.float32), batch_size=4096, verbose=0)
    act = SPEC.act_t
    x, y = act.quantize(np.asarray(feats, dtype=np.float64)), act.quantize(data.y[:CALIBRATION])
    learner = KANLearner(SPEC, seed=seed)
    for _ in range(HEAD_PASSES):
        learner.run_raw(x, y)
    return learner.coefficients()


@dataclass(frozen=True)
class Run:
    """One seed's online run in hls4ml's C-simulation."""

    seed: int
    train: bool
    before: float  # accuracy over the first WINDOW online samples
    after: float  # accuracy over the last WINDOW
    drift_deg: float  # rotation of the |0> -> |1> axis from the calibration's middle to the stream's end
    samples: int
    mismatches: int  # predictions, coefficients and backbone outputs that differ from Keras and the reference
    network_t: str


def accuracy(predicted_raw: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of samples whose prediction's sign (0 counts as +1) is the label (+1/-1)."""
    return float((np.where(predicted_raw[:, 0] >= 0, 1, -1) == labels).mean())


def drift_degrees(data: TaskStream) -> float:
    """How far the |0> -> |1> axis turned from the calibration's middle to the last sample, in degrees."""
    axis = data.meta["centers"][:, 1] - data.meta["centers"][:, 0]
    angle = np.degrees(np.arctan2(axis[:, 1], axis[:, 0]))
    return float(angle[-1] - angle[CALIBRATION // 2])


def run(seed: int, samples: int, train: bool, out: Path, backend: str = "Vitis", backbone: Any = None,
        coefficients: list[np.ndarray] | None = None) -> Run:
    """Train (unless given), convert, compile and run one seed's stream; checked integer for integer."""
    from codesign.fpga import hls4ml_keras_head  # noqa: PLC0415

    hls4ml_keras_head.register_extension(backend)  # refuses an unsupported backend before the training
    if samples < CALIBRATION + 2 * WINDOW:
        raise ValueError(f"--samples must be at least {CALIBRATION + 2 * WINDOW} (calibration + two windows), got {samples}")
    data = stream(seed, samples)
    backbone = backbone if backbone is not None else trained_backbone(data, seed)
    coefficients = coefficients if coefficients is not None else pretrained_head(backbone, data, seed)
    model = hls4ml_keras_head.attach_online_head(backbone, SPEC, coefficients, seed=seed, train=train)
    hls_model = hls4ml_keras_head.to_hls4ml(model, out, backend=backend)
    hls_model.compile()
    x, y = data.x[CALIBRATION:], data.y[CALIBRATION:]
    check, bb = hls4ml_keras_head.check_headed_stream(hls_model, model, x, y)
    labels = data.meta["labels"][CALIBRATION:]
    return Run(seed=seed, train=train, before=accuracy(check.predicted_raw[:WINDOW], labels[:WINDOW]),
               after=accuracy(check.predicted_raw[-WINDOW:], labels[-WINDOW:]), drift_deg=drift_degrees(data),
               samples=check.samples,
               mismatches=check.prediction_mismatches + check.state_mismatches + check.trace_mismatches + bb.mismatches,
               network_t=bb.network_t)


def main(argv: list[str] | None = None) -> int:
    """Train, convert, compile and run one seed; 0 when bit-exact, 1 when not, 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="stream and training seed")
    parser.add_argument("--samples", type=int, default=8000, help=f"stream length (the first {CALIBRATION} train offline)")
    parser.add_argument("--frozen", action="store_true", help="the head only predicts (no online learning)")
    parser.add_argument("--backend", default="Vitis", help="hls4ml backend (Vitis or Vivado)")
    parser.add_argument("--out", type=Path, default=Path("hls4ml_keras_head_prj"), help="the hls4ml project folder (must not exist)")
    args = parser.parse_args(argv)
    try:
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        if args.out.exists():
            raise ValueError(f"{args.out} exists: give a new folder with --out")
        result = run(args.seed, args.samples, not args.frozen, args.out, args.backend)
    except ValueError as exc:
        print(f"hls4ml_keras_head: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.backend}, seed {result.seed}, head {'on' if result.train else 'frozen'}: accuracy {result.before:.3f} "
          f"(first {WINDOW}) -> {result.after:.3f} (last {WINDOW}) after a {result.drift_deg:+.0f} degree drift; "
          f"{result.samples} samples, {result.mismatches} mismatches; project in {args.out}")
    return 0 if result.mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
