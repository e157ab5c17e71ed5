"""The analytic estimator: exact cycles, agreement with recorded Yosys results, sane trends, one-line errors."""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from pathlib import Path

import pytest

from codesign.fixed import FixedType
from codesign.fpga.boards import find_board
from codesign.fpga.cost import features
from codesign.fpga.cost_parts import cast_is_wiring, dsp_tiles, lutram_luts
from codesign.fpga.estimate import ESTIMATE_FIELDS, cycles, estimate
from codesign.fpga.placement import parse_pipeline
from codesign.fpga.rtl_emit import emit_rtl
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec, with_precision

REFERENCE = Path(__file__).with_name("yosys_reference.json")
VU9P = find_board("xcvu9p")
ULTRASCALE_PLUS, SEVEN_SERIES = VU9P.family, find_board("xc7z020").family


def test_every_field_and_well_under_a_second():
    specs = [KANSpec(), KANSpec(widths=(4, 8, 8, 1), grid_size=64), MLPSpec(), MLPSpec(widths=(4, 32, 32, 1))]
    for spec in specs:
        estimate(spec, VU9P)  # warm
    started = time.perf_counter()
    for spec in specs:
        for pipeline in ("ii1", "staged"):
            result = estimate(spec, VU9P, pipeline=pipeline)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"8 estimates took {elapsed:.2f} s"
    for key in ESTIMATE_FIELDS:
        assert key in result
    assert result["bram"] == 0 and result["latency_ns"] > 0


@pytest.mark.parametrize(
    "spec, masks",
    [
        (KANSpec(), range(8)),
        (KANSpec(widths=(1, 2, 2, 1), grid_size=5), (0, 1, 5, 12, 31)),
        (MLPSpec(widths=(2, 4, 1)), range(8)),
        (MLPSpec(widths=(3, 4, 4, 2)), (0, 2, 9, 31)),
        (KANSpec(widths=(2, 1)), (0, 1)),
    ],
)
def test_cycles_equal_the_rtl_manifest(tmp_path, spec, masks):
    for mask in masks:
        manifest = emit_rtl(spec, tmp_path / f"m{mask}", pipeline=mask)
        expected = manifest["pipeline"]
        got = cycles(spec, mask)
        assert got == {
            "latency_cycles": expected["prediction_latency_cycles"],
            "update_latency_cycles": expected["update_latency_cycles"],
            "ii": expected["ii"],
        }, f"mask {mask}"
    assert cycles(spec, "staged")["ii"] == 2 * len(spec.layer_shapes)
    assert cycles(spec, "ii1") == {"latency_cycles": 1, "update_latency_cycles": 1, "ii": 1}


def _reference() -> list[dict]:
    return json.loads(REFERENCE.read_text())["specs"]


def test_agrees_with_recorded_yosys_results():
    """The recorded calibration sweep (benchmarks/estimator_calibration.py --save-reference): DSP exact, cycles exact, LUT/FF close."""
    rows = _reference()
    assert len(rows) >= 20
    errors: dict[str, list[float]] = {"lut": [], "ff": [], "lutram": []}
    for row in rows:
        spec = spec_from_mapping(row["kind"], row["spec"])
        pipeline = parse_pipeline(row["pipeline"]) if isinstance(row["pipeline"], str) else row["pipeline"]
        est = estimate(spec, find_board(row["target"]), pipeline=pipeline)
        assert est["dsp"] == row["yosys"]["dsp"], row["name"]
        assert (est["latency_cycles"], est["update_latency_cycles"], est["ii"]) == tuple(row["manifest_cycles"]), row["name"]
        for key in errors:
            if row["yosys"][key]:
                errors[key].append(abs(est[key] - row["yosys"][key]) / row["yosys"][key])
    assert statistics.median(errors["lut"]) <= 0.15
    assert statistics.median(errors["ff"]) <= 0.15
    assert statistics.median(errors["lutram"]) <= 0.15


def test_trends():
    base = KANSpec()
    small, big = estimate(base, VU9P), estimate(dataclasses.replace(base, widths=(2, 8, 1)), VU9P)
    for key in ("lut", "lutram", "dsp"):
        assert big[key] > small[key]
    wide = estimate(with_precision(base, 20, 6), VU9P)
    assert wide["lut"] > small["lut"] and wide["dsp"] > small["dsp"]  # 20-bit coefficients need two DSPs per product
    # G only deepens the banks: logic nearly flat, LUTRAM doubles once a bank is deeper than 32 words
    g8, g256 = estimate(base, VU9P), estimate(dataclasses.replace(base, grid_size=256), VU9P)
    assert g256["dsp"] == g8["dsp"] and abs(g256["lut"] - g8["lut"]) < 0.1 * g8["lut"]
    assert g256["lutram"] >= 2 * g8["lutram"]
    staged = estimate(base, VU9P, pipeline="staged")
    assert staged["ff"] > 20 * small["ff"] and staged["clock_mhz_estimate"] > small["clock_mhz_estimate"]
    assert staged["ii"] == 4 and staged["latency_ns"] > staged["period_ns_estimate"]
    mlp_small, mlp_big = estimate(MLPSpec(widths=(2, 8, 1)), VU9P), estimate(MLPSpec(widths=(2, 32, 1)), VU9P)
    assert mlp_big["ff"] > 3 * mlp_small["ff"] and mlp_big["dsp"] == 4 * mlp_small["dsp"]
    slower = estimate(base, find_board("xc7z020"))
    assert slower["clock_mhz_estimate"] < small["clock_mhz_estimate"]


