"""Triton GPU kernels, importable as codesign.kernels.

Modules: lut_matmul (LUT-dequant GEMV/GEMM for packed low-bit codes, optionally fused with a
low-rank term), vq_matmul (2-bit VQ), tuning (launch configurations, autotuning, on-disk cache).
Set TRITON_INTERPRET=1 before importing them to run them on CPU tensors in Triton's interpreter.
"""
