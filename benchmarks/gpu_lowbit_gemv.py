"""Low-bit LUT GEMV/GEMM against torch bf16 matmul on a CUDA GPU: µs, GB/s, % of memory bandwidth.

    python benchmarks/gpu_lowbit_gemv.py [--autotune] [--out docs/compress_gpu.md]

Shapes 8192x8192 and 4096x11008 (N x K), batch 1-16, 1/2/4-bit k-means codes (group 64) and
the fused Q + L R kernel at rank 32; then the envelope over batch 1-4096 with the batch where
bf16 starts to win. Without a CUDA GPU (or without Triton) it prints why and exits 0.
Weights are random codes: the kernels' speed does not depend on the values.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch

# Peak DRAM bandwidth, GB/s, from the vendor's product pages / datasheets.
KNOWN_BANDWIDTH_GBS = {
    "B200": (8000, "NVIDIA DGX B200 datasheet (8 TB/s per GPU)"),
    "H200": (4800, "NVIDIA H200 Tensor Core GPU datasheet (4.8 TB/s)"),
    "H100 PCIe": (2000, "NVIDIA H100 datasheet, PCIe (2 TB/s)"),
    "H100 NVL": (3900, "NVIDIA H100 datasheet, NVL (3.9 TB/s)"),
    "H100": (3350, "NVIDIA H100 datasheet, SXM5 (3.35 TB/s)"),
    "GH200": (4000, "NVIDIA GH200 datasheet, 96 GB HBM3 (4 TB/s)"),
    "A100-SXM4-80GB": (2039, "NVIDIA A100 datasheet, 80GB SXM (2,039 GB/s)"),
    "A100 80GB PCIe": (1935, "NVIDIA A100 datasheet, 80GB PCIe (1,935 GB/s)"),
    "A100": (1555, "NVIDIA A100 datasheet, 40GB (1,555 GB/s)"),
    "L40S": (864, "NVIDIA L40S datasheet (864 GB/s)"),
    "L40": (864, "NVIDIA L40 datasheet (864 GB/s)"),
    "L4": (300, "NVIDIA L4 datasheet (300 GB/s)"),
    "A10G": (600, "NVIDIA A10G (AWS G5) specification (600 GB/s)"),
    "A10": (600, "NVIDIA A10 datasheet (600 GB/s)"),
    "RTX 4090": (1008, "NVIDIA GeForce RTX 4090 specifications (1,008 GB/s)"),
    "RTX 3090": (936, "NVIDIA GeForce RTX 3090 specifications (936 GB/s)"),
    "RTX 6000 Ada": (960, "NVIDIA RTX 6000 Ada datasheet (960 GB/s)"),
}
SHAPES = ((8192, 8192), (4096, 11008))
GROUP = 64
RANK = 32


def device_bandwidth(name: str) -> tuple[float | None, str]:
    """Peak bandwidth of a GPU model from the table (longest matching key), or (None, reason)."""
    matches = [key for key in KNOWN_BANDWIDTH_GBS if key.lower() in name.lower()]
    if not matches:
        return None, "not in the table"
    gbs, source = KNOWN_BANDWIDTH_GBS[max(matches, key=len)]
    return float(gbs), source


def random_weight(n: int, k: int, bits: int, rank: int, device: str):
    """A ScalarQuantizedWeight (or Q + L R) of random codes, scales and codebook."""
    from codesign.compress import LowRankQuantizedWeight, ScalarQuantizedWeight
    from codesign.compress.formats import packed_row_bytes

    gen = torch.Generator(device=device).manual_seed(bits)
    packed = torch.randint(0, 256, (n, packed_row_bytes(bits, k)), dtype=torch.uint8, device=device, generator=gen)
    scales = (torch.rand(n, k // GROUP, device=device, generator=gen) * 0.02).half()
    book = torch.linspace(-1, 1, 1 << bits, device=device).half()
    qw = ScalarQuantizedWeight(packed, scales, book, bits, GROUP, (n, k), "kmeans")
    if rank:
        left = (torch.randn(n, rank, device=device, generator=gen) * 0.01).half()
        right = (torch.randn(rank, k, device=device, generator=gen) * 0.01).half()
        qw = LowRankQuantizedWeight(qw, left, right, 0, "plain")
    return qw


def bench_us(fn) -> float:
    """Median time of fn in µs (triton.testing.do_bench: warm-up, L2 flush between runs)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")) * 1e3


