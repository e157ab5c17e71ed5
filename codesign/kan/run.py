"""Run a bit-exact online learner on a task stream: the glue between spec, learner and tasks."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from codesign.config import load_spec
from codesign.kan.fixed_learner import KANLearner
from codesign.kan.learner_base import OnlineLearner
from codesign.kan.mlp_learner import MLPLearner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import TaskStream, make_stream, online_metrics

__all__ = ["fit_widths", "make_learner", "learn_on_task"]


def fit_widths(spec: KANSpec | MLPSpec, n_inputs: int, n_outputs: int) -> KANSpec | MLPSpec:
    """The spec with its first and last widths set to a task's input and output widths."""
    widths = (n_inputs, *spec.widths[1:-1], n_outputs)
    return spec if widths == spec.widths else dataclasses.replace(spec, widths=widths)


def make_learner(spec: KANSpec | MLPSpec, seed: int = 0) -> OnlineLearner:
    """A fresh learner (initial coefficients or weights from the seed) for a spec."""
    return KANLearner(spec, seed=seed) if isinstance(spec, KANSpec) else MLPLearner(spec, seed=seed)


def learn_on_task(
    learner: str, task: str, n_samples: int = 20_000, seed: int = 0, config: str | None = None
) -> tuple[np.ndarray, TaskStream, dict]:
    """Stream a task through a learner, print its online metrics, and return (predictions, stream, metrics)."""
    if n_samples < 1:
        raise ValueError(f"--samples={n_samples}: need at least one sample")
    stream = make_stream(task, n_samples=n_samples, seed=seed)
    spec = fit_widths(load_spec(learner, config), stream.n_inputs, stream.n_outputs)
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
