"""`codesign build --cosim`, `codesign sim DIR` and the manifest-driven bench on one build folder."""

from __future__ import annotations

import io
import json

import pytest

from codesign.cli import main
from codesign.fpga.build import rerun_cosim
from codesign.fpga.cosim import COSIM_FIELDS, cosim_hls_rtl, format_cosim
from codesign.fpga.rtl_emit import RTL_MANIFEST
from codesign.processes import ToolError

pytest.importorskip("cocotb")


@pytest.mark.slow
def test_build_cosim_fills_the_report_and_sim_reruns_it(tmp_path, capsys):
    from codesign.fpga.build import build

    out = tmp_path / "build"
    report = build("kan_online", "xcvu9p", out=out, samples=1000, stream=io.StringIO(), cosim=True)
    assert report["csim"]["bit_exact"]
    cosim = report["cosim"]
    expected = report["rtl"]["pipeline"]  # the default: auto, registers for 250 MHz
    assert expected["choice"] == "auto" and expected["ii"] > 1
    assert {k: cosim[k] for k in COSIM_FIELDS} == {
        "samples": report["stream"]["samples"], "bit_exact": True,
        "latency_cycles": expected["prediction_latency_cycles"],
        "update_latency_cycles": expected["update_latency_cycles"], "ii": expected["ii"],
    }
    assert cosim["resets"] > 0 and cosim["state_values"] > 0
    assert json.loads((out / "report.json").read_text())["cosim"] == cosim
    assert "bit-exact" in format_cosim(cosim)

    # `codesign sim DIR` reruns the bench (the compiled model is reused) and rewrites the section
    saved = json.loads((out / "report.json").read_text())
    saved["cosim"] = {"stale": True}
    (out / "report.json").write_text(json.dumps(saved))
    assert main(["sim", str(out)]) == 0
    assert "bit-exact" in capsys.readouterr().out
    assert json.loads((out / "report.json").read_text())["cosim"]["bit_exact"] is True

    # a bench stopped by its wall-clock limit is a one-line error naming the log, and the report keeps its section
    with pytest.raises(ToolError, match=r"^Verilator simulation: wall-clock limit of 0.001 s reached") as info:
        rerun_cosim(out, wall_seconds=0.001, stream=io.StringIO())
    assert "\n" not in str(info.value) and info.value.log.is_file() and str(info.value.log) in str(info.value)
    assert json.loads((out / "report.json").read_text())["cosim"]["bit_exact"] is True

    # the ports of the RTL are the HLS top's, so the bench can drive Vitis-made RTL from manifest.json alone
    rtl = json.loads((out / "rtl" / RTL_MANIFEST).read_text())
    hls = json.loads((out / "manifest.json").read_text())
    assert rtl["top"] == hls["top"]
    assert [(p["name"], p["direction"], p["width"]) for p in rtl["ports"]] == [
        (p["name"], p["direction"], p["width"]) for p in hls["ports"]
    ]
    sources = [out / "rtl" / s for s in rtl["sources"]]
    hls_run = cosim_hls_rtl(
        out, sources, work_dir=out / "rtl" / "cosim", parameters={"MEM_DIR": f'"{(out / "rtl").resolve()}"'},
        includes=[out / "rtl"],
    )
    assert hls_run["passed"], hls_run["failures"]
    assert hls_run["bit_exact"] and not hls_run["state_checked"]
    assert hls_run["predictions_checked"] == report["stream"]["samples"]


def test_sim_refuses_a_folder_that_is_not_a_build(tmp_path, capsys):
    assert main(["sim", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("codesign: error:") and "not a codesign build folder" in err and len(err.splitlines()) == 1
    (tmp_path / "report.json").write_text("{}")
    assert main(["sim", str(tmp_path)]) == 2
    assert "rebuild with codesign build" in capsys.readouterr().err


def test_build_refuses_a_bad_pipeline(tmp_path, capsys):
    assert main(["build", "kan_online", "--out", str(tmp_path / "b"), "--pipeline", "fast"]) == 2
    err = capsys.readouterr().err
    assert "--pipeline='fast'" in err and len(err.strip().splitlines()) == 1
    assert main(["build", "kan_online", "--out", str(tmp_path / "b"), "--pipeline", "4096"]) == 2
    assert "register mask" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()
