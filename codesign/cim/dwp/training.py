"""Standard, noise-injection and DWP training of the MLP/CNN on the fixed splits.

Methods (one :class:`TrainConfig`, Adam, cross-entropy):

- ``standard``: the clean network.
- ``noise``: each mini-batch goes through K weight realizations of the multiplicative
  mismatch model of ``codesign.cim`` at level ``sigma``, w·(1 + σε) on every Linear/Conv2d
  weight (biases stay digital and exact); loss = mean over realizations of the batch-mean
  cross-entropy (uniform sample weights). Gradients pass straight through the realizations
  to the weights (w + (w' − w).detach(), as :func:`codesign.cim.perturb.sample_weights`).
  ``noise_source="mismatch"`` (default; ``"torch"`` is its former name) draws ε with torch and
  applies the device model's own formula (``codesign.cim.devices.mismatch.mismatch_weights``);
  ``"simulator"`` maps every weight onto K simulated mismatch chips with ``sample_weights`` (same
  distribution — a multiplicative model is unchanged by per-tile scaling — tested; its per-call
  set-up made a noise step about 15x a standard step for the MNIST MLP, docs/cim_dwp.md).
  Hardware-aware training through the simulated chip (``codesign.cim.hwa``): ``"pcm"`` and ``"rram"``
  make K chips of that device model per mini-batch (ideal converters; PCM read at
  ``train_t_seconds`` with global drift compensation), ``"chip"`` the default chip (PCM, 8-bit DAC and
  ADC); ``chip_sampling`` says how: every weight drawn from its realized distribution (``"weights"``,
  codesign.cim.sampler) or every device programmed and aged (``"devices"``). The forward pass is the
  chip's read and the gradient is straight-through at each chip's realized weights. ``sigma`` applies to the mismatch sources only.
- ``dwp``: the same K realizations (same seeds), and each sample's cross-entropy is
  weighted by its disagreement weight (:mod:`.weighting`, detached, mean 1, clipped):
  loss = mean_k mean_i w_i · CE_ik.

With ``sigma = 0`` the K realizations are copies of the clean weights and both noisy
methods reduce to standard training; with ``k = 1`` DWP's weights are uniform and DWP is
noise injection with one realization. The K realizations run as one vectorized forward
(``torch.func.vmap``). Realization seeds derive from (seed, step), the data order from seed,
the initialisation from seed: the same config gives the same weights.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, vmap

from codesign.cim.config import CIMConfig, ConverterConfig, MismatchConfig
from codesign.cim.crossbar import derive_seed
from codesign.cim.devices.mismatch import mismatch_weights
from codesign.cim.dwp.data import DataSplits, Split, check_dataset, load_dataset
from codesign.cim.dwp.models import build_model, check_model, weight_layers
from codesign.cim.dwp.weighting import check_measure, disagreement, disagreement_weights
from codesign.cim.layers import chip_inputs, chip_twin, drift_model, program_model, sample_model
from codesign.cim.perturb import sample_weights

__all__ = ["METHODS", "NOISE_SOURCES", "TrainConfig", "TrainResult", "accuracy", "batch_loss", "perturbed_logits", "train"]

METHODS: dict[str, str] = {
    "standard": "clean weights",
    "noise": "Gaussian mismatch injection, K realizations, uniform sample weights",
    "dwp": "diversity-aware weight perturbation: K realizations, disagreement sample weights",
}

# where the training realizations come from: the mismatch model (drawn directly, or through the simulator's
# mapping), or whole simulated chips programmed per mini-batch (hardware-aware training, codesign.cim.hwa)
CHIP_SOURCES: dict[str, CIMConfig] = {
    "pcm": CIMConfig(device="pcm", converter=ConverterConfig.ideal()),
    "rram": CIMConfig(device="rram", converter=ConverterConfig.ideal()),
    "chip": CIMConfig(),
}
NOISE_SOURCES = ("mismatch", "simulator", *CHIP_SOURCES, "torch")  # "torch": the former name of "mismatch"
CHIP_SAMPLING = ("weights", "devices")  # a chip source's chips: weights drawn (codesign.cim.sampler), devices programmed


def _check_int(value: Any, name: str, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ValueError(f"{name}={value!r}: must be an integer in {lo}..{hi}")


def _check_float(value: Any, name: str, lo: float, hi: float, lo_open: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value > hi or value < lo or (lo_open and value == lo):
        raise ValueError(f"{name}={value!r}: must be a number in {'(' if lo_open else '['}{lo:g}, {hi:g}]")


@dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on (defaults chosen on the validation split, docs/cim_dwp.md).

    Fields:
      method: "standard", "noise" or "dwp".
      dataset: "digits" or "mnist5k".  model: "mlp" or "cnn".
      epochs: passes over the fit split, 1..1000, default 20.
      batch_size: samples per mini-batch, 1..65536, default 64.
      lr: Adam learning rate, (0, 1], default 2e-3.
      seed: initialisation, data order and realization seeds, >= 0, default 0.
      k: weight realizations per mini-batch (noise, dwp), 1..64, default 4.
      sigma: multiplicative mismatch level of the training realizations, w·(1 + σε), [0, 10], default 0.5.
      noise_source: "mismatch" (default; "torch" is the same), "simulator" (mismatch through
        codesign.cim.perturb.sample_weights), or a chip for hardware-aware training: "pcm", "rram", "chip".
      train_t_seconds: time after programming at which the training chips are read (chip sources), s,
        [0, 1e10], default 0.
      chip_sampling: how a chip source makes its K chips per mini-batch: "weights" (default; every weight drawn
        from its realized distribution at train_t_seconds, codesign.cim.sampler: one random number per weight)
        or "devices" (every device programmed, then aged). Checkpoints from before the field are "devices".
      measure: DWP disagreement, "vote", "mi" or "kl", default "mi" (chosen before the ablation: needs no clean pass).
      strength: DWP weight spread, w = (1 − strength) + strength·d/mean(d), [0, 1], default 0.8.
      weight_max: DWP largest sample weight (the spread is scaled down to it), >= 1, default 4.
    """

    method: str = "dwp"
    dataset: str = "digits"
    model: str = "mlp"
    epochs: int = 20
    batch_size: int = 64
    lr: float = 2e-3
    seed: int = 0
    k: int = 4
    sigma: float = 0.5
    noise_source: str = "mismatch"
    train_t_seconds: float = 0.0
    chip_sampling: str = "weights"
    measure: str = "mi"
    strength: float = 0.8
    weight_max: float = 4.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}: choose one of {', '.join(METHODS)}")
        check_dataset(self.dataset)
        check_model(self.model)
        check_measure(self.measure)
        if self.noise_source not in NOISE_SOURCES:
            raise ValueError(f"unknown noise_source {self.noise_source!r}: choose one of {', '.join(NOISE_SOURCES)}")
        _check_int(self.epochs, "epochs", 1, 1000)
        _check_int(self.batch_size, "batch_size", 1, 65536)
        _check_int(self.seed, "seed", 0, 2**63 - 1)
        _check_int(self.k, "k", 1, 64)
        _check_float(self.lr, "lr", 0.0, 1.0, lo_open=True)
        _check_float(self.sigma, "sigma", 0.0, 10.0)
        _check_float(self.strength, "strength", 0.0, 1.0)
        _check_float(self.weight_max, "weight_max", 1.0, 1e6)
        _check_float(self.train_t_seconds, "train_t_seconds", 0.0, 1e10)
        if self.chip_sampling not in CHIP_SAMPLING:
            raise ValueError(f"unknown chip_sampling {self.chip_sampling!r}: choose one of {', '.join(CHIP_SAMPLING)}")

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (for checkpoints)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Inverse of to_dict; unknown fields are a ValueError. A config saved before chip_sampling existed
        programmed every device ("devices")."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"training config: unknown field {unknown[0]!r}")
        return cls(**{"chip_sampling": "devices", **data})


