"""The learner RTL does not depend on its power-up state: co-simulation with Verilator's randomized initial values.

A RANDOM_INIT_ARGS model gives every register and memory without a reset or initial value a random value, drawn
from the run's seed (+verilator+seed+N): the state a four-state simulator leaves as X and silicon powers up with.
The bench resets the design first, as a system does, and then every prediction and the final coefficients must
equal the Python reference for every seed (so the seeds agree with each other too).
"""

from __future__ import annotations

import pytest

from codesign.fpga.boards import find_board
from codesign.fpga.lint import lint_variants
from codesign.fpga.search import choose_pipeline
from codesign.fpga.simulator import RANDOM_INIT_ARGS, bench_dir, build_simulation, random_init_plusargs, run_bench
from codesign.kan.spec import KANSpec

pytest.importorskip("cocotb")

SEEDS = (1, 2, 3)


def test_random_init_gives_each_seed_its_own_power_up_state(tmp_path):
    # the mechanism the learner tests rely on: without it the register powers up 0, with it at random, per seed
    sources = [bench_dir() / "power_up_harness.sv"]
    plain = build_simulation(sources, "power_up_harness", tmp_path / "plain")
    assert run_bench(plain, "power_up_harness", "power_up_bench", {}, tmp_path / "plain_run")["power_up"] == 0
    model = build_simulation(sources, "power_up_harness", tmp_path / "random", build_args=RANDOM_INIT_ARGS)
    values = [run_bench(model, "power_up_harness", "power_up_bench", {}, tmp_path / f"run{s}", plusargs=random_init_plusargs(s))
              for s in (1, 1, 2)]
    assert all(v["passed"] and v["held"] for v in values)
    assert values[0]["power_up"] == values[1]["power_up"] != values[2]["power_up"]  # the seed decides
    assert values[0]["power_up"] != 0


def test_a_bad_seed_is_refused():
    with pytest.raises(ValueError, match="seed=0"):
        random_init_plusargs(0)


def _spec(name: str):
    return next(spec for n, spec, _ in lint_variants() if n == name)


CASES = {
    # name: (spec, pipeline, samples): the default at its clock, a 1 -> 1, and a hidden layer with two outputs
    "kan_default_auto": (KANSpec(), "auto", 300),
    "kan_1x1_g5_forward": (_spec("kan_1x1_g5_forward"), next(p for n, _, p in lint_variants() if n == "kan_1x1_g5_forward"), 300),
    "kan_mixed_modes_auto": (_spec("kan_mixed_modes_auto"), "auto", 200),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_learner_is_bit_exact_from_a_random_power_up(name, tmp_path):
    from codesign.fpga.cosim import run_cosim

    spec, pipeline, samples = CASES[name]
    if pipeline == "auto":
        pipeline = choose_pipeline(spec, find_board("xcvu9p"), "auto").placement
    measured = []
    for seed in SEEDS:
        result = run_cosim(spec, samples=samples, seed=1, pipeline=pipeline, work_dir=tmp_path, resets=4, random_init_seed=seed)
        assert result["passed"] and result["bit_exact"] is True, (seed, result["failures"])
        assert result["prediction_mismatches"] == 0 and result["state_mismatches"] == 0, seed
        assert result["state_values"] == spec.num_parameters and result["random_init_seed"] == seed
        measured.append((result["ii"], result["latency_cycles"], result["update_latency_cycles"], result["samples"]))
    assert len(set(measured)) == 1  # the seeds agree on the timing as on every value


@pytest.mark.slow
def test_axi_top_is_bit_exact_from_a_random_power_up(tmp_path):
    pytest.importorskip("cocotbext.axi")
    from codesign.fpga.axi_cosim import run_axi_cosim

    spec = KANSpec()
    pipeline = choose_pipeline(spec, find_board("xcvu9p"), "auto").placement
    for seed in SEEDS:
        result = run_axi_cosim(spec, tmp_path / "axi", samples=200, seed=1, pipeline=pipeline, random_init_seed=seed)
        assert result["passed"] and result["bit_exact"] is True, (seed, result["failures"])
