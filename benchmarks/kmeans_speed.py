"""Time the calibration-free grids on one Gemma-3-270M-sized matrix (2048 x 640, group 64) at 4 and 3 bits.

    python benchmarks/kmeans_speed.py

Prints seconds (best of 3) and the relative weight error of k-means (the default, which keeps the
zero-point or the symmetric grid per layer, and each of the two alone), min-max round to nearest
(AsymIntConfig) and, when the `hqq` peer is installed (pip install 'codesign[peers]'), HQQ's
`Quantizer.quantize(W, nbits, group_size=64, optimize=True, axis=1)` with fp16 scale and zero.
Random Gaussian weights, seed 0, one torch thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from codesign.compress.integer import AsymIntConfig, quantize_int_asym
from codesign.compress.kmeans import KMeansConfig, quantize_kmeans


def _hqq(bits: int) -> Callable[[torch.Tensor], torch.Tensor] | None:
    try:
        from hqq.core.quantize import Quantizer
    except ImportError:
        return None

    def run(weight: torch.Tensor) -> torch.Tensor:
        codes, meta = Quantizer.quantize(weight, nbits=bits, group_size=64, optimize=True, axis=1, device="cpu",
                                         compute_dtype=torch.float32)
        meta["scale"], meta["zero"] = meta["scale"].half().float(), meta["zero"].half().float()
        return Quantizer.dequantize(codes, meta).reshape(weight.shape).float()

    return run


def main() -> None:
    """Print the table."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    weight = torch.randn(2048, 640) * 0.02
    print("| bits | grid | seconds (best of 3) | relative error |")
    print("|---|---|---|---|")
    for bits in (4, 3):
        grids: list[tuple[str, Callable[[torch.Tensor], torch.Tensor] | None]] = [
            ("k-means (default: per layer, the grid of lower error)",
             lambda w, b=bits: quantize_kmeans(w, KMeansConfig(bits=b)).dequantize()),
            ("k-means, zero points", lambda w, b=bits: quantize_kmeans(w, KMeansConfig(bits=b, zero_point=True)).dequantize()),
            ("k-means, symmetric", lambda w, b=bits: quantize_kmeans(w, KMeansConfig(bits=b, zero_point=False)).dequantize()),
            ("min-max round to nearest (AsymIntConfig)",
             lambda w, b=bits: quantize_int_asym(w, AsymIntConfig(bits=b)).dequantize()),
            ("HQQ 0.2.8 (peer)", _hqq(bits)),
        ]
        for name, run in grids:
            if run is None:
                print(f"| {bits} | {name} | not installed | |")
                continue
            times = []
            for _ in range(3):
                start = time.perf_counter()
                rebuilt = run(weight)
                times.append(time.perf_counter() - start)
            err = ((rebuilt.float() - weight) ** 2).sum() / (weight**2).sum()
            print(f"| {bits} | {name} | {min(times):.2f} | {err.item():.6f} |")


if __name__ == "__main__":
    main()
