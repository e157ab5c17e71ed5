"""C-simulation without a vendor tool: compile the generated project's testbench and firmware with
g++ against the ``ap_types`` headers that hls4ml ships, run it, and read its summary line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from codesign.processes import ToolError, run_tool, run_tools
from codesign.resources import cache_dir, copy_into_place

__all__ = ["CsimError", "CsimResult", "find_compiler", "find_ap_types", "compile_csim", "cached_csim", "run_csim",
           "parse_summary", "compile_strict", "STRICT_FLAGS", "HLS_WARNING_KINDS"]

# Fast enough to compile (ap_fixed templates are heavy at -O2) and to run 10^4-10^5 samples.
OPT_LEVEL = "-O1"
# Headers every testbench and firmware source includes. Precompiled once per compiler, flag set and ap_types
# copy (a quarter of a firmware compile and two thirds of a testbench one is parsing them).
PCH_INCLUDES = ("ap_fixed.h", "ap_int.h", "hls_stream.h", "cstdio", "fstream", "sstream", "string", "vector")
PCH_NAME = "codesign_csim.h"
# Linked C-simulations kept for reuse (cache_dir()/csim-bin, newest first by use); a binary is a few MB.
REUSE_KEEP = 64
# The portability compile (compile_strict): every warning on, ap_types as system headers (their own warnings are the
# vendor's). Only the kinds an HLS source has by design are expected: its pragmas, unknown to a C++ compiler, and the
# labels it puts on loops for the HLS reports, which nothing jumps to.
STRICT_FLAGS = ("-Wall", "-Wextra")
HLS_WARNING_KINDS = ("unknown-pragmas", "unused-label")
_WARNING = re.compile(r"warning: .*\[-W([\w+-]+)[^\]]*\]$")
_SUMMARY = re.compile(
    r"csim: samples=(\d+) prediction_mismatches=(\d+) state_values=(\d+) state_mismatches=(\d+) result=(PASS|FAIL)"
)


class CsimError(ToolError):
    """The C-simulation could not be compiled or did not run to its summary line."""


@dataclass(frozen=True)
class CsimResult:
    """The testbench's summary: sample count, mismatches, pass/fail, wall time."""

    samples: int
    prediction_mismatches: int
    state_values: int
    state_mismatches: int
    bit_exact: bool
    seconds: float

    @property
    def mismatches(self) -> int:
        """Prediction and state mismatches together."""
        return self.prediction_mismatches + self.state_mismatches

    def to_dict(self) -> dict:
        """Plain data for report.json."""
        return {
            "samples": self.samples, "bit_exact": self.bit_exact, "mismatches": self.mismatches,
            "prediction_mismatches": self.prediction_mismatches, "state_values": self.state_values,
            "state_mismatches": self.state_mismatches, "seconds": round(self.seconds, 3),
        }


def find_compiler() -> str:
    """The C++ compiler: $CXX if set, else g++; a one-line error when it is not installed."""
    name = os.environ.get("CXX") or "g++"
    path = shutil.which(name)
    if path is None:
        if name == "g++":
            raise ValueError("g++ not found: install it (e.g. apt-get install g++) or set CXX")
        raise ValueError(f"g++ not found (CXX={name} is not an executable): install g++ (e.g. apt-get install g++) or set CXX")
    return path


def find_ap_types() -> Path:
    """The folder holding ap_fixed.h: $CODESIGN_AP_TYPES if set, else the copy inside hls4ml."""
    override = os.environ.get("CODESIGN_AP_TYPES")
    if override:
        folder = Path(override)
    else:
        # find_spec does not import hls4ml (whose import is slow); only its location is needed.
        spec = importlib.util.find_spec("hls4ml")
        if spec is None or not spec.submodule_search_locations:
            raise ValueError("the ap_types headers were not found: install hls4ml (pip install hls4ml) or set CODESIGN_AP_TYPES")
        folder = Path(list(spec.submodule_search_locations)[0]) / "templates" / "vivado" / "ap_types"
    if not (folder / "ap_fixed.h").is_file():
        raise ValueError(f"the ap_types headers were not found in {folder}: install hls4ml or set CODESIGN_AP_TYPES")
    return folder


