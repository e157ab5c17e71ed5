"""Checkpoint files of trained networks: a format tag, the training config, the weights.

A checkpoint is a ``torch.save`` dict, loaded with ``weights_only=True`` (no code runs on
load): ``{"format": FORMAT, "config": TrainConfig.to_dict(), "state_dict": ...,
"train_seconds": float, "history": [...]}``. Anything else is refused with a one-line
ValueError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from codesign.cim.dwp.data import load_dataset
from codesign.cim.dwp.models import build_model
from codesign.cim.dwp.training import TrainConfig, TrainResult

__all__ = ["CHECKPOINT_NAME", "FORMAT", "load_checkpoint", "save_checkpoint"]

FORMAT = "codesign.cim.dwp.checkpoint/1"
CHECKPOINT_NAME = "model.pt"


def save_checkpoint(result: TrainResult, path: str | Path) -> Path:
    """Write a trained network and its config to path (a file)."""
    path = Path(path)
    torch.save({
        "format": FORMAT,
        "config": result.config.to_dict(),
        "state_dict": {k: v.detach().clone() for k, v in result.model.state_dict().items()},
        "train_seconds": float(result.train_seconds),
        "history": result.history,
    }, path)
    return path


def load_checkpoint(path: str | Path) -> TrainResult:
    """The network, config and training record of a checkpoint file (or a folder holding model.pt)."""
    path = Path(path)
    if path.is_dir():
        path = path / CHECKPOINT_NAME
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r}: no such file")
    try:
        data: Any = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch.load of a foreign file raises pickle, zip, key, EOF errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"checkpoint {str(path)!r}: not a codesign DWP checkpoint ({first[:120]})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        tag = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"checkpoint {str(path)!r}: not a codesign DWP checkpoint (format {tag!r}, expected {FORMAT!r})")
    missing = [key for key in ("config", "state_dict") if not isinstance(data.get(key), dict)]
    if missing:
        raise ValueError(f"checkpoint {str(path)!r}: not a complete codesign DWP checkpoint (no {missing[0]!r})")
    try:
        config = TrainConfig.from_dict(data["config"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"checkpoint {str(path)!r}: its config is not a codesign training config ({exc})") from None
    splits = load_dataset(config.dataset)
    model: nn.Module = build_model(config.model, splits.image_shape, splits.n_classes)
    try:
        model.load_state_dict(data["state_dict"])
    except RuntimeError as exc:
        raise ValueError(f"checkpoint {str(path)!r}: weights do not fit the {config.model} model "
                         f"({str(exc).splitlines()[0][:120]})") from None
    return TrainResult(model.eval(), config, float(data.get("train_seconds", 0.0)), list(data.get("history", [])))