def lowbit_runner(x: torch.Tensor, qw, autotune: bool):
    """A closure that runs the kernel the dispatch would pick (tuned config when cached)."""
    from codesign.compress.matmul import kernel_arguments
    from codesign.kernels import tuning
    from codesign.kernels.lut_matmul import lut_matmul

    args = kernel_arguments(qw)
    rank = qw.rank if hasattr(qw, "rank") else 0
    problem = tuning.Problem(x.shape[0], qw.shape[0], qw.shape[1], args["bits"], GROUP, rank, "bfloat16",
                             args["table_mode"])
    name = torch.cuda.get_device_name()
    if autotune and problem.cache_key() not in tuning.read_tuned(tuning.cache_file(name)):
        tuning.autotune(problem, name, lambda c: lut_matmul(x, config=c, **args), budget_s=30,
                        synchronize=torch.cuda.synchronize)
    config = tuning.lookup_config(problem, name)
    return lambda: lut_matmul(x, config=config, **args), qw.nbytes


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally write) the GEMV table and the batch envelope."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autotune", action="store_true", help="tune each shape first (cached per GPU model)")
    parser.add_argument("--out", help="also write the tables as markdown to this file")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_lowbit_gemv: no CUDA GPU here, nothing measured (skipped)")
        return 0
    try:
        import triton  # noqa: F401
    except ImportError:
        print("gpu_lowbit_gemv: Triton is not installed (pip install 'codesign[gpu]'), nothing measured (skipped)")
        return 0
    if torch.cuda.get_device_capability() < (8, 0):
        print(f"gpu_lowbit_gemv: {torch.cuda.get_device_name()} is below compute capability 8.0 (skipped)")
        return 0

    name = torch.cuda.get_device_name()
    peak, source = device_bandwidth(name)
    lines = [f"# Low-bit GEMV on {name}", "",
             f"Command: `python benchmarks/gpu_lowbit_gemv.py{' --autotune' if args.autotune else ''}`. "
             f"Peak bandwidth: {peak or 'unknown'} GB/s ({source}).", "",
             "| N x K | batch | kernel | µs | GB/s | % of peak | speed-up vs bf16 |", "|---|---|---|---|---|---|---|"]
    for n, k in SHAPES:
        dense = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        for batch in (1, 2, 4, 8, 16):
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            io = 2 * batch * (k + n)
            t_dense = bench_us(functools.partial(torch.matmul, x, dense.T))
            rows = [("bf16 torch", t_dense, dense.numel() * 2 + io)]
            for bits, rank in ((4, 0), (2, 0), (1, 0), (4, RANK), (2, RANK)):
                run, nbytes = lowbit_runner(x, random_weight(n, k, bits, rank, "cuda"), args.autotune)
                label = f"{bits}-bit LUT" + (f" + rank {rank}" if rank else "")
                rows.append((label, bench_us(run), nbytes + io))
            for label, us, nbytes in rows:
                gbs = nbytes / us / 1e3
                pct = f"{100 * gbs / peak:.0f}" if peak else "n/a"
                lines.append(f"| {n}x{k} | {batch} | {label} | {us:.1f} | {gbs:.0f} | {pct} | {t_dense / us:.2f}x |")

    lines += ["", "## Envelope over batch (4-bit, 8192x8192)", "",
              "| batch | 4-bit µs | bf16 µs | bf16 / 4-bit |", "|---|---|---|---|"]
    n, k = SHAPES[0]
    dense = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    qw = random_weight(n, k, 4, 0, "cuda")
    crossover = None
    batch = 1
    while batch <= 4096:
        x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
        run, _ = lowbit_runner(x, qw, args.autotune)
        t_low, t_dense = bench_us(run), bench_us(functools.partial(torch.matmul, x, dense.T))
        if crossover is None and t_dense < t_low:
            crossover = batch
        lines.append(f"| {batch} | {t_low:.1f} | {t_dense:.1f} | {t_dense / t_low:.2f} |")
        batch *= 2
    lines += ["", f"Crossover (first batch where bf16 is faster): {crossover or 'none up to 4096'}"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
