"""The learner-kind registry: every spec class has one kind, and the FPGA backend has an entry for each."""

from __future__ import annotations

import dataclasses

import pytest

from codesign.config import LEARNERS
from codesign.fpga.kinds import fpga_kind
from codesign.kan import kinds
from codesign.kan.kinds import KINDS, LearnerKind, kind_named, kind_of, kind_of_learner, register_kind, spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec


def test_each_spec_class_has_exactly_its_kind():
    assert [k.spec_class for k in KINDS.values()] == [KANSpec, MLPSpec]
    assert type(spec_from_mapping("mlp", {"widths": (2, 1)})) is MLPSpec
    assert kind_of(KANSpec()).name == "kan" and kind_of(MLPSpec()).name == "mlp"
    assert kind_of_learner("kan_online") is kind_named("kan") and kind_of_learner("rnn_online") is None
    assert LEARNERS == {"kan_online": "kan", "mlp_online": "mlp"}


def test_a_non_spec_is_refused_in_one_line():
    with pytest.raises(ValueError, match="expected a KANSpec or MLPSpec, got dict"):
        kind_of({"widths": (2, 1)})
    with pytest.raises(ValueError, match="unknown learner kind 'rnn'"):
        kind_named("rnn")


def test_the_reference_and_its_initial_state_load():
    spec = MLPSpec(widths=(2, 3, 1))
    learner = kind_of(spec).learner_class()(spec, seed=1)
    assert type(learner).__name__ == "MLPLearner"
    assert kind_of(spec).initial_values(spec, 1).size == spec.num_parameters


def test_every_kind_has_an_fpga_entry_naming_its_own_files():
    for kind in KINDS.values():
        entry = fpga_kind(kind.spec_class())
        assert entry.kind is kind
        assert entry.firmware.LEARNER == kind.learner
        assert entry.top == f"{kind.learner}_top" and f"{entry.core}.sv" in entry.rtl_library


def test_a_clashing_kind_is_refused_and_a_kind_without_fpga_entry_is_named(monkeypatch):
    with pytest.raises(ValueError, match="clashes"):
        register_kind(dataclasses.replace(kind_named("kan"), name="kan2"))

    class OtherSpec:
        pass

    monkeypatch.setattr(kinds, "KINDS", dict(KINDS))
    register_kind(LearnerKind("other", "other_online", "Other", OtherSpec, "", "", False, False))
    with pytest.raises(ValueError, match=r"does not build the Other learner \(other_online\)"):
        fpga_kind(OtherSpec())
