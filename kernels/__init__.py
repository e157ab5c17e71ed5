"""Triton GPU kernels, importable as codesign.kernels."""
