"""A user's own stream from a file (``--data FILE``): recorded inputs, targets and train-enables.

Two formats (docs/data.md):

``.npz`` (``numpy.savez``)
    array ``x`` (samples x inputs), array ``y`` (samples x outputs, or 1-D for one output),
    optional ``train`` (one 0 or 1 per sample; all 1 when absent). Other arrays are ignored
    and named. Read with ``allow_pickle=False``: a file holding Python objects is refused.
``.csv``
    a header row naming the columns ``x0..x{n-1}`` (inputs), ``y0..y{m-1}`` (outputs) and
    optionally ``train``, in any order; other columns are ignored and named; one row per
    sample, numbers only.

:func:`load_data` reads the file once, checks it (shapes, numbers, NaN/inf with the array
and the first row, the train flags) and returns a frozen :class:`DataStream`, a
:class:`~codesign.tasks.TaskStream` that also carries the file's path and SHA-256, so that
every command downstream receives one value and a report can name what it ran on.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.limits import check_fits_in_memory

from .stream import TaskStream

__all__ = ["DATA_FORMATS", "DataStream", "load_data", "outside_fraction"]

DATA_FORMATS = (".npz", ".csv")
_COLUMN = re.compile(r"^([xy])(\d+)$")


@dataclass(frozen=True, eq=False)
class DataStream(TaskStream):
    """A stream read from a user's file: the samples in file order, with the file's path and SHA-256."""

    path: str = ""
    sha256: str = ""
    ignored: tuple[str, ...] = ()  # arrays or columns of the file that are not x, y or train

    def head(self, n: int) -> DataStream:
        """The first ``n`` samples (``--samples``), or a one-line error when the file has fewer."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"--samples={n!r}: need at least one sample")
        if n > len(self):
            raise ValueError(f"--samples={n}: --data {self.path} holds only {len(self):,} samples")
        if n == len(self):
            return self
        return DataStream(self.name, self.x[:n], self.y[:n], (), dict(self.meta), self.train[:n],
                          self.path, self.sha256, self.ignored)

    def source(self) -> dict[str, object]:
        """Where the stream came from, for a report: absolute path, SHA-256 of the file, samples used, widths."""
        return {"path": str(Path(self.path).resolve()), "sha256": self.sha256, "samples": len(self), "inputs": self.n_inputs,
                "outputs": self.n_outputs, "train_samples": int(self.train.sum()),
                "file_samples": int(self.meta.get("file_samples", len(self)))}


def outside_fraction(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Per input column, the fraction of values below ``lo`` or above ``hi``."""
    return np.mean((x < lo) | (x > hi), axis=0)


def load_data(path: str | Path) -> DataStream:
    """Read and check a ``.npz`` or ``.csv`` data file (docs/data.md); every problem is a one-line ValueError."""
    p = Path(path)
    where = f"--data {p}"
    if not p.exists():
        raise ValueError(f"{where}: no such file")
    if p.is_dir():
        raise ValueError(f"{where}: is a folder; give a .npz or .csv file")
    suffix = p.suffix.lower()
    if suffix not in DATA_FORMATS:
        raise ValueError(f"{where}: expected a .npz (arrays x, y, optional train) or .csv (columns x0.., y0.., "
                         f"optional train) file, got {p.suffix or 'no extension'!r}")
    try:
        size = p.stat().st_size
        check_fits_in_memory(4 * size, f"{where} ({size:,} bytes)")
        raw = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if suffix == ".npz":
        x, y, train, ignored = _read_npz(raw, where)
    else:
        x, y, train, ignored = _read_csv(raw, where)
    x, y, train = _check_arrays(x, y, train, where)
    return DataStream(p.name, x, y, (), {"file_samples": int(x.shape[0])}, train, str(p), digest, ignored)


def _read_npz(raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """The x, y and train arrays of an .npz file (no pickled objects), and the names of the others."""
    if not zipfile.is_zipfile(io.BytesIO(raw)):  # np.load would read it as a pickle or a single .npy
        raise ValueError(f"{where}: not a readable .npz file (write one with numpy.savez(path, x=..., y=...))")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            names = list(archive.files)
            for needed, what in (("x", "the inputs, samples x inputs"), ("y", "the targets, samples x outputs")):
                if needed not in names:
                    found = ", ".join(names) if names else "no arrays"
                    raise ValueError(f"{where}: no array {needed!r} ({what}); the file holds {found}")
            x, y = archive["x"], archive["y"]
            train = archive["train"] if "train" in names else None
    except (zipfile.BadZipFile, EOFError, OSError):
        raise ValueError(f"{where}: not a readable .npz file (write one with numpy.savez(path, x=..., y=...))") from None
    except ValueError as exc:
        if str(exc).startswith(where):
            raise
        if "allow_pickle" in str(exc):
            raise ValueError(f"{where}: holds Python objects, which are not read (allow_pickle=False); "
                             "save numeric arrays only") from None
        raise ValueError(f"{where}: not a readable .npz file: {str(exc).splitlines()[0]}") from None
    return x, y, train, tuple(n for n in names if n not in ("x", "y", "train"))


def _read_csv(raw: bytes, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
    """The x, y and train columns of a .csv file with a header row, and the names of the other columns."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not a UTF-8 text file (byte {exc.start})") from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise ValueError(f"{where}: empty; the first row must name the columns, e.g. x0,x1,y0,train")
    header = [h.strip() for h in next(csv.reader([lines[0]]))]
    duplicated = sorted({h for h in header if header.count(h) > 1})
    if duplicated:
        raise ValueError(f"{where}: column {duplicated[0]!r} appears more than once in the header")
    columns: dict[str, dict[int, int]] = {"x": {}, "y": {}}
    for i, name in enumerate(header):
        match = _COLUMN.match(name)
        if match:
            columns[match.group(1)][int(match.group(2))] = i
    for letter, what in (("x", "inputs"), ("y", "outputs")):
        indices = sorted(columns[letter])
        if not indices:
            raise ValueError(f"{where}: no column {letter}0; the header must name the {what} {letter}0, {letter}1, ... "
                             f"(found: {', '.join(header)})")
        if indices != list(range(len(indices))):
            missing = next(k for k in range(len(indices) + 1) if k not in columns[letter])
            raise ValueError(f"{where}: column {letter}{missing} is missing ({what} are numbered {letter}0, {letter}1, ... "
                             "without gaps)")
    known = {i for c in columns.values() for i in c.values()} | ({header.index("train")} if "train" in header else set())
    ignored = tuple(h for i, h in enumerate(header) if i not in known)
    values = _csv_values(text, lines, len(header), where)
    x = values[:, [columns["x"][k] for k in range(len(columns["x"]))]]
    y = values[:, [columns["y"][k] for k in range(len(columns["y"]))]]
    train = values[:, header.index("train")] if "train" in header else None
    return x, y, train, ignored


