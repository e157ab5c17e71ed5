"""Build and drive oracle.cpp: the ap_fixed.h reference for the oracle tests.

The case tables below are the single list of types exercised; they are written into the
``oracle_cases.inc`` that oracle.cpp includes, so Python and C++ cannot disagree on them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codesign.fixed import FixedType
from codesign.resources import cache_dir, copy_into_place

HERE = Path(__file__).resolve().parent

T = FixedType.parse

#: Targets of double -> ap_fixed conversion (also used by the to_double and shift checks).
#: Each type costs 28 template instantiations, so the list is short but varied.
CONV_TYPES: list[FixedType] = [
    T("ap_fixed<16,6>"),
    T("ap_ufixed<10,2>"),
    T("ap_fixed<7,-2>"),  # I < 0: purely fractional
    T("ap_ufixed<6,6>"),  # I = W: an integer
    T("ap_fixed<1,1>"),  # a single bit
    T("ap_fixed<62,31>"),  # the widest supported
    T("ap_fixed<10,-1065>"),  # LSB 2**-1075: subnormal doubles
]

#: (source, target) of ap_fixed -> ap_fixed assignment; targets are CONV_TYPES so that the
#: target classes are instantiated once for both tables.
CAST_PAIRS: list[tuple[FixedType, FixedType]] = [
    (T("ap_fixed<24,10>"), T("ap_fixed<16,6>")),  # drop 4 fraction and 4 integer bits
    (T("ap_fixed<12,9>"), T("ap_fixed<16,6>")),  # exact left shift by 7, may overflow
    (T("ap_fixed<16,6>"), T("ap_fixed<16,6>")),  # same shape, other modes
    (T("ap_fixed<20,8>"), T("ap_ufixed<10,2>")),  # signed -> unsigned: negatives
    (T("ap_ufixed<20,3>"), T("ap_fixed<7,-2>")),  # unsigned -> signed
    (T("ap_fixed<62,40>"), T("ap_fixed<7,-2>")),  # 62-bit raw values
    (T("ap_fixed<12,-6>"), T("ap_ufixed<6,6>")),  # every source bit below the target LSB
    (T("ap_ufixed<62,62>"), T("ap_fixed<62,31>")),  # left shift far beyond int64
    (T("ap_fixed<6,0>"), T("ap_fixed<1,1>")),  # shift equal to the source width
]

#: Operand pairs of +, -, *, unary - (default modes).
BIN_PAIRS: list[tuple[FixedType, FixedType]] = [
    (T("ap_fixed<16,6>"), T("ap_fixed<8,3>")),
    (T("ap_fixed<8,3>"), T("ap_ufixed<10,2>")),
    (T("ap_ufixed<10,2>"), T("ap_fixed<12,4>")),
    (T("ap_ufixed<8,8>"), T("ap_ufixed<6,-1>")),
    (T("ap_fixed<7,-2>"), T("ap_fixed<9,9>")),
    (T("ap_fixed<1,1>"), T("ap_ufixed<1,1>")),
    (T("ap_fixed<31,10>"), T("ap_ufixed<31,31>")),
]

#: (ap_int / ap_uint width and signedness, ap_fixed operand) for mixed arithmetic.
MIX_PAIRS: list[tuple[tuple[int, bool], FixedType]] = [
    ((8, True), T("ap_fixed<16,6>")),
    ((6, False), T("ap_fixed<10,-3>")),
    ((9, True), T("ap_ufixed<12,4>")),
]

#: ap_int / ap_uint operand pairs ((width, signed), (width, signed)).
INT_PAIRS: list[tuple[tuple[int, bool], tuple[int, bool]]] = [
    ((8, True), (5, False)),
    ((7, False), (7, False)),
    ((12, False), (3, True)),
    ((2, True), (2, True)),
]

#: Types whose str() is compiled verbatim as C++ (checks the printed spelling is valid).
SPELLED_TYPES: list[FixedType] = [
    T("ap_fixed<16,6>"),
    T("ap_fixed<16,6,AP_RND>"),
    T("ap_ufixed<8,3,AP_RND_CONV,AP_SAT>"),
    T("ap_fixed<18,2,AP_TRN,AP_SAT_SYM>"),
    T("ap_ufixed<12,-3,AP_RND_ZERO,AP_SAT_ZERO>"),
    T("ap_fixed<9,9,AP_TRN_ZERO>"),
    T("ap_int<5>"),
    T("ap_uint<62>"),
]

CONV, CAST, TO_DOUBLE, SHIFT, BIN, MIX, INT = range(7)
_PAYLOAD_WORDS = [1, 1, 1, 2, 2, 2, 2]
_RESULT_WORDS = [1, 1, 1, 4, 4, 3, 4]


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def cases_include() -> str:
    """Text of oracle_cases.inc for the tables above."""

    def line(name: str, rows: list[str]) -> str:
        return f"#define {name}(X) " + " ".join(rows) + "\n"

    conv = [f"X({k}, {t.width}, {t.int_bits}, {_b(t.signed)})" for k, t in enumerate(CONV_TYPES)]
    cast = [
        f"X({k}, {s.width}, {s.int_bits}, {_b(s.signed)}, {d.width}, {d.int_bits}, {_b(d.signed)})"
        for k, (s, d) in enumerate(CAST_PAIRS)
    ]
    binp = [
        f"X({k}, {a.width}, {a.int_bits}, {_b(a.signed)}, {b.width}, {b.int_bits}, {_b(b.signed)})"
        for k, (a, b) in enumerate(BIN_PAIRS)
    ]
    mix = [
        f"X({k}, {wi}, {_b(si)}, {b.width}, {b.int_bits}, {_b(b.signed)})"
        for k, ((wi, si), b) in enumerate(MIX_PAIRS)
    ]
    intp = [
        f"X({k}, {wa}, {_b(sa)}, {wb}, {_b(sb)})"
        for k, ((wa, sa), (wb, sb)) in enumerate(INT_PAIRS)
    ]
    spelled = "".join(f"typedef {t} spelled_{k};\n" for k, t in enumerate(SPELLED_TYPES))
    spelled_ids = [f"X({k}, spelled_{k})" for k in range(len(SPELLED_TYPES))]
    return (line("CONV_CASES", conv) + line("CAST_CASES", cast) + line("BIN_CASES", binp)
            + line("MIX_CASES", mix) + line("INT_CASES", intp) + spelled
            + line("SPELLED_CASES", spelled_ids))


def header_dir() -> Path:
    """Directory of the ap_types headers shipped with hls4ml; fails loudly when absent."""
    spec = importlib.util.find_spec("hls4ml")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "hls4ml is not installed: the ap_fixed oracle needs the Xilinx ap_types headers it "
            "ships (pip install hls4ml)"
        )
    d = Path(spec.origin).parent / "templates" / "vivado" / "ap_types"
    if not (d / "ap_fixed.h").is_file():
        raise RuntimeError(f"hls4ml is installed but {d}/ap_fixed.h is missing")
    return d


def compiler() -> str:
    """Path of g++; fails loudly when absent."""
    cxx = os.environ.get("CXX") or shutil.which("g++")
    if not cxx:
        raise RuntimeError("g++ was not found on PATH: the ap_fixed oracle needs a C++17 compiler")
    return cxx


@dataclass
class Oracle:
    """The compiled oracle executables, one per part of the mode pairs."""

    exes: list[Path]
    workdir: Path

    @property
    def parts(self) -> int:
        return len(self.exes)

    def part_of(self, q: int, o: int) -> int:
        return (q * 4 + o) % self.parts

    def types(self) -> list[str]:
        out = subprocess.run([str(self.exes[0]), "types"], check=True, capture_output=True,
                             text=True)
        return out.stdout.splitlines()

    def run(self, blocks: list[tuple[int, int, int, int, np.ndarray]]) -> list[np.ndarray]:
        """Answer request blocks (kind, case id, q, o, payload); returns one array per block."""
        by_part: list[list[int]] = [[] for _ in self.exes]
        for idx, (kind, _cid, q, o, _p) in enumerate(blocks):
            by_part[self.part_of(q, o) if kind in (CONV, CAST) else 0].append(idx)

        def run_part(p: int) -> list[tuple[int, np.ndarray]]:
            fin = self.workdir / f"in_{p}.bin"
            fout = self.workdir / f"out_{p}.bin"
            with open(fin, "wb") as fh:
                for idx in by_part[p]:
                    kind, cid, q, o, payload = blocks[idx]
                    n = payload.shape[0]
                    np.array([kind, cid, q, o, n, 0], dtype=np.int32).tofile(fh)
                    np.ascontiguousarray(payload).tofile(fh)
            subprocess.run([str(self.exes[p]), "run", str(fin), str(fout)], check=True)
            data = np.fromfile(fout, dtype=np.int64)
            res, pos = [], 0
            for idx in by_part[p]:
                kind, _cid, _q, _o, payload = blocks[idx]
                size = payload.shape[0] * _RESULT_WORDS[kind]
                res.append((idx, data[pos:pos + size].reshape(payload.shape[0], -1)))
                pos += size
            assert pos == data.size, "oracle output size does not match the requests"
            return res

        results: list[np.ndarray] = [np.empty(0)] * len(blocks)
        with ThreadPoolExecutor(max_workers=self.parts) as ex:
            for part in ex.map(run_part, range(self.parts)):
                for idx, arr in part:
                    results[idx] = arr
        return results


# -O0: compile time dominates; NDEBUG: ap_private asserts on a bit read that the header makes
# (and then ignores) when a cast drops more bits than the source has.
_FLAGS = ("-std=c++17", "-O0", "-DNDEBUG", "-w")


def _cache_folder(cxx: str, hdr: Path, parts: int) -> Path:
    """codesign's cache folder for these executables: keyed by the compiler, the source, the case
    tables, every ap_types header (by content) and the part count, so a change to any rebuilds."""
    digest = hashlib.sha256()
    compiler_path = Path(os.path.realpath(cxx))
    stat = compiler_path.stat()
    digest.update(f"{compiler_path}:{stat.st_size}:{stat.st_mtime_ns}:{parts}:{_FLAGS}\n".encode())
    digest.update((HERE / "oracle.cpp").read_bytes())
    digest.update(cases_include().encode())
    for header in sorted(p for p in hdr.rglob("*") if p.is_file()):
        digest.update(f"{header.relative_to(hdr)}\n".encode())
        digest.update(header.read_bytes())
    return cache_dir() / "ap-fixed-oracle" / digest.hexdigest()[:16]


def build(workdir: Path, parts: int | None = None) -> Oracle:
    """The oracle.cpp executables, ``parts`` of them (by default one per CPU that other pytest workers do not
    use): from codesign's cache when this compiler, source and header set built them before, else compiled
    side by side (and cached when the cache is writable: 17-27 s of CPU saved on every later session)."""
    hdr = header_dir()
    cxx = compiler()
    if parts is None:
        # one part per CPU this process has to itself: under pytest-xdist the other workers use the rest, and a
        # split costs CPU (each part parses and instantiates the shared code: 2 parts take 27 s of CPU, 1 part 17 s)
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
        parts = max(1, min((cpus or 1) // workers, 8))
    cached = _cache_folder(cxx, hdr, parts)
    names = [f"oracle_{p}" for p in range(parts)]
    with _claim(cached):  # a second pytest worker waits for the first one's build instead of repeating it
        if all((cached / n).is_file() for n in names):
            return Oracle([cached / n for n in names], workdir)
        return _compile(workdir, cxx, hdr, names, cached)


@contextlib.contextmanager
def _claim(folder: Path) -> Iterator[None]:
    """An exclusive lock on the cache folder while it is checked and filled (none when it cannot be made)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / ".lock", "w")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _compile(workdir: Path, cxx: str, hdr: Path, names: list[str], cached: Path) -> Oracle:
    """Compile the parts side by side into workdir, then copy them into the cache."""
    parts = len(names)
    (workdir / "oracle_cases.inc").write_text(cases_include())
    procs, exes = [], []
    for p, name in enumerate(names):
        exe = workdir / name
        cmd = [cxx, *_FLAGS, f"-I{hdr}", f"-I{workdir}", f"-DORACLE_PART={p}", f"-DORACLE_NPARTS={parts}",
               str(HERE / "oracle.cpp"), "-o", str(exe)]
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT, text=True)))
        exes.append(exe)
    for cmd, proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"compiling the ap_fixed oracle failed: {' '.join(cmd)}\n{out}")
    _store(exes, cached)
    return Oracle(exes, workdir)


def _store(exes: list[Path], folder: Path) -> None:
    """Copy the executables into the cache, each renamed into place whole (an unwritable cache only costs the time)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for exe in exes:
            copy_into_place(exe, folder / exe.name)
    except OSError:
        pass
