"""The points of CIM sweeps run by codesign.sweep: one simulated chip at one time and mismatch, one training run.

Each point function is module-level (it pickles to a local worker or a Ray task) and its
record depends only on the point's parameters and seeds, whichever worker runs it: it runs
with one torch thread (so float sums are the same in every process) and draws every random
number from generators seeded by the point.

- :func:`chip_point`: the accuracy of chip ``chip`` of a checkpoint's network on its test
  split, on the PCM model (programming noise, drift, 1/f read noise drawn per test batch,
  global drift compensation; 8-bit DAC/ADC, 256×256 tiles) read ``t_seconds`` after
  programming, with multiplicative device mismatch w·(1 + σε) of level ``mismatch`` applied
  to the weights before they are programmed (device-to-device variation on top of PCM's own
  programming noise; σ = 0: PCM alone). Chip k's PCM devices are those of the drift sweep's
  chip k (seeded by (seed, layer, k)); its mismatch draws come from a separate stream,
  (seed, MISMATCH_STREAM, k), so the same chip has the same mismatch pattern at every time.
- :func:`training_point`: one training run (a TrainConfig) evaluated over chips on a split:
  accuracy vs mismatch level and/or vs PCM time (codesign.cim.dwp.evaluate).
"""

from __future__ import annotations

import copy
import hashlib
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import torch
from torch import nn

from codesign.cim.config import CIMConfig, MismatchConfig, PCMConfig
from codesign.cim.crossbar import check_seed, check_time, derive_seed
from codesign.cim.dwp.data import Split, load_dataset
from codesign.cim.dwp.evaluate import SweepPoint, drift_sweep, mismatch_sweep
from codesign.cim.dwp.training import TrainConfig, TrainResult, accuracy, train
from codesign.cim.layers import chip_inputs, convert_to_cim, drift_model, program_model
from codesign.cim.perturb import sample_weights

__all__ = ["MISMATCH_STREAM", "GRID_CHIP", "chip_point", "training_point", "checkpoint_digest"]

MISMATCH_STREAM = 0x313A  # seed key of a grid chip's mismatch draws (apart from its PCM devices' keys)
# the chip of the grid sweep: as the drift sweep's (docs/cim_dwp.md), read noise drawn per test batch
GRID_CHIP = CIMConfig(device=PCMConfig(), drift_compensation="global", read_noise="per_call")
BATCH = 1000  # test samples per forward call: each call draws the read noise anew


@contextmanager
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread while a point runs: the same float sums in a Ray task, a pool worker or this process."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def checkpoint_digest(data: bytes) -> str:
    """The SHA-256 of a checkpoint's bytes: the identity of the network a sweep evaluates."""
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=2)
def _loaded(data: bytes) -> tuple[TrainResult, Split]:
    """The network of a checkpoint (its bytes, as shipped to the worker) and its test split, once per worker."""
    from codesign.cim.dwp.checkpoint import CHECKPOINT_NAME, load_checkpoint

    with tempfile.TemporaryDirectory(prefix="codesign-chip-") as folder:  # the worker may not see the user's file
        path = Path(folder) / CHECKPOINT_NAME
        path.write_bytes(data)
        result = load_checkpoint(path)
    return result, load_dataset(result.config.dataset).test


def _with_mismatch(model: nn.Module, sigma: float, seed: int, chip: int) -> nn.Module:
    """A copy of the network whose Linear/Conv2d weights carry chip ``chip``'s mismatch of level ``sigma``."""
    model = copy.deepcopy(model)
    config = CIMConfig(device=MismatchConfig(sigma=sigma))
    layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]  # convert_to_cim's order
    with torch.no_grad():
        for layer_id, layer in enumerate(layers):
            chip_seed = derive_seed(seed, MISMATCH_STREAM, chip)
            realized = sample_weights(layer.weight, config, k=1, seed=chip_seed, read_noise=False, layer_id=layer_id)
            layer.weight.copy_(realized[0])
    return model


@torch.no_grad()
def chip_point(checkpoint: bytes, point: dict) -> dict:
    """Correct test predictions of one grid chip (``chip``, ``t_seconds``, ``mismatch``, ``seed``): the point's record."""
    started = time.perf_counter()
    chip, seed = check_seed(point["chip"], "chip"), check_seed(point["seed"])
    t, sigma = check_time(point["t_seconds"]), float(point["mismatch"])
    result, test = _loaded(checkpoint)
    with _one_torch_thread():
        network = _with_mismatch(result.model, sigma, seed, chip) if sigma else result.model
        cim = convert_to_cim(network.eval(), GRID_CHIP)
        program_model(cim, seed, n_chips=1, first_chip=chip)
        drift_model(cim, t)
        correct = 0
        for s in range(0, len(test), BATCH):
            x, y = test.x[s : s + BATCH], test.y[s : s + BATCH]
            correct += int((cim(chip_inputs(x, 1)).argmax(-1) == y).sum())
    return {"name": point["name"], "chip": chip, "t_seconds": t, "mismatch": sigma, "seed": seed, "correct": correct,
            "samples": len(test), "accuracy": correct / len(test), "seconds": round(time.perf_counter() - started, 4)}


def _summary(points: list[SweepPoint]) -> dict[str, dict]:
    return {p.label: {"chip_mean": p.mean, "chip_std": p.std, "chip_min": p.min, "chip_max": p.max} for p in points}


def training_point(point: dict) -> dict:
    """Train one network (``config``, a TrainConfig dict) and score it over chips on ``split``: the point's record.

    ``levels`` (mismatch levels) and/or ``times`` ({label: seconds}, PCM with and without drift
    compensation) choose the evaluations; ``chips`` chips seeded ``chip_seed`` (``drift_chips``
    for the PCM times, default ``chips``).
    """
    config = TrainConfig.from_dict(point["config"])
    data = load_dataset(config.dataset)
    split = {"test": data.test, "val": data.val}[point.get("split", "test")]
    with _one_torch_thread():
        result = train(config, data=data)
        record = {"name": point["name"], "config": config.to_dict(), "split": point.get("split", "test"),
                  "train_seconds": result.train_seconds, "float_accuracy": accuracy(result.model, split)}
        if point.get("levels") is not None:
            record["mismatch"] = _summary(mismatch_sweep(result.model, split, levels=tuple(point["levels"]),
                                                         n_chips=point["chips"], seed=point["chip_seed"]))
        if point.get("times") is not None:
            both = drift_sweep(result.model, split, times=dict(point["times"]),
                               n_chips=point.get("drift_chips", point["chips"]), seed=point["chip_seed"])
            record["pcm"] = {comp: _summary(pts) for comp, pts in both.items()}
    return record
