"""The analytic resource model of each family against Yosys for that family: ECP5's and Nexus's DSP and LUTRAM from their own primitives."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import pytest

from codesign.fixed import FixedType
from codesign.fpga.boards import find_board, load_boards
from codesign.fpga.cost_parts import dsp_tiles
from codesign.fpga.estimate import estimate
from codesign.fpga.fit import fit_check, refuses
from codesign.fpga.placement import parse_pipeline
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec

ROUTED = Path(__file__).resolve().parents[2] / "docs" / "ecp5_routed.json"
NEXUS_ROUTED = Path(__file__).resolve().parents[2] / "docs" / "nexus_routed.json"


def _spec(row: dict) -> KANSpec | MLPSpec:
    kind = KANSpec if row["kind"] == "KANSpec" else MLPSpec
    names = {f.name for f in dataclasses.fields(kind)}
    fields = {}
    for key, value in row["spec"].items():
        if key not in names:
            continue
        if isinstance(value, str) and value.startswith("ap_"):
            value = FixedType.parse(value)
        fields[key] = tuple(value) if isinstance(value, list) else value
    return kind(**fields)


def _rows(path: Path = ROUTED) -> list[tuple[str, dict]]:
    return sorted(json.loads(path.read_text())["results"].items())


@pytest.mark.parametrize("name,row", _rows(), ids=[n for n, _ in _rows()])
def test_ecp5_dsp_and_lutram_match_synth_ecp5(name, row):
    """synth_ecp5's MULT18X18D and TRELLIS_DPR16X4 counts (benchmarks/ecp5_routed.py), from the family's own data."""
    board = find_board("lfe5u-85f")
    est = estimate(_spec(row), board, pipeline=parse_pipeline(row["placement"]))
    assert est["dsp"] == row["synth"]["dsp"]
    assert est["lutram"] == row["synth"]["lutram"]


def test_ecp5_ff_within_the_xcvu9p_tables_bar():
    """synth_ecp5's flip-flops over the routed specs: the median error within the xcvu9p table's 15 % (the worst is not
    bounded here: the deep placements, whose product registers ECP5 moves into its MULT18X18D, differ most)."""
    board = find_board("lfe5u-85f")
    errors = []
    for _, row in _rows():
        est = estimate(_spec(row), board, pipeline=parse_pipeline(row["placement"]))
        errors.append(abs(est["ff"] - row["synth"]["ff"]) / row["synth"]["ff"])
    assert len(errors) >= 15 and statistics.median(errors) <= 0.15


@pytest.mark.parametrize("name,row", _rows(NEXUS_ROUTED), ids=[n for n, _ in _rows(NEXUS_ROUTED)])
def test_nexus_dsp_and_lutram_match_synth_nexus(name, row):
    """synth_nexus's multipliers (MULT9 cores in pairs) and DPR16X4 counts (benchmarks/nexus_routed.py), from the family's data."""
    board = find_board("lifcl-40")
    est = estimate(_spec(row), board, pipeline=parse_pipeline(row["placement"]))
    assert est["dsp"] == row["synth"]["dsp"]
    assert est["lutram"] == row["synth"]["lutram"]


def test_nexus_ff_within_the_xcvu9p_tables_bar():
    """synth_nexus's flip-flops over the routed specs: the median error within the xcvu9p table's 15 %."""
    board = find_board("lifcl-40")
    errors = []
    for _, row in _rows(NEXUS_ROUTED):
        est = estimate(_spec(row), board, pipeline=parse_pipeline(row["placement"]))
        errors.append(abs(est["ff"] - row["synth"]["ff"]) / row["synth"]["ff"])
    assert len(errors) >= 15 and statistics.median(errors) <= 0.15


def test_the_default_kan_fits_lfe5u_85f():
    """116 MULT18X18D (74 %) as Yosys and nextpnr place it, not 212 (136 %): --strict lets synthesis check it."""
    board = find_board("lfe5u-85f")
    est = estimate(KANSpec(clock_mhz=board.clock_mhz), board)
    assert est["dsp"] == 116 and est["utilization_percent"]["dsp"] < 100


def test_ecp5_slices_are_unsigned_and_full_width():
    """ECP5's DSP takes unsigned slices: a 19 x 16 multiply is one MULT18X18D and a row in LUTs; Xilinx keeps a sign bit per slice."""
    assert dsp_tiles(19, 16, find_board("lfe5u-85f").family) == 1
    assert dsp_tiles(37, 18, find_board("lfe5u-85f").family) == 2
    assert dsp_tiles(19, 30, find_board("xcvu9p").family) == 4  # (29 / 26) x (18 / 17) slices


def test_strict_refuses_only_on_what_a_family_was_checked_on():
    """An unchecked family's estimate never refuses before synthesis; a checked one does."""
    over = fit_check({"lut": 180.0}, 50.0, "part", 100.0, "analytic")
    assert over.note
    assert refuses(over, find_board("xcvu9p").family.model_checked)
    assert refuses(over, find_board("xc7z020").family.model_checked)
    assert not refuses(over, ())  # a family whose model nothing checked
    assert not refuses(dataclasses.replace(over, over={}), find_board("xc7z020").family.model_checked)  # its clock is not checked
    assert not refuses(over, find_board("lfe5u-85f").family.model_checked)  # LUT4 and the clock not modelled
    for board in load_boards().values():
        assert set(board.family.model_checked) <= {"lut", "ff", "dsp", "lutram", "clock"}


def test_seven_series_agrees_with_synth_xilinx_family_xc7():
    """Yosys synth_xilinx -family xc7 on xc7z020 (benchmarks/family_resources.py): DSP exact, LUT/FF/LUTRAM as on xcvu9p."""
    reference = json.loads((Path(__file__).with_name("yosys_reference_xc7z020.json")).read_text())
    rows = reference["specs"]
    assert len(rows) >= 6 and reference["target"] == "xc7z020"
    board = find_board("xc7z020")
    errors: dict[str, list[float]] = {"lut": [], "ff": [], "lutram": []}
    for row in rows:
        spec = spec_from_mapping(row["kind"], row["spec"])
        pipeline = parse_pipeline(row["pipeline"]) if isinstance(row["pipeline"], str) else row["pipeline"]
        est = estimate(spec, board, pipeline=pipeline)
        assert est["dsp"] == row["yosys"]["dsp"], row["name"]
        for key in errors:
            if row["yosys"][key]:
                errors[key].append(abs(est[key] - row["yosys"][key]) / row["yosys"][key])
    for key, values in errors.items():
        assert statistics.median(values) <= 0.15, key
    assert {"lut", "ff", "dsp", "lutram"} <= set(board.family.model_checked)