@dataclass
class TrainResult:
    """A trained network, its config, the wall time of training and per-epoch history."""

    model: nn.Module
    config: TrainConfig
    train_seconds: float
    history: list[dict[str, float]] = field(default_factory=list)


def perturbed_logits(model: nn.Module, x: Tensor, config: TrainConfig, step_seed: int,
                     twin: nn.Module | None = None) -> Tensor:
    """Logits (K, B, classes) of K weight realizations of every Linear/Conv2d weight (straight-through).

    For a chip source, twin is the network's chip twin (codesign.cim.layers.chip_twin; made here if None).
    """
    if config.noise_source in CHIP_SOURCES:
        twin = twin if twin is not None else chip_twin(model, CHIP_SOURCES[config.noise_source])
        if config.chip_sampling == "weights":  # K new chips of the current weights, drawn weight by weight
            sample_model(twin, step_seed, config.train_t_seconds, n_chips=config.k)
        else:  # or every device programmed and aged
            program_model(twin, step_seed, n_chips=config.k)
            if config.train_t_seconds:
                drift_model(twin, config.train_t_seconds)
        return twin(chip_inputs(x, config.k)).view(config.k, x.shape[0], -1)
    params = dict(model.named_parameters())
    names = weight_layers(model)
    mismatch = MismatchConfig(sigma=config.sigma)
    if config.sigma == 0:  # zero noise: K exact copies (the simulator's per-tile rescale would add round-off)
        realized = {n: params[n].unsqueeze(0).expand(config.k, *params[n].shape) for n in names}
    elif config.noise_source == "simulator":
        cim = CIMConfig(device=mismatch)
        realized = {n: sample_weights(params[n], cim, config.k, step_seed, read_noise=False, layer_id=i)
                    for i, n in enumerate(names)}
    else:
        gen = torch.Generator().manual_seed(step_seed)
        realized = {}
        for n in names:
            w = params[n]
            eps = torch.randn((config.k, *w.shape), generator=gen, dtype=w.dtype)
            drawn = mismatch_weights(w.detach().unsqueeze(0), mismatch, eps)
            realized[n] = w.unsqueeze(0) + (drawn - w.detach().unsqueeze(0))  # straight-through
    fixed = {n: p for n, p in params.items() if n not in realized}
    buffers = dict(model.named_buffers())

    def one(weights: dict[str, Tensor]) -> Tensor:
        return functional_call(model, {**weights, **fixed, **buffers}, (x,))

    return vmap(one)(realized)


