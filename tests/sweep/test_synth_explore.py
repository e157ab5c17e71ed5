"""explore --synth through the sweep runner: one tiny point synthesized by Yosys, its area and time from synthesis."""

from __future__ import annotations

import json

import pytest

from codesign.fpga.explore import POINTS_FILE, explore


def test_explore_synth_takes_area_and_time_from_yosys(tmp_path):
    out = tmp_path / "ex"
    result = explore(learner="kan_online", grid=(4,), bits=(8,), hidden=((1,),), samples=200, workers=1, synth=True,
                     out=out)
    (point,) = result["points"]
    synth = point["synth"]
    assert all(isinstance(synth[k], int) and synth[k] >= 0 for k in ("lut", "lutram", "ff", "dsp")) and synth["lut"] > 0
    assert point["ns_per_sample"] == synth["ii_ns"]
    assert point["area_percent"] == max(synth["utilization_percent"][k] for k in ("lut", "ff", "dsp"))
    assert json.loads((out / POINTS_FILE).read_text())["synth"] == synth
    assert "Yosys synthesis" in (out / "pareto.md").read_text()
    # a run without --synth does not resume this one: other settings
    with pytest.raises(FileExistsError, match="other settings"):
        explore(learner="kan_online", grid=(4,), bits=(8,), hidden=((1,),), samples=200, workers=1, out=out)
