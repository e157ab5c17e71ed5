"""Where commands write: one output-folder policy for every writer, and progress lines.

A command never writes straight into its output folder. It checks the folder before any work
starts, writes into a partial sibling (``.<name>.codesign-partial``) and moves the result into
place only when it succeeds, with a manifest (``codesign-output.json``) listing what it wrote.
So an interrupted or failed run leaves the previous result as it was, and ``--force`` can
replace exactly what codesign wrote there before: never a file or folder it did not write (also
not one the user added inside a folder codesign made, such as a constraints file in ``rtl/``),
never the working directory, never a plain file given as ``--out``. The manifest lists every
file of the result, so what the user added is told apart from what codesign wrote file by file.
"""

from __future__ import annotations

import dataclasses
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


def _write_manifest(folder: Path, command: str | None, entries: dict[str, str], derived: Iterable[str] = (),
                    files: Iterable[str] | None = ()) -> None:
    """Write the manifest atomically; ``files`` None keeps an older manifest's form (no file list)."""
    data: dict[str, Any] = {"format": _FORMAT, "command": command, "entries": dict(sorted(entries.items())),
                            "derived": sorted(set(derived))}
    if files is not None:
        data["files"] = sorted(set(files))
    data["written"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
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


def _refuse_broken_link(target: Path, option: str) -> None:
    """A link that points nowhere, as the folder or one above it, is refused now rather than after the work."""
    for path in (target, *target.parents):
        if path.is_symlink() and not path.exists():
            where = "" if path == target else f" ({path} is)"
            raise FileExistsError(f"{option} {target}: a broken link{where}, to {os.readlink(path)}; "
                                  "remove it or give another folder")


def _probe_writable(folder: Path, option: str) -> None:
    """Fail now, not after the work, when a folder cannot be written (read-only, no permission, full)."""
    probe = folder / f".codesign-write-probe-{os.getpid()}"
    try:
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise PermissionError(f"{option} {folder}: cannot write there ({exc.strerror or exc})") from None


def _leaves(root: Path) -> list[str]:
    """Relative POSIX paths of every file, link and empty folder under root (links are leaves, never followed)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        rel = base.relative_to(root)
        links = [d for d in dirnames if (base / d).is_symlink()]
        dirnames[:] = [d for d in dirnames if d not in links]
        names = filenames + links
        if base != root and not dirnames and not names:
            found.append(rel.as_posix())
        found.extend((rel / name).as_posix() for name in names)
    return found


def _ancestors(rel: str) -> list[str]:
    """'a/b/c' -> ['a', 'a/b']."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _under(rel: str, folders: Iterable[str]) -> bool:
    return any(rel == f or rel.startswith(f + "/") for f in folders)


class _Ownership:
    """Which paths of a result folder codesign wrote, read from its manifest once.

    A path is codesign's when the manifest lists it, when it lies under a derived folder (one that
    tools run on the output fill later, e.g. ``rtl/cosim``), or, for a manifest written before
    files were listed, when it lies in a top-level entry and is not newer than the manifest.
    Everything else is the user's and is never removed or replaced.
    """

    def __init__(self, folder: Path, manifest: dict, derived: Iterable[str]):
        self.folder = folder
        self.entries = set(manifest.get("entries", {}))
        self.derived = set(manifest.get("derived", [])) | set(derived)
        listed = manifest.get("files")
        self.files = set(listed) if isinstance(listed, list) else None
        try:
            self.since = (folder / MANIFEST_NAME).stat().st_mtime + 2.0
        except OSError:
            self.since = 0.0

    def __call__(self, rel: str) -> bool:
        top = rel.split("/", 1)[0]
        if rel == MANIFEST_NAME or _under(rel, self.derived) or rel in self.entries:
            return True
        if self.files is not None:
            return rel in self.files
        if top not in self.entries:
            return False
        try:
            return (self.folder / rel).lstat().st_mtime <= self.since
        except OSError:
            return True


def _clash(written: Iterable[str], user: Iterable[str], folder: Path) -> str | None:
    """The first user path that the new result would replace (same path, or a file where a folder goes)."""
    user_set = set(user)
    written_set = set(written)
    for rel in sorted(written_set):
        if rel in user_set:
            return rel
        for above in _ancestors(rel):
            if above in user_set and not (folder / above).is_dir():
                return above
    for rel in sorted(user_set):
        for above in _ancestors(rel):
            if above in written_set:
                return rel
    return None


def _remove_leaves(folder: Path, leaves: Iterable[str]) -> None:
    """Remove the given leaves under folder, then every folder they leave empty (never one holding other files)."""
    parents: set[str] = set()
    for rel in leaves:
        path = folder / rel
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        parents.update(_ancestors(rel))
    for rel in sorted(parents, key=lambda r: r.count("/"), reverse=True):
        try:
            (folder / rel).rmdir()
        except OSError:
            pass  # still holds the user's files


def _merge(source: Path, destination: Path) -> None:
    """Move every leaf of source into destination, making the folders between; nothing there is replaced."""
    for rel in _leaves(source):
        src, dst = source / rel, destination / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir() and not src.is_symlink():
            dst.mkdir(exist_ok=True)
        else:
            os.replace(src, dst)


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
        # a link to a folder is written through: the partial folder goes beside the real one (one file system)
        self._place = self.target.resolve() if self.target.is_symlink() and self.target.is_dir() else self.target
        self.partial = self._place.parent / f".{self._place.name}{_PARTIAL_SUFFIX}"
        self.previous: dict | None = None  # the manifest of the result this run replaces
        self._check()

    # ------------------------------------------------------------------ before any work
    def _check(self) -> None:
        target, option = self.target, self.option
        _refuse_special(target, option)
        _refuse_broken_link(target, option)
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
        partial, target, owner = self.partial, self._place, self.partial / _OWNER_FILE
        written = [r for r in _leaves(partial) if r not in (_OWNER_FILE, MANIFEST_NAME)]
        entries = {r.split("/", 1)[0]: self.command for r in written}
        if not target.exists():
            _write_manifest(partial, self.command, entries, self.derived, written)
            owner.unlink(missing_ok=True)
            try:
                os.replace(partial, target)
            except OSError:
                owner.write_text(f"{os.getpid()}\n")  # still ours: the next run may clear it
                raise
            return self.target
        previous = read_manifest(target) or {"entries": {}, "derived": []}
        ours = _Ownership(target, previous, self.derived)
        present = _leaves(target)
        replaced = [r for r in present if ours(r)]
        user = [r for r in present if not ours(r)]
        clash = _clash(written, user, target)
        if clash is not None:
            raise FileExistsError(f"{target / clash} was not written by codesign; the new result is left in {partial}")
        # Name both results first, so that an interruption below never makes codesign's files look like the user's.
        _write_manifest(target, self.command, {**previous["entries"], **entries},
                        [*previous.get("derived", []), *self.derived], [*replaced, *written])
        user_tops = {r.split("/", 1)[0] for r in user}
        old = target.parent / f".{target.name}{_OLD_SUFFIX}"
        shutil.rmtree(old, ignore_errors=True)
        old.mkdir()
        for name in sorted({r.split("/", 1)[0] for r in replaced} - {MANIFEST_NAME}):
            if name in user_tops:  # a folder that also holds the user's files: only codesign's leave it
                _remove_leaves(target, [r for r in replaced if r.split("/", 1)[0] == name])
            elif (target / name).exists() or (target / name).is_symlink():
                os.replace(target / name, old / name)
        for name in sorted(entries):
            if (target / name).is_dir() and not (target / name).is_symlink():
                _merge(partial / name, target / name)
            else:
                os.replace(partial / name, target / name)
        _write_manifest(target, self.command, entries, self.derived, written)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(partial, ignore_errors=True)
        return self.target

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
        _refuse_broken_link(self.path, option)
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
        listed = manifest.get("files") if manifest else []
        files = [*listed, self.path.name] if isinstance(listed, list) else None
        _write_manifest(folder, manifest.get("command") if manifest else None, entries,
                        manifest.get("derived", []) if manifest else (), files)
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
    """``value`` (a report: dicts, lists, strings, dataclasses) with every path under ``source`` moved under ``destination``."""
    src, dst = str(source), str(destination)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: relocate_paths(getattr(value, f.name), source, destination)
                                             for f in dataclasses.fields(value) if f.init})
    if type(value) is tuple:  # a plain tuple (a section's list); a NamedTuple is a value, kept as it is
        return tuple(relocate_paths(v, source, destination) for v in value)
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
