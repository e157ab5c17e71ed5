"""C-simulation without a vendor tool: compile the generated project's testbench and firmware with
g++ against the ``ap_types`` headers that hls4ml ships, run it, and read its summary line.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from codesign.processes import ToolError, run_tool, run_tools

__all__ = ["CsimError", "CsimResult", "find_compiler", "find_ap_types", "compile_csim", "run_csim", "parse_summary"]

# Fast enough to compile (ap_fixed templates are heavy at -O2) and to run 10^4-10^5 samples.
OPT_LEVEL = "-O1"
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


def compile_csim(project: Path, learner: str, compiler: str, ap_types: Path, top: str = "") -> Path:
    """Compile tb/<learner><top>_test.cpp and the firmware (in parallel) and link; returns the binary.

    ``top`` is "" for the learner's top, "_axi" for its AXI top (firmware/<learner>_axi.cpp over it).
    """
    build = project / "csim"
    build.mkdir(exist_ok=True)
    flags = [OPT_LEVEL, "-std=c++14", f"-I{ap_types}", f"-I{project / 'firmware'}", "-w"]
    sources = [project / "tb" / f"{learner}{top}_test.cpp", project / "firmware" / f"{learner}.cpp"]
    if top:
        sources.append(project / "firmware" / f"{learner}{top}.cpp")
    objects = [build / (s.stem + ".o") for s in sources]
    commands = [[compiler, *flags, "-c", str(s), "-o", str(o)] for s, o in zip(sources, objects)]
    binary = build / f"{learner}{top}_csim"
    log = build / "compile.log"
    tool = Path(compiler).name
    try:
        results = run_tools(commands, tool=tool, log=log)  # the two sources compile side by side
        link = None
        if all(r.returncode == 0 for r in results):
            link = run_tool([compiler, *[str(o) for o in objects], "-o", str(binary)], tool=tool, log=log)
            results.append(link)
            commands.append(link.args)
    except ToolError as exc:
        raise CsimError(exc.tool, exc.cause, exc.log) from None
    log.write_text("".join(f"$ {' '.join(map(str, c))}\n{r.stdout}{r.stderr}\n" for c, r in zip(commands, results)))
    if link is None or link.returncode != 0:
        first = next((ln for r in results for ln in r.stderr.splitlines() if "error" in ln), "see the log")
        raise CsimError(tool, f"the C-simulation did not compile: {first.strip()}", log)
    return binary


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
