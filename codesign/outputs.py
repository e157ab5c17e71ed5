"""Output folders and progress lines shared by every command that writes files or runs long."""

from __future__ import annotations

import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, TextIO

__all__ = ["prepare_output", "Progress"]


def prepare_output(out: Path, generated: Iterable[str], force: bool) -> None:
    """Make a folder ready for a command's files: refuse a non-empty one without force;
    with force, remove only the entries the command generates, leaving the user's other files."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"output path {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise FileExistsError(f"output folder {out} exists and is not empty: pass --force to replace its generated files")
        for name in generated:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    out.mkdir(parents=True, exist_ok=True)


class Progress:
    """Numbered step lines with their wall time: ``[2/5] compiling ... 9.8 s``."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total, self.index, self.stream = total, 0, stream if stream is not None else sys.stdout
        self.seconds: dict[str, float] = {}

    @contextmanager
    def step(self, key: str, text: str) -> Iterator[None]:
        """Print the step, time it, and close the line with the seconds (or 'failed')."""
        self.index += 1
        print(f"[{self.index}/{self.total}] {text} ...", end="", file=self.stream, flush=True)
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            print(" failed", file=self.stream, flush=True)
            raise
        self.seconds[key] = time.perf_counter() - start
        print(f" {self.seconds[key]:.1f} s", file=self.stream, flush=True)
