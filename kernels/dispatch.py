"""Where a Triton kernel runs and where the torch reference stands in: one rule for every kernel.

kernel="auto" runs the Triton kernel for float16/bfloat16 inputs on a CUDA GPU of compute
capability >= 8.0 with Triton installed (and on CPU tensors when TRITON_INTERPRET=1 was set before
the kernels were imported: the interpreter runs them, so a test sees the path a GPU takes), and falls back to
the torch reference elsewhere with one warning per reason; kernel="triton" insists (ValueError where it cannot run; on CPU tensors it runs
Triton's interpreter when TRITON_INTERPRET=1 was set before the kernels were imported, which is how
the tests check the kernels without a GPU); kernel="torch" is the reference.

This module imports Triton lazily, so it works (and explains) where Triton is not installed.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TypeVar

import torch

__all__ = [
    "KERNELS",
    "MIN_CAPABILITY",
    "device_name",
    "is_interpreted",
    "reset_fallback_warnings",
    "run_kernel_or_reference",
    "split_k_chunk",
    "unsupported_reason",
]

KERNELS = ("auto", "triton", "torch")
MIN_CAPABILITY = (8, 0)
T = TypeVar("T")


@functools.cache
def _warn_once(what: str, reason: str) -> None:
    warnings.warn(f"codesign: using the torch reference {what}: {reason}", RuntimeWarning, stacklevel=5)


def reset_fallback_warnings() -> None:
    """Forget which fallback reasons were already reported (each is reported once per process)."""
    _warn_once.cache_clear()


def is_interpreted(kernel: object) -> bool:
    """True when a @triton.jit function was defined under TRITON_INTERPRET=1 (it then runs on CPU tensors)."""
    return type(kernel).__name__ == "InterpretedFunction"


def _kernels_interpreted() -> bool:
    from codesign.kernels import lut_matmul  # noqa: PLC0415 - Triton is an optional dependency

    return is_interpreted(lut_matmul.lut_gemm_kernel)


def unsupported_reason(x: torch.Tensor) -> str | None:
    """Why the Triton kernels cannot run on x here, or None when they can."""
    if x.dtype not in (torch.float16, torch.bfloat16):  # first: no Triton import for a float32 model
        return f"dtype {x.dtype} (the kernels take float16 or bfloat16)"
    try:
        interpreted = _kernels_interpreted()
    except ImportError:
        return "Triton is not installed (pip install 'codesign[gpu]')"
    if x.device.type == "cpu":
        if interpreted:
            return None
        return "CPU tensors (the kernels need a CUDA GPU, or TRITON_INTERPRET=1 set before import)"
    if x.device.type != "cuda":
        return f"device type {x.device.type!r} (the kernels need a CUDA GPU)"
    if interpreted:
        return None
    capability = torch.cuda.get_device_capability(x.device)
    if capability < MIN_CAPABILITY:
        name = torch.cuda.get_device_name(x.device)
        return f"GPU {name} has compute capability {capability[0]}.{capability[1]}, below the 8.0 the kernels need"
    return None


def device_name(x: torch.Tensor) -> str:
    """The name tuned launch configurations are cached under: the GPU's, or the interpreter's."""
    if x.device.type == "cuda":
        return torch.cuda.get_device_name(x.device)
    return "triton-interpreter"


def run_kernel_or_reference(
    kernel: str, x: torch.Tensor, run_triton: Callable[[], T], run_reference: Callable[[], T], what: str
) -> T:
    """run_triton() where the kernel can and should run on x, else run_reference() (see the module doc).

    `what` names the operation in the one-per-reason fallback warning ("matmul", "attention").
    """
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}: choose one of {', '.join(KERNELS)}")
    if kernel == "torch":
        return run_reference()
    reason = unsupported_reason(x)
    if reason is not None:
        if kernel == "triton":
            raise ValueError(f"kernel='triton' cannot run here: {reason}")
        _warn_once(what, reason)
        return run_reference()
    try:
        return run_triton()
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a compile or launch failure must not end the caller's run
        if kernel == "triton":
            raise
        _warn_once(what, f"the Triton kernel failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})")
        return run_reference()


def split_k_chunk(n_keys: int, programs_per_chunk: int, block_n: int, chunk: int | None) -> tuple[int, int]:
    """(chunk, n_chunks) for split-K decode: enough chunks to fill a large GPU, each a multiple of block_n.

    programs_per_chunk is the number of programs one chunk index launches (batch × KV heads).
    """
    if chunk is None:
        want = max(1, 256 // programs_per_chunk)
        per_chunk = -(-n_keys // want)
        chunk = max(block_n, -(-per_chunk // block_n) * block_n)
    if chunk % block_n:
        raise ValueError(f"chunk {chunk} must be a multiple of block_n {block_n}")
    return chunk, -(-n_keys // chunk)
