"""Every RTL form codesign emits elaborates under slang (a strict IEEE 1800-2017 front end) with no error and no unwaived warning."""

from __future__ import annotations

import pytest

from codesign.fpga.lint import LintFinding, emit_variant, lint_folder, lint_rtl, lint_variants, load_waivers, unwaived

pytest.importorskip("pyslang")

VARIANTS = {name: (spec, pipe) for name, spec, pipe in lint_variants()}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_has_no_error_and_no_unwaived_warning(name, tmp_path):
    spec, pipe = VARIANTS[name]
    folder = emit_variant(spec, pipe, tmp_path / name)
    results = lint_folder(folder)
    assert len(results) == 2  # the bare top and the AXI top
    waivers = load_waivers()
    for top, findings in results.items():
        errors = [str(f) for f in findings if f.severity == "error"]
        assert errors == [], f"{top}: {errors}"
        left = [str(f) for f in unwaived(findings, waivers)]
        assert left == [], f"{top}: {left}"


def test_the_check_sees_an_error_and_an_unwaived_class(tmp_path):
    # a signal used before its declaration: the defect slang found in kan_layer.sv
    (tmp_path / "t.sv").write_text(
        "module t(input logic clk, output logic q);\n  assign q = late;\n  logic late;\n  assign late = clk;\nendmodule\n")
    findings = lint_rtl(tmp_path, "t", ["t.sv"])
    assert any(f.severity == "error" and f.kind == "UsedBeforeDeclared" and f.line == 2 for f in findings)
    unknown = LintFinding("warning", "no-such-class", "t.sv", 1, "m")
    limited = LintFinding("warning", "unused-port", "kan_layer.sv", 1, "m")  # waived only in learner_axi.sv
    waived = LintFinding("warning", "unused-port", "learner_axi.sv", 1, "m")
    assert unwaived([unknown, limited, waived], load_waivers()) == [unknown, limited]


def test_every_waiver_has_a_reason_and_is_used(tmp_path):
    waivers = load_waivers()
    assert all(str(w["reason"]).strip() and "\n" not in str(w["reason"]) for w in waivers.values())
    seen: set[str] = set()
    for name in ("kan_default_auto", "kan_1x1_g5_forward", "kan_mixed_modes_auto", "mlp_default_ii1"):
        spec, pipe = VARIANTS[name]
        for findings in lint_folder(emit_variant(spec, pipe, tmp_path / name)).values():
            seen |= {f.kind for f in findings if f.severity == "warning"}
    assert set(waivers) <= seen, f"waivers no finding needs: {sorted(set(waivers) - seen)}"


def test_a_waiver_without_reason_is_refused(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text('[waive.sign-compare]\nreason = ""\n')
    with pytest.raises(ValueError, match="reason"):
        load_waivers(path)
