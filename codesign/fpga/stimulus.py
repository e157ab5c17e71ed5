"""Stimulus of the C-simulation and the Python reference's expected outputs, as raw integers.

The stream (documented in ``codesign build --help`` and the project README):

1. ``n_samples`` samples of an online task (default ``function_tracking``, seed 0), all with
   train enabled. A task that takes ``n_inputs`` (function_tracking) is generated with the
   spec's input width. Otherwise, and for the targets, the task's columns are adapted to the
   spec's widths: column c of the stimulus is column ``c % d`` of the task's ``d`` columns,
   negated on every second pass (so extra columns are not copies). Values are quantized to
   ``act_t`` exactly as ``ap_fixed(double)`` does.
2. ``CORNER_SAMPLES`` corner samples: each input and target is, with even odds, an edge value
   (the extremes of ``act_t``, 0, +-1 LSB, +-1.0 and, for a KAN, the grid edges lo and hi
   and their neighbours) or a uniformly random raw value of ``act_t``; train is enabled with
   probability 3/4. They drive saturation, inputs outside the grid, grid edges and
   prediction-only samples.

With a user's data file (``--data``, a :class:`~codesign.tasks.DataStream`), part 1 is the
file's samples instead, in file order with the file's train flags, quantized the same way (the
spec's widths are the data's); the corner block follows as above.

The reference learner starts from the same seeded initial state that the firmware holds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from codesign.fpga.kind import Firmware
from codesign.kan.kinds import kind_of
from codesign.kan.profiler import cast_overflows
from codesign.kan.run import make_learner, stream_options
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import DataStream, make_stream

__all__ = ["CORNER_SAMPLES", "Stimulus", "Reference", "adapt_columns", "data_label", "make_stimulus", "run_reference", "write_tb_data"]

CORNER_SAMPLES = 512


@dataclass(frozen=True)
class Stimulus:
    """What the testbench streams through the top: raw act_t integers and train enables."""

    x: np.ndarray  # (n, n_in) raw act_t
    y: np.ndarray  # (n, n_out) raw act_t
    train: np.ndarray  # (n,) 0 or 1
    task: str
    task_samples: int
    corner_samples: int
    seed: int
    # (n,) the learning-rate shift of each sample, in the spec's run-time range (the AXI tops' lr_shift);
    # None: the spec's lr_shift for all. Only the AXI top's testbench can follow one (the plain top's is fixed)
    lr_shifts: np.ndarray | None = None
    # the user's data file the task samples came from (DataStream.source(): path, sha256, ...); None: a task
    data: dict | None = None

    @property
    def samples(self) -> int:
        """Stream length."""
        return int(self.x.shape[0])


@dataclass(frozen=True)
class Reference:
    """The Python reference's run over a stimulus: initial state, predictions, final state."""

    initial_state: list  # per layer, the firmware's initial values (raw)
    predictions: np.ndarray  # (n, n_out) raw act_t
    state: np.ndarray  # final state, flat, in the testbench's read-back order
    state_names: list[str]
    seconds: float
    saturations: int  # casts that overflowed their type over the stream (codesign.kan.profiler.cast_overflows)


