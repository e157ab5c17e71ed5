"""`codesign build`: the emitted project's C-simulation matches the Python reference bit for bit.

Each build compiles the generated testbench and firmware with g++ (about 10-20 s); the bare
build is shared by the tests that inspect its folder.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from codesign.cli import main
from codesign.fpga.boards import find_board
from codesign.fpga.csim import run_csim
from codesign.kan.spec import KANSpec, MLPSpec

from .conftest import read_report, run_build

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which(os.environ.get("CXX") or "g++") is None, reason="the C-simulation needs g++"),
]


def test_bare_command_is_bit_exact_over_10000_samples(bare_build):
    report = read_report(bare_build)
    assert report["target"] == "xcvu9p" and report["part"] == "xcvu9p-flga2104-2L-e" and report["board"] == "VCU118"
    assert report["spec"] == KANSpec().to_dict()
    assert report["csim"]["bit_exact"] is True and report["csim"]["mismatches"] == 0
    assert report["csim"]["samples"] >= 10_000 and report["stream"]["task_samples"] == 10_000
    assert report["csim"]["state_values"] == KANSpec().num_parameters == report["parameters"]
    # the HLS top follows the RTL's schedule: the pipeline auto chose for 250 MHz
    rtl = report["rtl"]["pipeline"]
    assert rtl["choice"] == "auto" and rtl["clock_mhz"] == 250.0 and rtl["clock_met"] is True
    assert rtl["clock_mhz_estimate"] >= 250.0 and rtl["update_latency_ns"] == report["estimate"]["latency_ns"]
    assert report["ii_target"] == report["ii_expected"] == rtl["ii"] > 1
    assert report["latency_cycles_expected"] == rtl["update_latency_cycles"]
    assert report["clock_mhz"] == 250.0


def test_bare_project_is_complete(bare_build):
    for rel in ("firmware/kan_online.cpp", "firmware/kan_online.h", "firmware/parameters.h",
                "firmware/basis_roms.h", "firmware/initial_coefficients.h", "firmware/codesign/kan_online.h",
                "firmware/codesign/kan_grid.h", "tb/kan_online_test.cpp", "tb_data/stimulus.txt",
                "tb_data/expected_predictions.txt", "tb_data/expected_state.txt", "README.md", "manifest.json"):
        assert (bare_build / rel).is_file(), rel
    top = (bare_build / "firmware/kan_online.cpp").read_text()
    ii = read_report(bare_build)["ii_target"]
    assert f"#pragma HLS PIPELINE II={ii}\n#pragma HLS LATENCY max=" in top and "void kan_online_top(" in top
    assert "ARRAY_PARTITION variable=coef_l0 complete dim=3" in top  # one bank per active coefficient
    params = (bare_build / "firmware/parameters.h").read_text()
    assert "typedef ap_fixed<16,6,AP_RND_CONV,AP_SAT> act_t;" in params
    assert "typedef ap_ufixed<18,1,AP_RND_CONV,AP_SAT> basis_t;" in params
    readme = (bare_build / "README.md").read_text()
    assert "vitis_hls -f build_prj.tcl" in readme


def test_bare_build_emits_the_rtl_and_an_estimate(bare_build):
    import json

    from codesign.fpga.estimate import estimate

    report = json.loads((bare_build / "report.json").read_text())
    rtl = bare_build / "rtl"
    manifest = json.loads((rtl / "rtl_manifest.json").read_text())
    assert report["rtl"]["top"] == manifest["top"] == "kan_online_top"
    assert report["rtl"]["pipeline"] == manifest["pipeline"] and manifest["pipeline"]["ii"] == report["ii_target"]
    for name in manifest["sources"] + ["basis.mem", "dbasis.mem"]:
        assert (rtl / name).is_file(), name
    assert report["estimate"] == estimate(KANSpec(), find_board("xcvu9p"), "auto")
    assert report["estimate"]["ii"] == manifest["pipeline"]["ii"] and report["estimate"]["dsp"] > 0
    assert "cosim" not in report and "synth" not in report  # only with --cosim / --synth


def test_tcl_names_the_boards_part(bare_build):
    tcl = (bare_build / "build_prj.tcl").read_text()
    assert "set_part {xcvu9p-flga2104-2L-e}" in tcl
    assert "create_clock -period 4 " in tcl and "set_top kan_online_top" in tcl
    for step in ("csim_design", "csynth_design", "cosim_design", "export_design -format ip_catalog"):
        assert step in tcl


def test_manifest_describes_the_ports(bare_build):
    data = json.loads((bare_build / "manifest.json").read_text())
    ports = {p["name"]: p for p in data["ports"]}
    assert {"x", "y", "train", "y_hat", "ap_start", "ap_done"} <= set(ports)
    assert ports["x"]["direction"] == "in" and ports["x"]["width"] == 32 and ports["x"]["elements"] == 2
    assert ports["y_hat"]["direction"] == "out" and ports["y_hat"]["valid"] == "y_hat_ap_vld"
    assert ports["x"]["element_type"] == "ap_fixed<16,6,AP_RND_CONV,AP_SAT>"
    assert data["top"] == "kan_online_top" and data["timing"]["ii_target"] == read_report(bare_build)["rtl"]["pipeline"]["ii"]


def test_a_wrong_reference_is_detected(bare_build, tmp_path):
    """Perturb one expected prediction and one expected coefficient: the compiled testbench must fail."""
    data = tmp_path / "tb_data"
    shutil.copytree(bare_build / "tb_data", data)
    lines = (data / "expected_predictions.txt").read_text().splitlines()
    body = [i for i, ln in enumerate(lines) if not ln.startswith("#")]
    lines[body[1234]] = str(int(lines[body[1234]]) + 1)
    (data / "expected_predictions.txt").write_text("\n".join(lines) + "\n")
    binary = bare_build / "csim" / "kan_online_csim"
    result = run_csim(binary, data)
    assert not result.bit_exact and result.prediction_mismatches == 1 and result.state_mismatches == 0
    out = subprocess.run([str(binary), str(data)], capture_output=True, text=True)
    assert out.returncode == 1 and "mismatch: sample 1234 y_hat[0]" in out.stdout and "result=FAIL" in out.stdout

    shutil.copy(bare_build / "tb_data" / "expected_predictions.txt", data / "expected_predictions.txt")
    state = (data / "expected_state.txt").read_text().splitlines()
    name, value = state[50].split()
    state[50] = f"{name} {int(value) - 1}"
    (data / "expected_state.txt").write_text("\n".join(state) + "\n")
    out = subprocess.run([str(binary), str(data)], capture_output=True, text=True)
    assert out.returncode == 1 and f"mismatch: final {name}" in out.stdout


KAN_CONFIGS = {
    # finer grid, quadratic splines, wider hidden layer; 1/h = 8 is a shift
    "g16_k2.toml": ("xcvu13p", "grid_size = 16\nspline_order = 2\nwidths = [2, 6, 1]\n"),
    # one edge, cubic, grid [-2, 2): 1/h = 1.25 is a real multiply
    "g5_k3_single_edge.yaml": ("zcu102", "grid_size: 5\nspline_order: 3\nwidths: [1, 1]\ngrid_range: [-2.0, 2.0]\n"),
    # depth 3, linear splines, narrow 8-bit types that saturate, 1/h = 3
    "deep_narrow.toml": ("pynq-z2", """