def test_lutram_primitives():
    assert lutram_luts(16, 3, False, ULTRASCALE_PLUS) == 8 and lutram_luts(16, 3, True, ULTRASCALE_PLUS) == 16
    assert lutram_luts(64, 17, True, ULTRASCALE_PLUS) == 40
    assert lutram_luts(16, 40, False, ULTRASCALE_PLUS) == 16 and lutram_luts(16, 100, False, ULTRASCALE_PLUS) == 32
    assert lutram_luts(16, 3, False, SEVEN_SERIES) == 8


def test_dsp_tiles():
    assert dsp_tiles(19, 16, ULTRASCALE_PLUS) == 1 and dsp_tiles(27, 18, ULTRASCALE_PLUS) == 1
    assert dsp_tiles(19, 20, ULTRASCALE_PLUS) == 2 and dsp_tiles(26, 18, SEVEN_SERIES) == 2
    assert dsp_tiles(40, 30, ULTRASCALE_PLUS) == 4


def test_component_features_are_named():
    f = features(KANSpec(), "ii1", ULTRASCALE_PLUS)
    assert set(f) == {"lut", "lutram", "ff", "dsp", "bram"} and f["bram"]["banks"] == 0  # 3-word banks: LUTRAM
    assert f["lutram"]["banks"] == 384  # 8 banks of 4 x 16 bits (4 RAM32M16 each) + 16 banks of 16 bits (1 each)
    assert features(KANSpec(), "staged", ULTRASCALE_PLUS)["lutram"]["banks"] == 576  # dual port: 14 bits per RAM32M16


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: estimate(KANSpec(), VU9P, pipeline="fast"), "pipeline='fast'"),
        (lambda: estimate(KANSpec(), VU9P, pipeline=8), "pipeline=8"),
        (lambda: estimate(KANSpec(), VU9P, pipeline=True), "pipeline=True"),
        (lambda: estimate(KANSpec(), find_board("nope")), "unknown target 'nope'"),
        (lambda: estimate(KANSpec(), "xcvu9p"), "board='xcvu9p': expected a Board"),
        (lambda: estimate({"widths": (2, 1)}, VU9P), "expected a KANSpec or MLPSpec"),
        (lambda: estimate(KANSpec(), 7), "board=7"),
    ],
)
def test_bad_input_is_a_one_line_error(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_cli_estimate(capsys, tmp_path):
    from codesign.cli import main

    assert main(["estimate", "kan_online", "--target", "vcu118", "--pipeline", "staged"]) == 0
    out = capsys.readouterr().out
    assert "ESTIMATE" in out and "II 4 (exact)" in out
    assert main(["estimate", "mlp_online", "--json", "--pipeline", "ii1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ii"] == 1 and data["dsp"] > 0
    # auto (the default) on a spec no placement meets: the fastest one, a one-line note, exit 0
    assert main(["estimate", "mlp_online", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pipeline"] == "auto" and data["clock_met"] is False and "250 MHz not met" in data["clock_note"]
    config = tmp_path / "c.toml"
    config.write_text("grid_size = 8193\n")
    for argv, message in (
        (["estimate", "kan_online", "--pipeline", "x"], "--pipeline='x'"),
        (["estimate", "kan_online", "--target", "nope"], "nope"),
        (["estimate", "kan_online", "--config", str(config)], "grid_size"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("codesign: error:") and message in err and "\n" not in err


def test_auto_reads_the_banks_from_the_registered_grid_cell():
    # The grid register holds the cell and the ROM rows (rtl/kan_decode.sv), so the bank address (a carry chain
    # from G = 64 on: 5 bits) starts the next stage from a register and the bank read fits beside the rows
    # register at G = 8 and G = 64 alike; the scale register gives way to it (Yosys: docs/rtl_results.md)
    for g in (8, 64):
        names = estimate(KANSpec(grid_size=g), VU9P, "auto")["pipeline_placement"]["cut_names"]
        assert {"grid", "rows", "read"} <= set(names) and "scale" not in names, (g, names)


def test_a_cast_that_is_wiring_costs_nothing():
    # AP_TRN + AP_WRAP (C++'s defaults) casts with wires in rtl/fixed_cast.sv: no cast LUTs, no cast delay, so
    # auto needs fewer registers at the same clock than with the learner's rounding and saturating defaults
    wired = {n: FixedType.parse("ap_fixed<16,6>") for n in ("act_t", "coef_t", "err_t", "grad_t")}
    wired["dphi_t"] = FixedType.parse("ap_fixed<18,6>")
    for base in (KANSpec(widths=(1, 1), grid_size=5), KANSpec()):
        plain, cheap = estimate(base, VU9P, "auto"), estimate(dataclasses.replace(base, **wired), VU9P, "auto")
        assert cheap["clock_met"] and plain["clock_met"]
        assert cheap["update_latency_cycles"] < plain["update_latency_cycles"], (plain, cheap)
        assert features(dataclasses.replace(base, **wired), "ii1", ULTRASCALE_PLUS)["lut"]["cast_out"] == 0
        assert features(base, "ii1", ULTRASCALE_PLUS)["lut"]["cast_out"] > 0
    assert cast_is_wiring(FixedType.parse("ap_fixed<16,6>"))
    assert not cast_is_wiring(FixedType.parse("ap_fixed<16,6,AP_TRN,AP_SAT>"))
    assert not cast_is_wiring(FixedType.parse("ap_fixed<16,6,AP_RND,AP_WRAP>"))