def batch_loss(model: nn.Module, x: Tensor, y: Tensor, config: TrainConfig, step_seed: int,
               twin: nn.Module | None = None) -> Tensor:
    """The training loss of one mini-batch under config.method (module docstring)."""
    if config.method == "standard":
        return F.cross_entropy(model(x), y)
    logits = perturbed_logits(model, x, config, step_seed, twin)  # (K, B, C)
    k, batch, classes = logits.shape
    ce = F.cross_entropy(logits.reshape(k * batch, classes), y.repeat(k), reduction="none").view(k, batch)
    if config.method == "noise":
        return ce.mean()
    clean = None
    if config.measure == "kl":
        with torch.no_grad():
            clean = model(x)
    weights = disagreement_weights(disagreement(config.measure, logits, clean), config.strength, config.weight_max)
    return (ce * weights).mean()


@torch.no_grad()
def accuracy(model: nn.Module, split: Split, batch_size: int = 1024) -> float:
    """Clean (float) accuracy of a network on a split."""
    model.eval()
    correct = 0
    for s in range(0, len(split), batch_size):
        correct += int((model(split.x[s : s + batch_size]).argmax(-1) == split.y[s : s + batch_size]).sum())
    return correct / len(split)


def _progress(done: int, total: int, text: str) -> None:
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {text}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def train(config: TrainConfig, data: DataSplits | None = None, progress: bool = False,
          on_step: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train a network from scratch under config on the fit split; history holds per-epoch loss and final val accuracy."""
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config={config!r}: expected a TrainConfig")  # noqa: TRY004 - one-line ValueError convention
    data = data if data is not None else load_dataset(config.dataset)
    torch.manual_seed(config.seed)
    model = build_model(config.model, data.image_shape, data.n_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    chip = CHIP_SOURCES.get(config.noise_source) if config.method != "standard" else None
    twin = chip_twin(model, chip) if chip is not None else None  # shares the model's parameters
    order = torch.Generator().manual_seed(derive_seed(config.seed, 0xDA7A))
    n = len(data.fit)
    steps_per_epoch = -(-n // config.batch_size)
    total, step, history = config.epochs * steps_per_epoch, 0, []
    start = time.perf_counter()
    for epoch in range(config.epochs):
        model.train()
        perm = torch.randperm(n, generator=order)
        loss_sum = 0.0
        for s in range(0, n, config.batch_size):
            idx = perm[s : s + config.batch_size]
            loss = batch_loss(model, data.fit.x[idx], data.fit.y[idx], config, derive_seed(config.seed, step), twin)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            loss_sum += float(loss.detach()) * len(idx)
            if on_step is not None:
                on_step(step, float(loss.detach()))
            if progress and (step % 10 == 0 or step == total):
                _progress(step, total, f"epoch {epoch + 1}/{config.epochs} loss {float(loss.detach()):.3f}")
        history.append({"epoch": epoch + 1, "loss": loss_sum / n})
    seconds = time.perf_counter() - start
    history[-1]["val_accuracy"] = accuracy(model, data.val)
    return TrainResult(model.eval(), config, seconds, history)