def _csv_values(text: str, lines: list[str], n_columns: int, where: str) -> np.ndarray:
    """The numbers below the header, (rows, columns); a bad row is named by its line number in the file."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty body: numpy warns; the sample count is checked below
            values = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, ndmin=2, dtype=np.float64,
                                encoding=None)
    except ValueError:
        # numpy's message counts rows its own way: find the first bad line to name it in the file's numbering
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            cells = next(csv.reader([line]))
            if len(cells) != n_columns:
                raise ValueError(f"{where}: line {number} has {len(cells)} values, the header names {n_columns}") from None
            for cell in cells:
                try:
                    float(cell)
                except ValueError:
                    raise ValueError(f"{where}: line {number}: {cell.strip()!r} is not a number") from None
        raise ValueError(f"{where}: not a table of numbers below the header") from None
    if values.size == 0:
        return np.zeros((0, n_columns))
    return values


def _check_arrays(x: np.ndarray, y: np.ndarray, train: np.ndarray | None, where: str) -> tuple[np.ndarray, ...]:
    """Shapes, numbers, finiteness and train flags of a file's arrays; x, y as float64 (y 2-D), train as int64 0/1."""
    for name, arr in (("x", x), ("y", y), ("train", train)):
        if arr is not None and not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise ValueError(f"{where}: {name} holds {arr.dtype} values; it must hold numbers")
        if arr is not None and np.iscomplexobj(arr):
            raise ValueError(f"{where}: {name} holds complex numbers; it must hold real numbers")
    if x.ndim != 2:
        raise ValueError(f"{where}: x has shape {x.shape}; it must be 2-D, samples x inputs "
                         "(one input: x.reshape(-1, 1))")
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise ValueError(f"{where}: y has shape {y.shape}; it must be samples x outputs, or 1-D for one output")
    if x.shape[0] < 1:
        raise ValueError(f"{where}: holds no samples; a stream needs at least one")
    if x.shape[1] < 1 or y.shape[1] < 1:
        raise ValueError(f"{where}: x has shape {x.shape} and y {y.shape}; each needs at least one column")
    if y.shape[0] != x.shape[0]:
        raise ValueError(f"{where}: x has {x.shape[0]:,} rows (samples) but y has {y.shape[0]:,}; they must match")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    for name, arr in (("x", x), ("y", y)):
        bad = ~np.isfinite(arr)
        if bad.any():
            row, col = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"{where}: {name} holds {arr[row, col]} at row {row} (column {col}); "
                             f"{int(bad.sum()):,} value(s) are NaN or inf")
    if train is None:
        return x, y, np.ones(x.shape[0], dtype=np.int64)
    if train.ndim != 1 or train.shape[0] != x.shape[0]:
        raise ValueError(f"{where}: train has shape {train.shape}; it must hold one 0 or 1 per sample ({x.shape[0]:,})")
    flags = np.asarray(train, dtype=np.float64)
    bad = ~np.isin(flags, (0.0, 1.0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{where}: train holds {train[row]} at row {row}; it must be 0 (predict only) or 1 "
                         "(predict, then update)")
    return x, y, flags.astype(np.int64)
