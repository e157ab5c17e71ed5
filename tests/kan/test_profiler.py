"""The fixed-point profiler names the first overflow, and its proposed types remove every overflow."""

from __future__ import annotations

import json

import numpy as np
import pytest

from codesign.cli import main
from codesign.kan.profiler import profile_stream, propose_types, signal_type
from codesign.kan.run import fit_widths, make_learner
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.tasks import make_stream


def overflows_of(spec, stream, n: int, name: str) -> int:
    """Overflows of one named signal over the first n samples, from a fresh instrumented run."""
    learner = make_learner(spec)
    stats = learner.new_stats()
    act = spec.act_t
    learner.run_raw(act.quantize(stream.x[:n]), act.quantize(stream.y[:n]), True, stats=stats)
    return int(stats[learner.signal_names().index(name), 2])


@pytest.mark.parametrize(
    "spec",
    [
        # layer outputs (the forward accumulator's cast) too narrow for the hidden values
        KANSpec(grid_range=(-0.5, 0.5), act_t="ap_fixed<10,1,AP_RND_CONV,AP_SAT>"),
        # the backward derivative type too narrow
        KANSpec(dphi_t="ap_fixed<10,0,AP_RND_CONV,AP_SAT>"),
        MLPSpec(widths=(2, 16, 1), act_t="ap_fixed<10,1,AP_RND_CONV,AP_SAT>"),
    ],
)
def test_names_the_first_overflow_and_proposes_types_without_any(spec):
    stream = make_stream("function_tracking", n_samples=6000, seed=0)
    spec = fit_widths(spec, stream.n_inputs, stream.n_outputs)
    profile = profile_stream(spec, stream)
    first = profile.first_saturation()
    assert first is not None and profile.saturations > 0
    # the named signal really is clean before that sample and overflows at it
    if first.name.startswith("layer") or first.name.startswith("err"):
        assert overflows_of(spec, stream, first.first_saturation, first.name) == 0
        assert overflows_of(spec, stream, first.first_saturation + 1, first.name) >= 1
    proposed_spec, proposed, proposals = propose_types(spec, stream)
    assert proposed.saturations == 0
    assert profile_stream(proposed_spec, stream).saturations == 0
    narrowed = getattr(proposed_spec, signal_type(first.name))
    assert narrowed.width > getattr(spec, signal_type(first.name)).width
    # one integer bit less than a proposal overflows for at least one type (the proposal is tight)
    assert any(p.narrower_saturations for p in proposals)


def test_profiling_does_not_change_the_arithmetic():
    stream = make_stream("qubit_readout", n_samples=3000, seed=2)
    spec = fit_widths(KANSpec(), stream.n_inputs, stream.n_outputs)
    plain = make_learner(spec).run(stream.x, stream.y)
    learner = make_learner(spec)
    stats = learner.new_stats()
    act = spec.act_t
    traced = act.to_float(learner.run_raw(act.quantize(stream.x), act.quantize(stream.y), True, stats=stats))
    assert np.array_equal(plain, traced)
    counts = stats[:, 4]
    assert counts.min() > 0  # every signal was seen


def test_profile_command_writes_table_json_and_png(tmp_path, capsys):
    out = tmp_path / "prof"
    assert main(["profile", "mlp_online", "--samples", "2000", "--out", str(out)]) == 0
    assert "proposed types" in capsys.readouterr().out
    data = json.loads((out / "profile.json").read_text())
    assert data["proposed"]["saturations"] == 0
    assert (out / "profile.png").stat().st_size > 10_000
    assert main(["profile", "mlp_online", "--samples", "2000", "--out", str(out)]) == 2  # no silent overwrite
    assert "--force" in capsys.readouterr().err
