"""Triton GPU kernels, importable as codesign.kernels.

Modules: lut_matmul (LUT-dequant GEMV/GEMM for packed low-bit codes, optionally fused with a
low-rank term), vq_matmul (2-bit VQ), tuning (launch configurations, autotuning, on-disk cache),
santa (sampled decode attention: scores, Philox-sampled value aggregation), santa_flashdecode (the
dense split-K decode attention it is measured against), lowrank_kv (decode attention over a
quantized low-rank latent KV cache), and dispatch (where a kernel runs and where the torch
reference stands in; the only module here that works without Triton).
Set TRITON_INTERPRET=1 before importing them to run them on CPU tensors in Triton's interpreter.
"""
