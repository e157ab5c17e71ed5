"""Register placements for every width the schema allows; hints that never suggest the placement in use."""

from __future__ import annotations

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.build import _check_synth_clock
from codesign.fpga.pipeline import resolve_pipeline
from codesign.fpga.placement import check_placement
from codesign.fpga.search import candidate_pipelines, choose_pipeline, deeper_hint
from codesign.kan.spec import KANSpec


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
    pipeline = {"clock_mhz": 100.0, "clock_mhz_estimate": 140.0, "clock_met": True, "text": "deep"}
    _check_synth_clock(pipeline, {"clock_mhz_estimate": 86.0}, deeper_hint(spec, resolve_pipeline(spec, "deep")))
    assert pipeline["clock_met"] is False and "--pipeline deep" not in pipeline["clock_note"]