[spec]
widths = [2, 4, 3, 1]
grid_size = 6
spline_order = 1
lut_bits = 4
lr_shift = 2
act_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
coef_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
err_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
grad_t = "ap_fixed<8,3,AP_RND_CONV,AP_SAT>"
basis_t = "ap_ufixed<10,1,AP_RND_CONV,AP_SAT>"
dbasis_t = "ap_fixed<10,2,AP_RND_CONV,AP_SAT>"
dphi_t = "ap_fixed<10,4,AP_RND_CONV,AP_SAT>"
"""),
    # two outputs, quartic splines, every quantization and overflow family, wrapping coefficients
    "mixed_modes.toml": ("xcu250", """
widths = [3, 5, 2]
grid_size = 7
spline_order = 4
grid_range = [-1.5, 1.5]
lut_bits = 5
lr_shift = 3
act_t = "ap_fixed<12,4,AP_RND,AP_SAT>"
coef_t = "ap_fixed<14,5,AP_TRN,AP_WRAP>"
err_t = "ap_fixed<10,4,AP_RND_ZERO,AP_SAT_SYM>"
grad_t = "ap_fixed<12,3,AP_RND_INF,AP_SAT_ZERO>"
basis_t = "ap_ufixed<16,1,AP_RND_MIN_INF,AP_SAT>"
dbasis_t = "ap_fixed<14,3,AP_TRN_ZERO,AP_SAT>"
dphi_t = "ap_fixed<16,5,AP_RND_CONV,AP_WRAP>"
clock_mhz = 300
"""),
}


def _build_config(capsys, tmp_path: Path, learner: str, target: str, name: str, text: str) -> tuple[Path, dict]:
    config = tmp_path / name
    config.write_text(text)
    out = tmp_path / "out"
    code, stdout, stderr = run_build(capsys, learner, "--target", target, "--config", str(config), "--out", str(out))
    assert code == 0, stderr
    assert "bit-exact" in stdout and re.search(r"\[4/6\] (compiling|reusing) the C-simulation", stdout)
    return out, read_report(out)


@pytest.mark.parametrize("name", sorted(KAN_CONFIGS))
def test_other_kan_specs_are_bit_exact(capsys, tmp_path, name):
    target, text = KAN_CONFIGS[name]
    out, report = _build_config(capsys, tmp_path, "kan_online", target, name, text)
    assert report["csim"]["bit_exact"] is True and report["csim"]["samples"] >= 10_000
    from codesign.config import load_spec

    expected = load_spec("kan_online", tmp_path / name)
    spec = report["spec"]
    for key in ("widths", "grid_size", "spline_order", "grid_range", "act_t", "coef_t", "lr_shift"):
        assert spec[key] == expected.to_dict()[key], key
    part = report["part"]
    assert f"set_part {{{part}}}" in (out / "build_prj.tcl").read_text()
    if name == "deep_narrow.toml":
        act = expected.act_t
        pred = np.loadtxt(out / "tb_data" / "expected_predictions.txt", dtype=np.int64)
        assert ((pred == act.max_raw) | (pred == act.min_raw)).any()  # saturation was exercised


MLP_CONFIGS = {
    "default.toml": ("xcvu9p", ""),
    # deeper, hardtanh on an act_t that cannot hold 1.0, wrapping errors, learning rate 1
    "hardtanh_narrow.yaml": ("xczu7ev", """
