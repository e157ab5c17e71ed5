"""Where commands write: one output-folder policy for every writer, and progress lines.

A command never writes straight into its output folder. It checks the folder before any work
starts, writes into a partial sibling (``.<name>.codesign-partial``) and moves the result into
place only when it succeeds, with a manifest (``codesign-output.json``) listing what it wrote.
So an interrupted or failed run leaves the previous result as it was, and ``--force`` can
replace exactly what codesign wrote there before: never a file or folder it did not write, never
the working directory, never a plain file given as ``--out``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

__all__ = ["MANIFEST_NAME", "OutputFolder", "OutputFile", "read_manifest", "relocate_paths", "Progress"]

MANIFEST_NAME = "codesign-output.json"
_PARTIAL_SUFFIX = ".codesign-partial"
_OLD_SUFFIX = ".codesign-replaced"
_OWNER_FILE = ".codesign-owner"  # inside a partial folder: the pid of the run writing it
_FORMAT = 1


def read_manifest(folder: Path) -> dict | None:
    """The output manifest of a folder, or None when it has none (or an unreadable one)."""
    try:
        data = json.loads((Path(folder) / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        return None
    return data


def _write_manifest(folder: Path, command: str | None, entries: dict[str, str], derived: Iterable[str] = ()) -> None:
    data = {"format": _FORMAT, "command": command, "entries": dict(sorted(entries.items())),
            "derived": sorted(set(derived)), "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    tmp = folder / f".{MANIFEST_NAME}.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, folder / MANIFEST_NAME)


def _refuse_special(target: Path, option: str) -> None:
    """No command writes into the working directory, a folder above it, the home folder or a root."""
    resolved = target.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise ValueError(f"{option} {target}: that is the working directory (or a folder above it); "
                         f"give a folder of its own, e.g. {option} {target / 'codesign_out'}")
    if resolved == Path.home().resolve() or resolved == Path(resolved.anchor):
        raise ValueError(f"{option} {target}: refusing to write into the home or root folder; give a folder of its own")


def _probe_writable(folder: Path, option: str) -> None:
    """Fail now, not after the work, when a folder cannot be written (read-only, no permission, full)."""
    probe = folder / f".codesign-write-probe-{os.getpid()}"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PermissionError(f"{option} {folder}: cannot write there ({exc.strerror or exc})") from None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner_pid(partial: Path) -> int | None:
    try:
        return int((partial / _OWNER_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


class OutputFolder:
    """A command's output folder, checked now, written in a partial sibling, and put in place by :meth:`commit`.

    ``command`` names the writer (e.g. ``"build"``); ``expected`` the top-level entries it will
    write, when known, so that a clash with a file codesign did not write is refused before any
    work; ``derived`` entries that tools run on the output create later (a Vitis project folder),
    replaced with it. A ``resumable`` command (explore) keeps its partial folder when interrupted
    and may find it again on the next run (``open(keep=True)``). Checking writes nothing.
    """

    def __init__(self, target: str | Path, command: str, *, force: bool = False, expected: Iterable[str] = (),
                 derived: Iterable[str] = (), resumable: bool = False, option: str = "--out"):
        self.target = Path(target)
        self.command, self.force, self.resumable, self.option = command, force, resumable, option
        self.expected, self.derived = tuple(expected), tuple(derived)
        self.partial = self.target.parent / f".{self.target.name}{_PARTIAL_SUFFIX}"
        self.previous: dict | None = None  # the manifest of the result this run replaces
        self._check()

    # ------------------------------------------------------------------ before any work
    def _check(self) -> None:
        target, option = self.target, self.option
        _refuse_special(target, option)
        if target.exists() and not target.is_dir():
            raise FileExistsError(f"{option} {target} is a file, not a folder; give a folder "
                                  "(codesign never replaces a file given as an output folder)")
        if target.is_dir():
            manifest = read_manifest(target)
            entries = [p.name for p in target.iterdir()]
            if manifest is None and entries:
                raise FileExistsError(f"{option} {target} holds files codesign did not write; give a new or empty "
                                      "folder (--force replaces only what codesign wrote)")
            if manifest is not None:
                owner = manifest.get("command")
                if owner != self.command:
                    what = f"the output of `codesign {owner}`" if owner else "files codesign did not write"
                    raise FileExistsError(f"{option} {target} holds {what}; give another folder "
                                          f"(--force replaces only the output of `codesign {self.command}`)")
                if not self.force and not self.resumable:
                    raise FileExistsError(f"{option} {target} holds an earlier `codesign {self.command}` result: "
                                          "pass --force to replace it (only what codesign wrote there is replaced)")
                self.previous = manifest
                ours = set(manifest["entries"]) | set(manifest.get("derived", [])) | {MANIFEST_NAME}
                clash = sorted(set(self.expected) & (set(entries) - ours))
                if clash:
                    raise FileExistsError(f"{option} {target}: {target / clash[0]} was not written by codesign "
                                          "and would be replaced; move it or give another folder")
            _probe_writable(target, option)
        existing = next(p for p in (target.parent, *target.parent.parents) if p.exists() or p == Path(p.anchor))
        if not existing.is_dir():
            raise FileExistsError(f"{option} {target}: {existing} is a file, not a folder")
        _probe_writable(existing, option)  # the folders still to make go there
        partial = self.partial
        if partial.exists() or partial.is_symlink():
            pid = _owner_pid(partial)
            if pid is None or not partial.is_dir() or partial.is_symlink():
                raise FileExistsError(f"{partial} is in the way and was not made by codesign; move it")
            if pid != os.getpid() and _pid_alive(pid):
                raise FileExistsError(f"another codesign run (pid {pid}) is writing {self.target}; wait for it or stop it")

    def open(self, keep: bool = False) -> Path:
        """Claim the partial folder and return it: an earlier (dead) run's partial result is kept only with ``keep``."""
        partial = self.partial
        if (partial.exists() or partial.is_symlink()) and not keep:
            shutil.rmtree(partial)
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.mkdir(exist_ok=True)
        (partial / _OWNER_FILE).write_text(f"{os.getpid()}\n")
        return partial

    # ------------------------------------------------------------------ the work
    @property
    def work(self) -> Path:
        """The folder to write into while the command runs."""
        return self.partial

    def final(self, path: str | Path) -> Path:
        """Where a path inside :attr:`work` will be once the result is in place."""
        return self.target / Path(path).relative_to(self.partial)

    def commit(self) -> Path:
        """Put the result in place (replacing only what codesign wrote there before); returns the target."""
        partial, target = self.partial, self.target
        (partial / _OWNER_FILE).unlink(missing_ok=True)
        written = {p.name: self.command for p in partial.iterdir() if p.name != MANIFEST_NAME}
        if not target.exists():
            _write_manifest(partial, self.command, written, self.derived)
            os.replace(partial, target)
            return target
        previous = read_manifest(target) or {"entries": {}, "derived": []}
        ours = set(previous["entries"]) | set(previous.get("derived", []))
        clash = sorted(n for n in written if (target / n).exists() and n not in ours)
        if clash:
            (partial / _OWNER_FILE).write_text(f"{os.getpid()}\n")
            raise FileExistsError(f"{target / clash[0]} was not written by codesign; the new result is left in {partial}")
        old = target.parent / f".{target.name}{_OLD_SUFFIX}"
        shutil.rmtree(old, ignore_errors=True)
        old.mkdir()
        for name in sorted(ours | {MANIFEST_NAME}):
            if (target / name).exists() or (target / name).is_symlink():
                os.replace(target / name, old / name)
        for name in written:
            os.replace(partial / name, target / name)
        _write_manifest(target, self.command, written, self.derived)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(partial, ignore_errors=True)
        return target

    def discard(self) -> None:
        """Remove the partial result (the previous result, if any, is untouched)."""
        shutil.rmtree(self.partial, ignore_errors=True)

    @contextmanager
    def writing(self, keep: bool = False) -> Iterator[Path]:
        """Open, yield :attr:`work`, commit on success; on Ctrl-C drop the partial result unless resumable.

        On any other failure the partial folder stays for inspection (its logs); the next run clears it.
        """
        self.open(keep=keep)
        try:
            yield self.work
        except KeyboardInterrupt:
            if not self.resumable:
                self.discard()
            raise
        self.commit()


