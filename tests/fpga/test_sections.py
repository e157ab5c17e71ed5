"""The report sections are frozen values: a later step replaces one, paths move with the folder, absent fields stay out."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

import pytest

from codesign.fpga.sections import CosimSection, PnrAttempt, StreamSection
from codesign.outputs import relocate_paths


class _Pair(NamedTuple):
    a: str
    b: str


def test_a_section_cannot_be_changed_in_place():
    stream = StreamSection(task="t", seed=0, task_samples=10, corner_samples=2, samples=12)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stream.samples = 3  # type: ignore[misc]
    assert "data" not in stream.to_dict() and StreamSection(**{**stream.to_dict(), "data": {"path": "x"}}).to_dict()["data"]


def test_paths_inside_sections_move_with_the_folder(tmp_path):
    partial, final = tmp_path / ".partial", tmp_path / "out"
    attempt = PnrAttempt(attempt=1, choice="auto", placement="0x0:0x0:0", clock_mhz_analytic=1.0, clock_mhz_synth_estimate=1.0,
                         fmax_mhz=1.0, meets_target=False, critical_path={"start": str(partial / "cell")},
                         log=str(partial / "rtl" / "pnr" / "nextpnr.log"))
    moved = relocate_paths((attempt, _Pair(str(partial), "x")), partial, final)
    assert moved[0].log == str(final / "rtl" / "pnr" / "nextpnr.log")
    assert moved[0].critical_path["start"] == str(final / "cell")
    assert moved[1] == _Pair(str(partial), "x")  # a NamedTuple is a value, not a list of paths
    assert Path(attempt.log).is_relative_to(partial)  # the original is unchanged


def test_cosim_section_keeps_the_measured_fields_and_leaves_out_what_the_bench_did_not_give():
    section = CosimSection.of({"samples": 5, "bit_exact": True, "ii": 7, "passed": True, "unknown": 1})
    data = section.to_dict()
    assert list(data)[:5] == ["samples", "bit_exact", "latency_cycles", "update_latency_cycles", "ii"]
    assert data["latency_cycles"] is None and data["passed"] is True
    assert "log" not in data and "unknown" not in data
    assert section.cycles == {"ii": 7}