widths: [2, 5, 3, 2]
activation: hardtanh
act_t: "ap_fixed<8,1,AP_RND_CONV,AP_SAT>"
coef_t: "ap_fixed<12,3,AP_RND,AP_SAT>"
err_t: "ap_fixed<9,2,AP_TRN,AP_WRAP>"
lr_shift: 0
"""),
}


@pytest.mark.parametrize("name", sorted(MLP_CONFIGS))
def test_mlp_baseline_is_bit_exact(capsys, tmp_path, name):
    target, text = MLP_CONFIGS[name]
    out, report = _build_config(capsys, tmp_path, "mlp_online", target, name, text)
    assert report["learner"] == "mlp_online" and report["csim"]["bit_exact"] is True
    assert report["csim"]["samples"] >= 10_000
    if not text:
        assert report["spec"] == MLPSpec(clock_mhz=report["clock_mhz"]).to_dict()
    assert (out / "firmware" / "mlp_online.cpp").is_file() and (out / "firmware" / "initial_weights.h").is_file()
    assert f"set_part {{{report['part']}}}" in (out / "build_prj.tcl").read_text()


def test_the_readmes_second_build_command_works_on_the_folder_the_first_wrote(bare_build, tmp_path, monkeypatch, capsys):
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    commands = re.findall(r"`(codesign build kan_online --target xcvu9p[^`]*)`", readme)
    assert commands[0] == "codesign build kan_online --target xcvu9p" and "--force" in commands[1].split()
    shutil.copytree(bare_build.parent.parent, tmp_path / "cwd")  # the first command's result, as a user has it
    monkeypatch.chdir(tmp_path / "cwd")
    assert main(["build", "kan_online", "--target", "xcvu9p", "--samples", "20"]) == 2
    assert "--force" in capsys.readouterr().err
    (tmp_path / "cwd" / "codesign_out" / "kan_online_xcvu9p" / "my_notes.txt").write_text("mine")
    flags = [f for f in commands[1].split()[2:] if f not in ("--cosim", "--synth")]  # those two are tested elsewhere
    assert main(["build", *flags, "--samples", "20"]) == 0
    out = tmp_path / "cwd" / "codesign_out" / "kan_online_xcvu9p"
    assert (out / "my_notes.txt").read_text() == "mine" and read_report(out)["csim"]["samples"] < 1000


def _rom_words(header: str, name: str) -> np.ndarray:
    """The integer entries of one ROM initialiser in basis_roms.h, in order."""
    import re

    body = header.split(f" {name}[K1][LUT_SIZE] = ", 1)[1].split(";", 1)[0]
    assert "." not in body  # integer initialisers, no double literals
    return np.array([int(v) for v in re.findall(r"(\d+)u", body)], dtype=np.int64)


def test_the_largest_lut_bits_builds_bit_exact_in_seconds(capsys, tmp_path):
    # 2^12-entry ROMs used to be 675 KB of double literals that g++ did not compile in 15 minutes
    lut_bits = 12
    from codesign.kan.fixed_learner import basis_roms

    config = tmp_path / "c.toml"
    config.write_text(f"lut_bits = {lut_bits}\n")
    out = tmp_path / "out"
    code, stdout, stderr = run_build(capsys, "kan_online", "--config", str(config), "--out", str(out), "--samples", "200")
    assert code == 0, stderr
    report = read_report(out)
    assert report["spec"]["lut_bits"] == lut_bits and report["csim"]["bit_exact"] is True
    assert report["csim"]["mismatches"] == 0
    spec = KANSpec(lut_bits=lut_bits)
    header = (out / "firmware" / "basis_roms.h").read_text()
    for name, rom, t in zip(("basis_rom", "dbasis_rom"), basis_roms(spec), (spec.basis_t, spec.dbasis_t)):
        assert (_rom_words(header, name) == (rom.reshape(-1) & ((1 << t.width) - 1))).all(), name


def test_a_clock_no_placement_meets_is_one_warning_line(capsys, tmp_path):
    """clock_mhz = 2000: auto builds the fastest placement, says so in one line, and the build succeeds."""
    config = tmp_path / "fast.toml"
    config.write_text("widths = [1, 1]\ngrid_size = 4\nspline_order = 1\nlut_bits = 3\nclock_mhz = 2000\n")
    code, stdout, stderr = run_build(capsys, "kan_online", "--config", str(config), "--samples", "50", "--out", str(tmp_path / "o"))
    assert code == 0, stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("codesign: warning:")]
    assert len(warnings) == 1 and "clock target 2000 MHz not met" in warnings[0] and "best estimate" in warnings[0]
    assert "target NOT met" in stdout
    pipeline = read_report(tmp_path / "o")["rtl"]["pipeline"]
    assert pipeline["clock_met"] is False and pipeline["clock_note"] in warnings[0]
    assert pipeline["clock_mhz"] == 2000 and pipeline["clock_mhz_estimate"] < 2000


def test_a_build_searches_for_its_pipeline_once(tmp_path, monkeypatch):
    # auto is resolved once at the command line's edge; the estimate, the HLS schedule, the RTL and the report
    # receive that choice (the search is counted where it runs, then carried on unchanged)
    import codesign.fpga.search as search_module
    from codesign.fpga.build import build

    searches = []
    search = search_module.candidate_pipelines

    def counted(*args, **kwargs):
        searches.append(args[0])
        return search(*args, **kwargs)

    monkeypatch.setattr(search_module, "candidate_pipelines", counted)
    report = build("kan_online", samples=5, out=tmp_path / "b", stream=io.StringIO())
    assert len(searches) == 1
    assert report["estimate"]["pipeline"] == "auto" and report["rtl"]["pipeline"]["choice"] == "auto"
    assert report["estimate"]["pipeline_placement"]["text"] == report["rtl"]["pipeline"]["text"]


# the modules a build runs through, from the plan to the report
BUILD_PATH = ("plan", "build", "hls_project", "rtl_emit", "stimulus", "csim", "cosim", "synth", "pnr", "report", "manifest")


def test_the_build_path_has_one_call_site_of_the_pipeline_search():
    import ast

    import codesign.fpga

    folder = Path(codesign.fpga.__file__).parent
    sites, rechoices = [], []
    for name in BUILD_PATH:
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", getattr(node.func, "attr", None))
            if called in ("choose_pipeline", "candidate_pipelines"):
                sites.append(f"{name}.py:{node.lineno}")
            if called == "rechoose_pipeline":  # --pnr's explicit second choice, after a routed clock missed
                rechoices.append(f"{name}.py:{node.lineno}")
            # the build hands the estimate a choice made before (the plan's, or a re-choice), never a request
            if name == "build" and called == "estimate":
                given = {k.arg: ast.unparse(k.value) for k in node.keywords}
                assert given.get("pipeline") in ("plan.choice", "choice"), ast.unparse(node)
    assert len(sites) == 1 and sites[0].startswith("plan.py:"), sites
    assert all(r.startswith("build.py:") for r in rechoices) and len(rechoices) <= 1, rechoices
