"""Rewrite the golden files from the current code: ``python -m tests.golden.regenerate`` (from the repository root).

Review the change with ``git diff tests/golden`` before committing it: the diff is what the
change did to the generated hardware.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.golden.emit import GOLDEN_DIR, LEARNERS, emit_sources, golden_files


def regenerate() -> list[Path]:
    """Emit every learner's default build and replace its folder under tests/golden/; returns the folders written."""
    written = []
    with tempfile.TemporaryDirectory(prefix="codesign_golden_") as scratch:
        for learner in LEARNERS:
            emitted = Path(scratch) / learner
            emit_sources(learner, emitted)
            target = GOLDEN_DIR / learner
            if target.exists():
                shutil.rmtree(target)  # only a folder of golden files this script wrote
            for rel, text in golden_files(emitted).items():
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                (target / rel).write_text(text)
            written.append(target)
    return written


if __name__ == "__main__":
    for folder in regenerate():
        print(f"wrote {folder}", file=sys.stdout)
