"""The emitted RTL through slang, a strict IEEE 1800-2017 front end: errors, and warnings by class.

Verilator and Yosys's own reader accept constructs that Vivado, Quartus and Questa refuse; slang
(``pyslang``, the ``test`` extra) elaborates a top as the standard says, so a design it accepts with
no error is one those tools read. Every warning class of ``-Weverything`` it reports is either fixed
in ``rtl/`` or waived in ``rtl/lint_waivers.toml`` with a one-line reason: :func:`lint_rtl` returns
the findings, :func:`unwaived` the ones no waiver covers.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesign.errors import require_module
from codesign.resources import resource_dir

__all__ = ["LintFinding", "WAIVERS", "lint_rtl", "lint_folder", "load_waivers", "unwaived", "count_by_class"]

WAIVERS = "lint_waivers.toml"  # in rtl/


@dataclass(frozen=True)
class LintFinding:
    """One slang diagnostic: its severity, its warning class (the -W name), where, and the message."""

    severity: str  # "error" or "warning"
    kind: str  # the -W option name of a warning; for an error, its diagnostic code
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.severity}: {self.message} [{self.kind}]"


def lint_rtl(folder: str | Path, top: str, sources: Sequence[str], includes: Sequence[str] = (".",)) -> list[LintFinding]:
    """Elaborate ``top`` from ``sources`` (names in ``folder``) under slang -Weverything; every error and warning."""
    require_module("pyslang")
    import pyslang
    from pyslang.driver import CommandLineOptions, Driver

    folder = Path(folder)
    driver = Driver()
    driver.addStandardArgs()
    args = ["slang", "-Weverything", "--top", top, "--ignore-unknown-modules=false"]
    args += [f"-I{folder / i}" for i in includes] + [str(folder / s) for s in sources]
    if not (driver.parseCommandLine(" ".join(_quote(a) for a in args), CommandLineOptions()) and driver.processOptions()
            and driver.parseAllSources()):
        raise ValueError(f"slang could not read the sources of {top} in {folder}")
    compilation = driver.createCompilation()
    diagnostics = list(compilation.getAllDiagnostics())
    if not any(d.isError() for d in diagnostics):  # the analysis (drivers, unused values) needs an elaborated design
        analysis = pyslang.analysis.AnalysisManager(driver.analysisOptions)  # runAnalysis would print them
        analysis.analyze(compilation)
        diagnostics += list(analysis.getDiagnostics())
    engine = driver.diagEngine
    manager = compilation.sourceManager
    findings: set[LintFinding] = set()
    for d in diagnostics:
        severity = engine.getSeverity(d.code, d.location)
        name = severity.name.lower()
        if name not in ("error", "fatal", "warning"):
            continue
        option = engine.getOptionName(d.code) or re.sub(r"^DiagCode\((.*)\)$", r"\1", str(d.code))  # errors have none
        loc = d.location
        file = Path(manager.getFileName(loc)).name if loc.buffer.id else "?"
        line = manager.getLineNumber(loc) if loc.buffer.id else 0
        findings.add(LintFinding("warning" if name == "warning" else "error", option, file, line,
                                 engine.formatMessage(d)))
    return sorted(findings, key=lambda f: (f.severity, f.kind, f.file, f.line, f.message))


def _quote(arg: str) -> str:
    return '"' + arg.replace('"', '\\"') + '"' if any(c.isspace() for c in arg) else arg


def lint_folder(folder: str | Path) -> dict[str, list[LintFinding]]:
    """Both tops of an emitted RTL folder (its rtl_manifest.json) through slang: findings per top."""
    folder = Path(folder)
    manifest: dict[str, Any] = json.loads((folder / "rtl_manifest.json").read_text())
    includes = manifest.get("includes", ["."])
    return {
        manifest["top"]: lint_rtl(folder, manifest["top"], manifest["sources"], includes),
        manifest["axi"]["top"]: lint_rtl(folder, manifest["axi"]["top"], manifest["axi"]["sources"], includes),
    }


def load_waivers(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The waived warning classes: -W name -> {reason, files (optional: where it is waived; all files without)}."""
    path = Path(path) if path is not None else resource_dir("rtl") / WAIVERS
    data = tomllib.loads(Path(path).read_text())
    waivers: dict[str, dict[str, Any]] = {}
    for name, entry in data.get("waive", {}).items():
        if not isinstance(entry, dict) or not str(entry.get("reason", "")).strip():
            raise ValueError(f"{path}: waiver {name!r} needs a one-line reason")
        waivers[name] = entry
    return waivers


def unwaived(findings: Sequence[LintFinding], waivers: dict[str, dict[str, Any]]) -> list[LintFinding]:
    """The findings no waiver covers: every error, and each warning whose class (and file) is not waived."""
    out = []
    for f in findings:
        entry = waivers.get(f.kind)
        if f.severity == "warning" and entry is not None and ("files" not in entry or f.file in entry["files"]):
            continue
        out.append(f)
    return out


def count_by_class(findings: Sequence[LintFinding]) -> Counter[tuple[str, str]]:
    """How many findings of each (severity, class)."""
    return Counter((f.severity, f.kind) for f in findings)