class OutputFile:
    """One file a command adds to a folder (e.g. a plot beside a checkpoint), under the same policy.

    The file is written as a partial sibling and renamed into place; the folder's manifest records
    it, so ``--force`` may replace it later and a forced rewrite of the folder's owner removes it.
    A file of the same name that codesign did not write is never replaced.
    """

    def __init__(self, path: str | Path, command: str, *, force: bool = False, option: str = "--out"):
        self.path, self.command = Path(path), command
        folder = self.path.parent
        if folder.exists() and not folder.is_dir():
            raise FileExistsError(f"{option} {folder} is a file, not a folder")
        if self.path.exists() or self.path.is_symlink():
            manifest = read_manifest(folder) or {"entries": {}}
            if self.path.is_dir() or self.path.name not in manifest["entries"]:
                raise FileExistsError(f"{self.path} exists and was not written by codesign; move it or give another --out")
            if not force:
                raise FileExistsError(f"{self.path} exists: pass --force to replace it")
        existing = next(p for p in (folder, *folder.parents) if p.exists() or p == Path(p.anchor))
        if not existing.is_dir():
            raise FileExistsError(f"{option} {folder}: {existing} is a file, not a folder")
        _probe_writable(existing, option)
        self.partial = folder / f".{self.path.name}{_PARTIAL_SUFFIX}{self.path.suffix}"

    def commit(self) -> Path:
        """Rename the written partial file into place and record it in the folder's manifest."""
        os.replace(self.partial, self.path)
        folder = self.path.parent
        manifest = read_manifest(folder)
        entries = dict(manifest["entries"]) if manifest else {}
        entries[self.path.name] = self.command
        _write_manifest(folder, manifest.get("command") if manifest else None, entries,
                        manifest.get("derived", []) if manifest else ())
        return self.path

    @contextmanager
    def writing(self) -> Iterator[Path]:
        """Yield the partial file's path; commit on success, remove it on any failure."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield self.partial
        except BaseException:
            self.partial.unlink(missing_ok=True)
            raise
        self.commit()


def relocate_paths(value: Any, source: Path, destination: Path) -> Any:
    """``value`` (a report: dicts, lists, strings) with every path under ``source`` moved under ``destination``."""
    src, dst = str(source), str(destination)
    if isinstance(value, str):
        return dst + value[len(src):] if value == src or value.startswith(src + os.sep) else value
    if isinstance(value, dict):
        return {k: relocate_paths(v, source, destination) for k, v in value.items()}
    if isinstance(value, list):
        return [relocate_paths(v, source, destination) for v in value]
    return value


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
