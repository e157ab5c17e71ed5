"""Sizes checked before they are allocated: a request that cannot fit in memory is refused in one line."""

from __future__ import annotations

import os

__all__ = ["available_memory_bytes", "check_fits_in_memory"]


def available_memory_bytes() -> int:
    """Memory this process may still use: MemAvailable from /proc/meminfo, else physical memory."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # unknown: do not refuse


def check_fits_in_memory(n_bytes: float, what: str) -> None:
    """Raise a one-line ValueError when ``what`` would need more memory than is available."""
    available = available_memory_bytes()
    if n_bytes > available:
        raise ValueError(f"{what} needs about {n_bytes / 2**30:,.1f} GiB of memory; {available / 2**30:,.1f} GiB "
                         "is available here: choose a smaller size")
