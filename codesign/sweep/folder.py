"""The output folder of a resumable sweep: its settings file, and the points of the run it resumes.

A sweep command writes ``points.jsonl`` and its settings into an output folder under the
project's policy (codesign.outputs): a run interrupted by Ctrl-C leaves its partial folder,
which the next run with the same settings resumes; a finished run with the same settings is
resumed too (its points are copied and only missing points computed); other settings are
refused unless ``force``, which replaces only what codesign wrote there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from codesign.outputs import OutputFolder
from codesign.sweep.resume import POINTS_FILE

__all__ = ["read_settings", "open_sweep_folder"]


def read_settings(folder: Path, name: str) -> dict | None:
    """The settings a sweep wrote into ``folder/name``, or None."""
    try:
        return json.loads((folder / name).read_text())
    except (OSError, ValueError):
        return None


def open_sweep_folder(out: str | Path, command: str, settings: dict, settings_file: str, outputs: Sequence[str],
                      force: bool = False) -> OutputFolder:
    """The sweep's output folder, open for writing, with the points of the run it resumes (if any)."""
    out = Path(out)
    folder = OutputFolder(out, command, force=force, expected=(settings_file, POINTS_FILE, *outputs), resumable=True)
    interrupted = not force and read_settings(folder.partial, settings_file) == settings
    finished = folder.previous is not None and not force and not interrupted
    if finished and read_settings(out, settings_file) != settings:
        raise FileExistsError(f"{out} holds a `codesign {command}` run with other settings (use --force to start it over)")
    work = folder.open(keep=interrupted)
    if finished and (out / POINTS_FILE).is_file():
        shutil.copyfile(out / POINTS_FILE, work / POINTS_FILE)
    (work / settings_file).write_text(json.dumps(settings, indent=1) + "\n")
    return folder
