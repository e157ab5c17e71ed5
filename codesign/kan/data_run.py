"""A learner on a user's data file (``--data``): the spec's widths from the data, what the data looks like to it, the run.

The file itself is read once at the command line's edge (:func:`codesign.tasks.load_data`);
what is here receives that :class:`~codesign.tasks.DataStream`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import numpy as np

from codesign.config import load_config_spec
from codesign.kan.kinds import kind_of
from codesign.kan.run import fit_widths, make_learner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import DataStream, online_metrics, output_errors, outside_fraction

__all__ = ["data_spec", "describe_data", "learn_on_data"]


def data_spec(
    learner: str, config: str | Path | None, data: DataStream, clock_mhz: float | None = None
) -> tuple[KANSpec | MLPSpec, dict[str, Any]]:
    """The spec for a data file and the config's fields: the data's input and output widths, unless the config sets widths.

    Config widths that disagree with the data are refused in one line; without widths in the
    config, the default's hidden widths are kept between the data's inputs and outputs.
    """
    spec, fields = load_config_spec(learner, config, clock_mhz)
    if "widths" not in fields:
        return fit_widths(spec, data.n_inputs, data.n_outputs), fields
    if (spec.n_inputs, spec.n_outputs) != (data.n_inputs, data.n_outputs):
        raise ValueError(
            f"config widths={list(spec.widths)}: --data {data.path} has {data.n_inputs} input(s) and "
            f"{data.n_outputs} output(s); make the first and last widths {data.n_inputs} and {data.n_outputs}, "
            "or leave widths out to take the data's"
        )
    return spec, fields


def _percent(values: np.ndarray) -> str:
    return ", ".join(f"{100 * v:.3g}%" for v in values)


def describe_data(spec: KANSpec | MLPSpec, data: DataStream) -> list[str]:
    """Info lines on a data file for a spec: size, widths, SHA-256, and how much of it lies outside the grid and act_t."""
    lines = [f"data: {data.path}: {len(data):,} samples ({int(data.train.sum()):,} with train on), "
             f"{data.n_inputs} input(s), {data.n_outputs} output(s), sha256 {data.sha256}"]
    if data.ignored:
        lines.append(f"data: ignored (not x, y or train): {', '.join(data.ignored)}")
    if kind_of(spec).has_grid:
        lo, hi = cast(KANSpec, spec).grid_range
        names = " ".join(f"x{j}" for j in range(data.n_inputs))
        outside = outside_fraction(data.x, lo, hi)
        line = f"data: fraction of x outside the grid range [{lo:g}, {hi:g}] ({names}): {_percent(outside)}"
        if outside.any():
            line += ("; legal: such an input is clamped to the grid's edge, sees the spline's value there and passes no "
                     "gradient back (docs/arithmetic.md, section 2); widen grid_range in a config to cover it")
        lines.append(line)
    act = spec.act_t
    for name, arr in (("x", data.x), ("y", data.y)):
        over = outside_fraction(arr, act.min_value, act.max_value)
        if over.any():
            lines.append(f"data: fraction of {name} outside act_t's range [{act.min_value:g}, {act.max_value:g}] "
                         f"({_percent(over)}): these values saturate when quantized to act_t={act}")
    return lines


def learn_on_data(
    learner: str, data: DataStream, seed: int = 0, config: str | Path | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """Stream a data file through a learner (with its train flags), print the error per output; returns (predictions, metrics)."""
    spec, _ = data_spec(learner, config, data)
    for line in describe_data(spec, data):
        print(line)
    model = make_learner(spec, seed=seed)
    start = time.perf_counter()
    pred = model.run(data.x, data.y, data.train)
    elapsed = time.perf_counter() - start
    metrics = online_metrics(pred, data)
    per_output = output_errors(pred, data)
    print(f"{learner} on {data.path}: {len(data):,} samples, widths {list(spec.widths)}, {spec.num_parameters} parameters, "
          f"{len(data) / elapsed:,.0f} samples/s")
    print(f"  {'mse':>16s}: {metrics['mse']:.4g}  (mean over samples and outputs, each prediction made before its update)")
    print(f"  {'final_mse':>16s}: {metrics['final_mse']:.4g}  (last {min(metrics['window'], len(data))} samples)")
    for j, (mse, rmse) in enumerate(zip(per_output["mse"], per_output["rmse"])):
        print(f"  {f'y{j} mse':>16s}: {mse:.4g}  rmse {rmse:.4g}")
    return pred, {**metrics, "output_mse": per_output["mse"], "output_rmse": per_output["rmse"]}
