"""Run a bit-exact online learner on a task stream: the glue between spec, learner and tasks."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np

from codesign.config import load_config_spec
from codesign.kan.kinds import kind_of
from codesign.kan.learner_base import OnlineLearner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import TaskStream, make_stream, online_metrics, task_options

__all__ = ["fit_widths", "stream_options", "task_spec", "make_learner", "learn_on_task"]


def fit_widths(spec: KANSpec | MLPSpec, n_inputs: int, n_outputs: int) -> KANSpec | MLPSpec:
    """The spec with its first and last widths set to a task's input and output widths."""
    widths = (n_inputs, *spec.widths[1:-1], n_outputs)
    return spec if widths == spec.widths else dataclasses.replace(spec, widths=widths)


def stream_options(task: str, n_inputs: int) -> dict[str, Any]:
    """The task options that generate its stream at a spec's input width (for a task that takes n_inputs)."""
    return {"n_inputs": n_inputs} if "n_inputs" in task_options(task) else {}


def task_spec(
    learner: str, config: str | Path | None, task: str, n_samples: int, seed: int
) -> tuple[KANSpec | MLPSpec, TaskStream, dict[str, Any]]:
    """The spec, the task's stream fitted to it, and the config's fields.

    A config's ``widths`` are kept: a task that takes ``n_inputs`` is generated at the first
    width, and a task whose inputs or outputs still differ is refused in one line. Without
    ``widths`` in the config, the task's widths replace the default's first and last.
    """
    spec, fields = load_config_spec(learner, config)
    if "widths" not in fields:
        stream = make_stream(task, n_samples=n_samples, seed=seed)
        return fit_widths(spec, stream.n_inputs, stream.n_outputs), stream, fields
    given = f"config widths={list(spec.widths)}"
    try:
        stream = make_stream(task, n_samples=n_samples, seed=seed, **stream_options(task, spec.n_inputs))
    except ValueError as exc:
        raise ValueError(f"{given}: {exc}") from None
    if (stream.n_inputs, stream.n_outputs) != (spec.n_inputs, spec.n_outputs):
        raise ValueError(
            f"{given}: task {task} has {stream.n_inputs} input(s) and {stream.n_outputs} output(s); "
            f"make the first and last widths {stream.n_inputs} and {stream.n_outputs}, or leave widths out to take the task's"
        )
    return spec, stream, fields


def make_learner(spec: KANSpec | MLPSpec, seed: int = 0, initial: list[np.ndarray] | None = None) -> OnlineLearner:
    """A fresh learner for a spec: initial coefficients or weights from the seed, or ``initial`` (raw coef_t, KAN only)."""
    kind = kind_of(spec)
    learner_class: type[Any] = kind.learner_class()
    if initial is not None:
        if not kind.takes_initial_coefficients:
            raise ValueError("initial coefficients (--init) are for the KAN learner only")
        learner: OnlineLearner = learner_class(spec, coefficients=[spec.coef_t.to_float(np.asarray(c, dtype=np.int64)) for c in initial])
        return learner
    learner = learner_class(spec, seed=seed)
    return learner


def learn_on_task(
    learner: str, task: str, n_samples: int = 20_000, seed: int = 0, config: str | None = None
) -> tuple[np.ndarray, TaskStream, dict[str, Any]]:
    """Stream a task through a learner, print its online metrics, and return (predictions, stream, metrics)."""
    if n_samples < 1:
        raise ValueError(f"--samples={n_samples}: need at least one sample")
    spec, stream, _ = task_spec(learner, config, task, n_samples, seed)
    model = make_learner(spec, seed=seed)
    start = time.perf_counter()
    pred = model.run(stream.x, stream.y)
    elapsed = time.perf_counter() - start
    metrics = online_metrics(pred, stream)
    print(f"{learner} on {task}: {len(stream)} samples, {spec.num_parameters} parameters, {len(stream) / elapsed:,.0f} samples/s")
    for key, value in metrics.items():
        if isinstance(value, float):
            print(f"  {key:>16s}: {value:.4g}")
        elif isinstance(value, tuple):
            print(f"  {key:>16s}: " + ", ".join("never" if v is None else f"{v:.4g}" for v in value))
    return pred, stream, metrics