def _pch_header(compiler: str, flags: list[str], ap_types: Path) -> Path | None:
    """The cached header of PCH_INCLUDES for this compiler, flag set and ap_types copy (None if the cache is not
    writable); its .gch next to it, once built, is what g++ reads instead."""
    headers = sorted(p for p in ap_types.rglob("*") if p.is_file())
    stamp = [os.path.realpath(compiler), *flags, str(ap_types),
             *(f"{p.relative_to(ap_types)}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in headers)]
    folder = cache_dir() / "csim-pch" / hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:16]
    header = folder / PCH_NAME
    if header.is_file():
        return header
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f"{PCH_NAME}.{os.getpid()}.tmp"
        partial.write_text("".join(f"#include <{name}>\n" for name in PCH_INCLUDES))
        os.replace(partial, header)
    except OSError:
        return None
    return header


PCH_STALE_S = 600.0  # a claim older than this was left by a build that died: taken over


def _pch_command(compiler: str, flags: list[str], header: Path) -> list[str] | None:
    """The command that precompiles header into its .gch (under a temporary name, renamed by _then_precompile's line),
    or None when another build is precompiling it now (one claim file: concurrent builds do not all spend the time)."""
    claim = Path(f"{header}.building")
    try:
        if claim.exists() and time.time() - claim.stat().st_mtime > PCH_STALE_S:
            claim.unlink(missing_ok=True)
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return None
    return [compiler, *flags, "-x", "c++-header", str(header), "-o", f"{header}.gch.{os.getpid()}"]


def _then_precompile(first: list[str], pch: list[str], gch: Path, log: Path) -> list[str]:
    """`first`, then the precompile on the core it frees (the firmware, the long compile, runs beside both): a shell
    line that exits with first's status; the precompiled header is renamed into place only when it was built."""
    return ["sh", "-c", f"{shlex.join(first)}; status=$?; {shlex.join(pch)} > {shlex.quote(str(log))} 2>&1 "
                        f"&& mv -f {shlex.quote(pch[-1])} {shlex.quote(str(gch))}; exit $status"]


def _common_flags(ap_types: Path) -> list[str]:
    """The flags of every compile of the C-simulation (and of its precompiled headers)."""
    return [OPT_LEVEL, "-std=c++14", f"-I{ap_types}", "-w"]


def compile_csim(project: Path, learner: str, compiler: str, ap_types: Path, top: str = "") -> Path:
    """Compile tb/<learner><top>_test.cpp and the firmware (in parallel) and link; returns the binary.

    ``top`` is "" for the learner's top, "_axi" for its AXI top (firmware/<learner>_axi.cpp over it).
    The common headers come precompiled from codesign's cache; when they are not there yet, they are
    precompiled beside this compile, for the next ones (g++ reads the plain headers whenever a
    precompiled one does not match, and a compile that fails on one is repeated without it, so the
    result never depends on it). A binary that the same compiler, flags, headers and sources linked
    before is taken from the cache instead (cached_csim says so beforehand).
    """
    build = project / "csim"
    build.mkdir(exist_ok=True)
    common = _common_flags(ap_types)
    header = _pch_header(compiler, common, ap_types)
    binary = build / f"{learner}{top}_csim"
    log = build / "compile.log"
    reused = _reuse_folder(project, compiler, header) / binary.name if header is not None else None
    if reused is not None and _take(reused, binary):
        log.write_text(f"reused {reused}: the same compiler, flags, ap_types headers and sources built it\n")
        return binary
    gch = Path(f"{header}.gch") if header is not None else None
    sources = [project / "tb" / f"{learner}{top}_test.cpp", project / "firmware" / f"{learner}.cpp"]
    if top:
        sources.append(project / "firmware" / f"{learner}{top}.cpp")
    objects = [build / (s.stem + ".o") for s in sources]

    def compile_commands(precompiled: bool) -> list[list[str]]:
        flags = [*common, f"-I{project / 'firmware'}", *(["-include", str(header)] if precompiled else [])]
        return [[compiler, *flags, "-c", str(s), "-o", str(o)] for s, o in zip(sources, objects)]

    precompiled = gch is not None and gch.is_file()
    commands = compile_commands(precompiled)
    can_chain = shutil.which("sh") is not None
    pch = _pch_command(compiler, common, header) if header is not None and not precompiled and can_chain else None
    tool = Path(compiler).name
    pch_log = build / "precompile.log"
    run = list(commands)
    if pch and gch is not None:  # the testbench compiles in a second, the firmware in several: precompile after the first
        run[0] = _then_precompile(commands[0], pch, gch, pch_log)
    try:
        results = run_tools(run, tool=tool, log=log)  # side by side
        if precompiled and gch is not None and any(r.returncode for r in results):
            # a damaged precompiled header fails a compile that the plain headers pass: once more without it
            commands = compile_commands(False)
            results = run_tools(commands, tool=tool, log=log)
            if all(r.returncode == 0 for r in results):
                gch.unlink(missing_ok=True)
        link = None
        if all(r.returncode == 0 for r in results):
            link = run_tool([compiler, *[str(o) for o in objects], "-o", str(binary)], tool=tool, log=log)
            results.append(link)
            commands.append(link.args)
    except ToolError as exc:
        raise CsimError(exc.tool, exc.cause, exc.log) from None
    finally:
        if pch:
            _release_pch(pch[-1], header)
    if pch:
        precompiled_now = gch is not None and gch.is_file()
        text = pch_log.read_text() if pch_log.is_file() else ""
        commands.append(pch)
        results.append(subprocess.CompletedProcess(pch, 0 if precompiled_now else 1, text, ""))
    log.write_text("".join(f"$ {' '.join(map(str, c))}\n{r.stdout}{r.stderr}\n" for c, r in zip(commands, results)))
    if link is None or link.returncode != 0:
        first = next((ln for r in results for ln in r.stderr.splitlines() if "error" in ln), "see the log")
        raise CsimError(tool, f"the C-simulation did not compile: {first.strip()}", log)
    if reused is not None:
        _keep(binary, reused)
    return binary


def _reuse_folder(project: Path, compiler: str, header: Path) -> Path:
    """Where the C-simulation of these sources is kept: keyed by the precompiled header's folder (compiler path,
    flags, ap_types copy), the compiler's size and time, and the content of every file of firmware/ and tb/
    (whatever a source may include)."""
    driver = Path(os.path.realpath(compiler)).stat()
    digest = hashlib.sha256(f"{header.parent.name}:{driver.st_size}:{driver.st_mtime_ns}".encode())
    for folder in ("firmware", "tb"):
        for path in sorted(p for p in (project / folder).rglob("*") if p.is_file()):
            digest.update(f"\n{path.relative_to(project)}\n".encode())
            digest.update(path.read_bytes())
    return cache_dir() / "csim-bin" / digest.hexdigest()[:24]


def cached_csim(project: Path, learner: str, compiler: str, ap_types: Path, top: str = "") -> bool:
    """Whether compile_csim will take this project's C-simulation from the cache (the same sources built it before)."""
    header = _pch_header(compiler, _common_flags(ap_types), ap_types)
    return header is not None and (_reuse_folder(project, compiler, header) / f"{learner}{top}_csim").is_file()


def _take(cached: Path, binary: Path) -> bool:
    """Copy a kept binary into the project (True), marking it as just used; False when there is none to take."""
    try:
        shutil.copy2(cached, binary)
        os.utime(cached.parent)
    except OSError:
        return False
    return True


def _keep(binary: Path, cached: Path) -> None:
    """Keep a linked binary for reuse (renamed into place whole) and drop the least recently used beyond REUSE_KEEP;
    an unwritable cache only costs the time."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        copy_into_place(binary, cached)
        kept = sorted(cached.parent.parent.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kept[REUSE_KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass


def _release_pch(partial: str, header: Path | None) -> None:
    """Drop what a failed or interrupted precompile left, and release the claim."""
    try:
        Path(partial).unlink(missing_ok=True)
        if header is not None:
            Path(f"{header}.building").unlink(missing_ok=True)
    except OSError:
        pass


def parse_summary(output: str) -> tuple[int, int, int, int, bool]:
    """(samples, prediction mismatches, state values, state mismatches, pass) from the testbench output."""
    matches = _SUMMARY.findall(output)
    if not matches:
        raise CsimError("C-simulation", "the testbench printed no summary line")
    samples, pred, values, state, result = matches[-1]
    return int(samples), int(pred), int(values), int(state), result == "PASS"


def run_csim(binary: Path, tb_data: Path, timeout_s: float = 600.0, log_name: str = "csim.log") -> CsimResult:
    """Run the compiled testbench on tb_data; its output goes to csim/<log_name> next to the binary."""
    start = time.perf_counter()
    log = binary.parent / log_name
    try:
        proc = run_tool([binary, tb_data], tool="C-simulation", timeout=timeout_s, log=log)
    except ToolError as exc:
        raise CsimError(exc.tool, exc.cause, exc.log) from None
    seconds = time.perf_counter() - start
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode not in (0, 1):
        last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        raise CsimError("C-simulation", f"exit status {proc.returncode} ({last[0]})", log)
    samples, pred, values, state, passed = parse_summary(proc.stdout)
    return CsimResult(samples, pred, values, state, passed and proc.returncode == 0, seconds)


def compile_strict(project: Path, learner: str, compiler: str, ap_types: Path) -> tuple[Path, dict[str, int]]:
    """Compile and link the C-simulation with STRICT_FLAGS (no cache) into csim-strict/; returns the binary and the
    count of each warning kind (the -W name) the compiler gave for the project's own sources."""
    build = project / "csim-strict"
    build.mkdir(exist_ok=True)
    flags = [OPT_LEVEL, "-std=c++14", "-isystem", str(ap_types), f"-I{project / 'firmware'}", *STRICT_FLAGS]
    sources = [project / "tb" / f"{learner}_test.cpp", project / "firmware" / f"{learner}.cpp"]
    objects = [build / (src.stem + ".o") for src in sources]
    binary = build / f"{learner}_csim"
    log = build / "compile.log"
    tool = Path(compiler).name
    try:
        results = run_tools([[compiler, *flags, "-c", str(src), "-o", str(o)] for src, o in zip(sources, objects)], tool=tool,
                            log=log)
        if all(r.returncode == 0 for r in results):
            results.append(run_tool([compiler, *map(str, objects), "-o", str(binary)], tool=tool, log=log))
    except ToolError as exc:
        raise CsimError(exc.tool, exc.cause, exc.log) from None
    text = "".join(r.stdout + r.stderr for r in results)
    log.write_text(text)
    if any(r.returncode for r in results) or not binary.is_file():
        first = next((ln for ln in text.splitlines() if "error" in ln), "see the log")
        raise CsimError(tool, f"the C-simulation did not compile: {first.strip()}", log)
    kinds: dict[str, int] = {}
    for line in text.splitlines():
        m = _WARNING.search(line)
        if m:
            kinds[m.group(1)] = kinds.get(m.group(1), 0) + 1
    return binary, kinds
