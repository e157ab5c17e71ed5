"""ECP5's and Nexus's analytic clocks: each its own fit to nextpnr's routed Fmax (benchmarks/clock_fit.py), checked against those routes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.cost import PeriodModel, period_model, period_ns
from codesign.fpga.estimate import estimate
from codesign.fpga.estimate_coefficients import COEFFICIENTS
from codesign.fpga.placement import parse_pipeline
from codesign.fpga.search import choose_pipeline
from codesign.kan.kinds import spec_from_mapping
from codesign.kan.spec import KANSpec

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROUTED = json.loads((DOCS / "ecp5_routed.json").read_text())["results"]
NEXUS_ROUTED = json.loads((DOCS / "nexus_routed.json").read_text())["results"]
ECP5 = find_board("lfe5u-85f")
NEXUS = find_board("lifcl-40")


def _routed(row: dict, board=ECP5) -> tuple[float, float]:
    """(the shipped model's clock, the routed Fmax) of a stored route, in MHz."""
    spec = spec_from_mapping({"KANSpec": "kan", "MLPSpec": "mlp"}[row["kind"]], row["spec"])
    placement = choose_pipeline(spec, board, parse_pipeline(row["placement"])).placement
    return 1000.0 / period_ns(spec, placement, board), row["routed_fmax_mhz"]


def test_ecp5_reads_its_own_fit_and_other_families_scale_ultrascale():
    """ECP5 has coefficients fitted to its router; 7-series still takes UltraScale+'s, scaled like the DSP delay."""
    ecp5 = period_model(ECP5.family)
    assert ecp5.coefficients == COEFFICIENTS["family_period_ns"]["ecp5"]["period_ns"] and ecp5.factor == 1.0
    assert "nextpnr-ecp5's routed Fmax" in ecp5.source
    xc7 = period_model(find_board("xc7z020").family)
    assert xc7.coefficients == COEFFICIENTS["period_ns"]
    assert xc7.factor == pytest.approx(find_board("xc7z020").family.delays.dsp_mult / find_board("xcvu9p").family.delays.dsp_mult)
    assert "routed" in estimate(KANSpec(widths=(1, 1), grid_size=5), ECP5)["estimate"]


def test_size_factor_is_one_up_to_the_threshold_then_a_power():
    """Routed nets lengthen with size above the threshold only."""
    model = PeriodModel({"constant": 1.0}, 1.0, 1000.0, 0.2)
    assert model.size_factor(300) == 1.0 and model.size_factor(1000) == 1.0
    assert model.size_factor(32000) == pytest.approx(32 ** 0.2)


@pytest.mark.parametrize("name", sorted(ROUTED))
def test_ecp5_clock_is_within_25_percent_of_each_routed_design(name):
    """The shipped fit against every stored route (in sample: the leave-one-out error is in docs/estimator.md)."""
    estimated, routed = _routed(ROUTED[name])
    assert abs(estimated - routed) <= 0.25 * routed, f"{name}: {estimated:.1f} MHz estimated, {routed} routed"


def test_no_route_called_met_that_its_yosys_depth_estimate_misses_by_more_than_20_percent():
    """Where synthesis says a design misses the clock by > 20 %, the analytic estimate does not call it met."""
    for name, row in ROUTED.items():
        estimated, _ = _routed(row)
        target = row["clock_target_mhz"]
        assert not (estimated >= target and row["yosys_clock_mhz_estimate"] < 0.8 * target), name


def test_nexus_reads_its_own_fit():
    """Nexus has coefficients fitted to nextpnr-nexus's routes, not UltraScale+'s scaled."""
    nexus = period_model(NEXUS.family)
    assert nexus.coefficients == COEFFICIENTS["family_period_ns"]["nexus"]["period_ns"] and nexus.factor == 1.0
    assert "nextpnr-nexus's routed Fmax" in nexus.source


@pytest.mark.parametrize("name", sorted(NEXUS_ROUTED))
def test_nexus_clock_is_within_25_percent_of_each_routed_design(name):
    """The shipped Nexus fit against every stored route (in sample; leave-one-out in docs/estimator.md)."""
    estimated, routed = _routed(NEXUS_ROUTED[name], NEXUS)
    assert abs(estimated - routed) <= 0.25 * routed, f"{name}: {estimated:.1f} MHz estimated, {routed} routed"
