"""The resume file of a sweep, ``points.jsonl``: one JSON record per finished point, appended as each one finishes.

Every executor writes the same records to the same file, so a sweep started under one executor
resumes under another. A line cut short by an interruption is dropped (that point runs again), and
so is the record of a point that failed (it is tried again on the next run).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import IO

__all__ = ["POINTS_FILE", "read_points", "append_point", "named_point"]

POINTS_FILE = "points.jsonl"


def read_points(path: str | Path) -> dict[str, dict]:
    """The finished points of a resume file by name (a later record of a name wins); rewrites the file without the dropped lines."""
    path = Path(path)
    points: dict[str, dict] = {}
    if not path.is_file():
        return points
    text = path.read_text()
    lines = text.splitlines()
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "name" in record:
            points[record["name"]] = record
    kept = {name: r for name, r in points.items() if "failed" not in r}
    if len(kept) != len(lines) or (text and not text.endswith("\n")):
        path.write_text("".join(json.dumps(r) + "\n" for r in kept.values()))
    return kept


def append_point(log: IO[str], record: dict) -> None:
    """Append one record and flush it to disk, so an interruption right after loses nothing."""
    log.write(json.dumps(record) + "\n")
    log.flush()


def named_point(label: str, params: dict) -> dict:
    """``params`` with a ``name``: ``label`` and a digest of every parameter, so that a point whose parameters
    change (more epochs, other chips) gets a new name and is computed again instead of resumed."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    return {**params, "name": f"{label} [{digest}]"}
