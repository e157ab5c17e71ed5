"""Where the shipped non-Python trees live (for an editable install and a wheel alike), and codesign's cache."""

from __future__ import annotations

import os
import shutil
from importlib.resources import files
from pathlib import Path

__all__ = ["RESOURCE_TREES", "resource_dir", "cache_dir", "copy_into_place"]

# Top-level folders of the repository that install as subpackages of codesign.
RESOURCE_TREES = ("hls", "rtl", "sim", "kernels", "board_files", "examples")


def resource_dir(name: str) -> Path:
    """The folder of a shipped tree (hls, rtl, sim, kernels, board_files or examples) as a filesystem path."""
    if name not in RESOURCE_TREES:
        raise ValueError(f"unknown resource tree {name!r}: choose one of {', '.join(RESOURCE_TREES)}")
    return Path(str(files(f"codesign.{name}")))


def cache_dir() -> Path:
    """$CODESIGN_CACHE_DIR, else $XDG_CACHE_HOME/codesign, else ~/.cache/codesign (what codesign may rebuild)."""
    if os.environ.get("CODESIGN_CACHE_DIR"):
        return Path(os.environ["CODESIGN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codesign"


def copy_into_place(source: Path, target: Path) -> None:
    """Copy a file (content and mode) to target under a temporary name, then rename it there: a process reading the
    cache beside this one sees the whole file or none (OSError when it cannot be written)."""
    partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.copy(source, partial)
    os.replace(partial, target)
