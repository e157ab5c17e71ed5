"""Shared products (rtl/shared_mult.sv): the cost model, the search's choice of a share and the estimate's report of it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codesign.cli import main
from codesign.fpga.boards import find_board
from codesign.fpga.cost import features, period_ns, resource_counts, utilization_percent
from codesign.fpga.estimate import estimate
from codesign.fpga.kan.rtl import kan_placement_parameters
from codesign.fpga.pipeline import pipeline_timing
from codesign.fpga.placement import SHARED_IN, Pipeline
from codesign.fpga.search import SHARE_FILL_PERCENT, choose_pipeline, fitting_share
from codesign.kan.spec import KANSpec, MLPSpec

XCVU9P = find_board("xcvu9p")
# (16, 64, 5) at G = 32: 1,344 edges whose own multipliers need 181 % of an xcvu9p's DSPs
WIDE = KANSpec(widths=(16, 64, 5), grid_size=32)


def test_a_shared_site_has_share_times_fewer_multipliers_and_a_mux_in_front():
    spec = KANSpec()
    pipe = Pipeline(0b110, 0x235D, 2)
    alone = features(spec, pipe, XCVU9P.family)
    for share in (2, 3, 4):
        shared = features(spec, replace(pipe, share=share), XCVU9P.family)
        # 2-4-1: sites of 32 forward, 16 + 16 + 4 layer-1 forward / derivative / backward, 32 + 16 update products,
        # one DSP each, so ceil(n / share) per site
        sites = [32, 16, 16, 4, 32, 16]
        assert shared["dsp"]["multipliers"] == sum(-(-n // share) for n in sites)
        assert alone["dsp"]["multipliers"] == sum(sites)
        assert shared["lut"]["mux"] > alone["lut"]["mux"]
    # the operand mux lies before every multiplier: never faster than the same placement unshared; its register
    # (CUTS bit 15) ends the mux's path there and holds the operands of every multiplier
    assert period_ns(spec, replace(pipe, share=4), XCVU9P) >= period_ns(spec, pipe, XCVU9P)
    registered = replace(pipe, cuts=pipe.cuts | SHARED_IN, share=2)
    assert period_ns(spec, registered, XCVU9P) <= period_ns(spec, replace(pipe, share=2), XCVU9P)
    unregistered = replace(pipe, share=2)
    assert features(spec, registered, XCVU9P.family)["ff"]["registers"] > features(spec, unregistered, XCVU9P.family)["ff"]["registers"]
    assert features(spec, replace(pipe, cuts=pipe.cuts | SHARED_IN), XCVU9P.family) == alone  # unshared: builds nothing


def test_the_rtl_takes_share_and_leaves_shared_products_off_the_dsp_primitive():
    spec = KANSpec()
    params = kan_placement_parameters(spec, Pipeline(0b110, 0x235D, 2, dsp="MULT18X18D", share=2))
    assert params["SHARE"] == 2 and "ECP5_DSP" not in params
    assert "SHARE" not in kan_placement_parameters(spec, Pipeline(0b110, 0x235D, 2))


def test_auto_shares_only_a_design_that_does_not_fit():
    assert fitting_share(KANSpec(), XCVU9P) == 1
    assert choose_pipeline(KANSpec(), XCVU9P, "auto").placement.share == 1
    assert fitting_share(MLPSpec(), XCVU9P) == 1
    unshared = resource_counts(WIDE, Pipeline(0b110, 0x23DD, 2), XCVU9P.family)
    assert utilization_percent(unshared, XCVU9P)["dsp"] > 100
    share = fitting_share(WIDE, XCVU9P)
    assert share > 1
    choice = choose_pipeline(WIDE, XCVU9P, "auto")
    assert choice.placement.share == share and choice.clock_met
    # the shared multipliers take their operands from a register (the DSP's): auto keeps it
    assert choice.placement.cuts & SHARED_IN
    counts = resource_counts(WIDE, choice.placement, XCVU9P.family)
    assert max(utilization_percent(counts, XCVU9P).values()) <= SHARE_FILL_PERCENT
    # the least share that does it: one less leaves some resource over the fill on the deep placement
    less = resource_counts(WIDE, replace(choice.placement, share=share - 1), XCVU9P.family)
    assert max(utilization_percent(less, XCVU9P).values()) > SHARE_FILL_PERCENT - 5
    # what it costs: II and update latency, stated beside the DSPs it saves
    result = estimate(WIDE, XCVU9P, "auto")
    sharing = result["sharing"]
    assert sharing["share"] == share and sharing["dsp_unshared"] == unshared["dsp"] > result["dsp"]
    assert result["ii"] > sharing["ii_unshared"] == pipeline_timing(WIDE, replace(choice.placement, share=1))["ii"]
    assert "sharing" not in estimate(KANSpec(), XCVU9P, "auto")


def test_the_estimate_command_states_the_sharing(capsys, tmp_path):
    config = tmp_path / "wide.toml"
    config.write_text("[spec]\nwidths = [16, 64, 5]\ngrid_size = 32\n")
    assert main(["estimate", "kan_online", "--target", "xcvu9p", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("sharing"))
    assert "products per multiplier" in line and "where unshared 12,352" in line and "II " in line


@pytest.mark.parametrize("text, message", [("0x6:0x235d:2:0", "takes 1..64"), ("0x6:0x235d:2:65", "takes 1..64"),
                                           ("0x6:0x235d:2:x", "PHASES:CUTS:SPLIT")])
def test_a_bad_share_is_one_line_and_exit_2(text, message, capsys):
    assert main(["estimate", "kan_online", "--target", "xcvu9p", "--pipeline", text]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_design_over_the_dsps_is_told_it_can_share(capsys, tmp_path):
    config = tmp_path / "wide.toml"
    config.write_text("[spec]\nwidths = [16, 64, 5]\ngrid_size = 32\n")
    assert main(["estimate", "kan_online", "--target", "xcvu9p", "--config", str(config), "--pipeline", "deep"]) == 0
    warning = capsys.readouterr().err.strip()
    assert "DSP 181 % of the part; products can share multipliers: --pipeline auto chooses a share" in warning
    assert len(warning.splitlines()) == 1
    assert main(["estimate", "kan_online", "--target", "xcvu9p", "--config", str(config), "--pipeline", "deep",
                 "--strict"]) == 3
    # shared already, or no DSP over the part: no hint
    assert "fit_hint" not in estimate(WIDE, XCVU9P, "auto") and "fit_hint" not in estimate(KANSpec(), XCVU9P, "deep")
