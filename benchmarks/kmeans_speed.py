"""Time k-means quantization of one Gemma-3-270M-sized matrix (2048 x 640, layer codebook) at 4 and 2 bits.

    python benchmarks/kmeans_speed.py

Prints seconds (best of 3) and the relative weight error, so a faster Lloyd-Max can be checked to
give the same quantizer. Random Gaussian weights, seed 0, one torch thread.
"""

from __future__ import annotations

import time

import torch

from codesign.compress.kmeans import KMeansConfig, quantize_kmeans


def main() -> None:
    """Print the table."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    weight = torch.randn(2048, 640) * 0.02
    print("| bits | codebook | seconds (best of 3) | relative error |")
    print("|---|---|---|---|")
    for config in (KMeansConfig(bits=4), KMeansConfig(bits=2), KMeansConfig(bits=4, codebook="group")):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            q = quantize_kmeans(weight, config)
            times.append(time.perf_counter() - start)
        err = ((q.dequantize().float() - weight) ** 2).sum() / (weight**2).sum()
        print(f"| {config.bits} | {config.codebook} | {min(times):.2f} | {err.item():.6f} |")


if __name__ == "__main__":
    main()
