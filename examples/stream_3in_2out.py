"""Make the example data files stream_3in_2out.npz and stream_3in_2out.csv (docs/data.md): 3 inputs, 2 outputs.

A smooth function of three slowly wandering inputs whose two outputs change regime halfway
(the gain of the first output and the phase of the second switch at sample n/2); the third input
drifts slightly past the default grid's upper edge (1.0) near the end, and the last tenth of the
stream is predict-only (train 0), so every part of the format appears. Seeded: the same files
every time.

    python examples/stream_3in_2out.py               # rewrites the files next to this script
    python -m codesign.examples.stream_3in_2out --out DIR
    codesign learn kan_online --data examples/stream_3in_2out.npz
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

__all__ = ["example_arrays", "write_example"]

NAME = "stream_3in_2out"


def example_arrays(n: int = 1000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (n, 3), y (n, 2) and train (n,) of the example stream, values rounded to 6 decimals (what the CSV holds)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    # inputs: slow sinusoids plus small noise, so consecutive samples are correlated as sensor readings are
    x0 = 0.8 * np.sin(2 * np.pi * (3 * t + rng.uniform())) + 0.05 * rng.standard_normal(n)
    x1 = 0.7 * np.cos(2 * np.pi * (5 * t + rng.uniform())) + 0.05 * rng.standard_normal(n)
    x2 = -0.8 + 1.9 * t + 0.05 * rng.standard_normal(n)  # a drift that ends just past the grid's edge
    x = np.stack([x0, x1, x2], axis=1)
    late = t >= 0.5  # the regime switch
    gain = np.where(late, -0.6, 0.5)
    phase = np.where(late, np.pi / 2, 0.0)
    y0 = gain * np.sin(np.pi * x0) + 0.25 * x1 * x2
    y1 = 0.4 * np.cos(np.pi * x1 + phase) - 0.2 * x0 + 0.1 * x2
    y = np.stack([y0, y1], axis=1) + 0.01 * rng.standard_normal((n, 2))
    train = (t < 0.9).astype(np.int8)
    return np.round(x, 6), np.round(y, 6), train


def write_example(folder: Path, n: int = 1000, seed: int = 0) -> tuple[Path, Path]:
    """Write <folder>/stream_3in_2out.npz and .csv (the same samples); returns their paths."""
    x, y, train = example_arrays(n, seed)
    folder.mkdir(parents=True, exist_ok=True)
    npz, csv = folder / f"{NAME}.npz", folder / f"{NAME}.csv"
    np.savez_compressed(npz, x=x, y=y, train=train)
    table = np.concatenate([x, y, train[:, None]], axis=1)
    header = ",".join([f"x{j}" for j in range(x.shape[1])] + [f"y{j}" for j in range(y.shape[1])] + ["train"])
    np.savetxt(csv, table, fmt=["%.6f"] * (x.shape[1] + y.shape[1]) + ["%d"], delimiter=",", header=header, comments="")
    return npz, csv


def main() -> None:
    """Write the example files (default: next to this script)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="folder (default: this script's)")
    parser.add_argument("--samples", type=int, default=1000, help="samples (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    args = parser.parse_args()
    for path in write_example(args.out, args.samples, args.seed):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