def lint_variants() -> list[tuple[str, Any, Any]]:
    """(name, spec, pipeline) of every RTL form the project emits: both learners, every pipeline form, the suite's shapes."""
    from codesign.fixed import FixedType
    from codesign.fpga.placement import FORWARD, Pipeline
    from codesign.kan.spec import KANSpec, MLPSpec, default_type

    t = FixedType.parse
    one = KANSpec(widths=(1, 1), grid_size=5, spline_order=3)
    deep = KANSpec(widths=(4, 5, 3, 1), grid_size=32, spline_order=2, grid_range=(-2.0, 2.0), lut_bits=5,
                   act_t=t("ap_fixed<14,5,AP_RND,AP_SAT>"), coef_t=t("ap_fixed<18,6,AP_RND_ZERO,AP_SAT_SYM>"),
                   basis_t=t("ap_ufixed<16,1,AP_RND_MIN_INF,AP_SAT>"), dbasis_t=t("ap_fixed<16,2,AP_TRN_ZERO,AP_SAT>"),
                   dphi_t=t("ap_fixed<16,5,AP_RND_INF,AP_SAT_ZERO>"), err_t=t("ap_fixed<12,4,AP_TRN,AP_SAT>"),
                   grad_t=t("ap_fixed<14,4,AP_RND_CONV,AP_WRAP>"), lr_shift=3)
    mixed = KANSpec(widths=(3, 5, 2), grid_size=7, spline_order=4, grid_range=(-1.5, 1.5), lut_bits=5, lr_shift=3,
                    act_t=t("ap_fixed<12,4,AP_RND,AP_SAT>"), coef_t=t("ap_fixed<14,5,AP_TRN,AP_WRAP>"),
                    err_t=t("ap_fixed<10,4,AP_RND_ZERO,AP_SAT_SYM>"), grad_t=t("ap_fixed<12,3,AP_RND_INF,AP_SAT_ZERO>"),
                    basis_t=t("ap_ufixed<16,1,AP_RND_MIN_INF,AP_SAT>"), dbasis_t=t("ap_fixed<14,3,AP_TRN_ZERO,AP_SAT>"),
                    dphi_t=t("ap_fixed<16,5,AP_RND_CONV,AP_WRAP>"), clock_mhz=300)
    folded = KANSpec(widths=(2, 3, 1), grid_size=8, grid_range=(-2.0, 2.0), lut_bits=5,
                     act_t=t("ap_fixed<14,5,AP_RND_INF,AP_SAT_SYM>"), err_t=t("ap_fixed<16,5,AP_RND,AP_SAT>"))
    fused = KANSpec(widths=(2, 3, 1), grid_size=8, act_t=t("ap_fixed<12,4,AP_TRN_ZERO,AP_SAT_ZERO>"),
                    err_t=t("ap_fixed<12,4,AP_RND_CONV,AP_WRAP>"))
    c_type = t("ap_fixed<16,6>")  # as C++ declares it: AP_TRN, AP_WRAP
    trn_wrap = KANSpec(widths=(1, 1), grid_size=5, act_t=c_type, coef_t=c_type, err_t=c_type, grad_t=c_type)
    hardtanh = MLPSpec(widths=(3, 8, 6, 1), activation="hardtanh", act_t=default_type(14, 4), coef_t=default_type(18, 5),
                       lr_shift=4)
    return [
        *((f"kan_default_{p}", KANSpec(), p) for p in ("ii1", "staged", "deep", "auto")),
        ("kan_1x1_g5_ii1", one, "ii1"), ("kan_1x1_g5_deep", one, "deep"),
        ("kan_1x1_g5_forward", one, Pipeline(1, 0x17FE, 0)), ("kan_1x1_g5_rows", one, Pipeline(1, 0x27F8, 0)),
        ("kan_1x1_g5_forward_all", one, Pipeline(1, 0x0FFF | FORWARD, 2)),
        ("kan_deep_mask", deep, 0b01010), ("kan_deep_round", deep, Pipeline(0b01010, 1 << 11, 0)),
        ("kan_2x2x2_ii1", KANSpec(widths=(2, 2, 2), grid_size=4, spline_order=1, lut_bits=3), "ii1"),
        ("kan_mixed_modes_auto", mixed, "auto"), ("kan_mixed_modes_staged", mixed, "staged"),
        ("kan_1x1_g5_trn_wrap_auto", trn_wrap, "auto"),
        ("kan_folded_sat_sym_auto", folded, "auto"), ("kan_folded_sat_sym_round", folded, Pipeline(0b110, 0x235D | 1 << 11, 2)),
        ("kan_fused_sat_zero_auto", fused, "auto"),
        # shared products (rtl/shared_mult.sv): a power of two, and a share that leaves a multiplier's slots unused
        ("kan_default_shared_2", KANSpec(), Pipeline(0b110, 0xA35D, 2, share=2)),
        ("kan_mixed_modes_shared_3", mixed, Pipeline(0b111, 0, 0, share=3)),
        *((f"mlp_default_{p}", MLPSpec(), p) for p in ("ii1", "staged", "deep", "auto")),
        ("mlp_hardtanh_staged", hardtanh, "staged"),
    ]


def emit_variant(spec: Any, pipeline: Any, folder: str | Path, board: str = "xcvu9p") -> Path:
    """Emit the RTL of one variant into ``folder`` (``auto`` resolved for ``board`` first, as a build does)."""
    from codesign.fpga.boards import find_board
    from codesign.fpga.rtl_emit import emit_rtl
    from codesign.fpga.search import choose_pipeline

    if pipeline == "auto":
        pipeline = choose_pipeline(spec, find_board(board), "auto").placement
    emit_rtl(spec, folder, pipeline=pipeline, force=True)
    return Path(folder)