def adapt_columns(a: np.ndarray, n: int) -> np.ndarray:
    """``n`` columns from ``a``'s ``d``: column c is column ``c % d``, negated on odd passes ``c // d``."""
    d = a.shape[1]
    cols = [a[:, c % d] * (-1.0 if (c // d) % 2 else 1.0) for c in range(n)]
    return np.stack(cols, axis=1)


def _corner_values(spec: KANSpec | MLPSpec) -> np.ndarray:
    """Edge values of act_t (raw) that the corner samples draw from."""
    act = spec.act_t
    values = {act.min_raw, act.max_raw, act.min_raw + 1, act.max_raw - 1, 0, 1, -1}
    if act.frac >= 0:
        values |= {1 << act.frac, -(1 << act.frac)}
    if kind_of(spec).has_grid:
        lo_raw, hi_raw = (int(round(v * 2.0**act.frac)) for v in cast(KANSpec, spec).grid_range)
        values |= {v + d for v in (lo_raw, hi_raw) for d in (-1, 0, 1)}
    return np.clip(np.array(sorted(values), dtype=np.int64), act.min_raw, act.max_raw)


def _corner_block(spec: KANSpec | MLPSpec, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 0xC0])
    act = spec.act_t
    edges = _corner_values(spec)

    def draw(cols: int) -> np.ndarray:
        random = rng.integers(act.min_raw, act.max_raw, size=(n, cols), endpoint=True)
        pick = rng.integers(0, len(edges), size=(n, cols))
        return np.where(rng.random((n, cols)) < 0.5, edges[pick], random).astype(np.int64)

    x, y = draw(spec.n_inputs), draw(spec.n_outputs)
    train = (rng.random(n) < 0.75).astype(np.int64)
    return x, y, train


def make_stimulus(spec: KANSpec | MLPSpec, task: str = "function_tracking", n_samples: int = 10_000, seed: int = 0,
                  data: DataStream | None = None) -> Stimulus:
    """``n_samples`` task samples fitted to the spec's widths (or every sample of ``data``), then the corner block."""
    if data is not None:
        if (data.n_inputs, data.n_outputs) != (spec.n_inputs, spec.n_outputs):
            raise ValueError(f"--data {data.path} has {data.n_inputs} input(s) and {data.n_outputs} output(s), "
                             f"the spec's widths are {list(spec.widths)}")
        x, y, train = spec.act_t.quantize(data.x), spec.act_t.quantize(data.y), data.train
        task, n_samples = data_label(data), len(data)
    else:
        if n_samples < 1:
            raise ValueError(f"--samples={n_samples}: need at least one sample")
        stream = make_stream(task, n_samples=n_samples, seed=seed, **stream_options(task, spec.n_inputs))
        x = spec.act_t.quantize(adapt_columns(stream.x, spec.n_inputs))
        y = spec.act_t.quantize(adapt_columns(stream.y, spec.n_outputs))
        train = np.ones(n_samples, dtype=np.int64)
    cx, cy, ctrain = _corner_block(spec, CORNER_SAMPLES, seed)
    return Stimulus(
        x=np.concatenate([x, cx]), y=np.concatenate([y, cy]),
        train=np.concatenate([train, ctrain]),
        task=task, task_samples=n_samples, corner_samples=CORNER_SAMPLES, seed=seed,
        data=None if data is None else data.source(),
    )


def data_label(data: DataStream) -> str:
    """How a stimulus names a data file's stream where it would name a task (report, stimulus.txt header)."""
    return f"data file {data.path}"


def run_reference(spec: KANSpec | MLPSpec, stimulus: Stimulus, firmware: Firmware,
                  initial: list[np.ndarray] | None = None) -> Reference:
    """Run the bit-exact Python learner (initial state from the stimulus seed, or ``initial``: raw
    coefficients from --init) over the stimulus; ``firmware`` says how to read the learner's state."""
    learner = make_learner(spec, seed=stimulus.seed, initial=initial)
    counting = make_learner(spec, seed=stimulus.seed, initial=initial)
    start_state = firmware.learner_state(learner)
    start = time.perf_counter()
    pred = learner.run_raw(stimulus.x, stimulus.y, stimulus.train, lr_shifts=stimulus.lr_shifts)
    seconds = time.perf_counter() - start
    final = firmware.flat_state(firmware.learner_state(learner))
    # the same run profiled (timed apart from it) for the overflow count of the AXI tops' SATURATIONS
    stats = counting.new_stats()
    counting.run_raw(stimulus.x, stimulus.y, stimulus.train, stats=stats, lr_shifts=stimulus.lr_shifts)
    return Reference(start_state, pred, final, firmware.state_names(spec), seconds, cast_overflows(counting, stats))


def write_tb_data(folder: Path, stimulus: Stimulus, reference: Reference) -> None:
    """The testbench's input files: stimulus.txt, expected_predictions.txt, expected_state.txt, expected_saturations.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    n_in, n_out = stimulus.x.shape[1], stimulus.y.shape[1]
    source = (f"task {stimulus.task}" if stimulus.data is None
              else f"data file {stimulus.data['path']} (sha256 {stimulus.data['sha256']})")
    header = (
        f"{stimulus.samples} samples: {stimulus.task_samples} of {source} (seed {stimulus.seed}), "
        f"then {stimulus.corner_samples} corner samples\n"
    )
    rows = np.concatenate([stimulus.train[:, None], stimulus.x, stimulus.y], axis=1)
    np.savetxt(folder / "stimulus.txt", rows, fmt="%d",
               header=header + f"train x[0..{n_in - 1}] y[0..{n_out - 1}] (raw act_t integers)")
    np.savetxt(folder / "expected_predictions.txt", reference.predictions, fmt="%d",
               header=f"y_hat[0..{n_out - 1}] of the Python reference per sample (raw act_t integers)")
    with open(folder / "expected_state.txt", "w") as f:
        f.write("# the learner state after the stream: name raw\n")
        f.writelines(f"{name} {int(v)}\n" for name, v in zip(reference.state_names, reference.state))
    with open(folder / "expected_saturations.txt", "w") as f:
        f.write("# casts of the Python reference that overflowed their type over the stream (the AXI top's saturations)\n")
        f.write(f"{reference.saturations}\n")
    if stimulus.lr_shifts is not None:  # only the AXI top's testbench applies them (the plain top's shift is fixed)
        np.savetxt(folder / "lr_shifts.txt", stimulus.lr_shifts, fmt="%d",
                   header="the learning-rate shift of each sample, written to the AXI top's lr_shift")
