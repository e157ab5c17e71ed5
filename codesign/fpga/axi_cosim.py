"""Co-simulation of a learner's AXI top: cocotbext-axi bus models in cocotb, Verilator, the Python reference.

:func:`run_axi_cosim` emits the RTL of a spec, builds its AXI top (``<kind>_online_axi``) and
runs ``sim/axi_bench.py``: samples through an AXI4-Stream source and predictions into a sink,
both with random pauses, resets while samples are in flight, AXI4-Lite reads of the counters;
every prediction and the final coefficients compared with the reference, integer for integer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from codesign.errors import require_module
from codesign.fpga.cosim import SIMULATOR_GRACE_SECONDS, check_wall_seconds, reset_plan
from codesign.fpga.rtl_emit import RTL_MANIFEST, emit_rtl
from codesign.fpga.simulator import RANDOM_INIT_ARGS, build_simulation, random_init_plusargs, run_bench
from codesign.fpga.stimulus import make_stimulus
from codesign.kan.kinds import kind_of
from codesign.kan.spec import KANSpec, MLPSpec

__all__ = ["run_axi_cosim"]

BENCH_MODULE = "axi_bench"


def run_axi_cosim(
    spec: KANSpec | MLPSpec,
    work_dir: str | Path,
    samples: int = 1_000,
    task: str = "function_tracking",
    seed: int = 0,
    pipeline: str | int = "ii1",
    resets: int = 3,
    source_pause: float = 0.2,
    sink_pause: float = 0.3,
    wall_seconds: float = 900.0,
    initial: list[np.ndarray] | None = None,
    resets_within: int | None = None,
    random_init_seed: int | None = None,
) -> dict[str, Any]:
    """Run the AXI bench on ``spec``'s AXI top in ``work_dir``; returns what the bench measured, ``passed``, ``failures``.

    ``initial`` (raw coefficients, e.g. from --init) replaces the seed's initial state. ``resets_within``: the
    resets fall while one of the first that many samples is in flight (None: anywhere in the stream), so that
    SATURATIONS, which restarts at a reset, is compared over the rest of the stream. ``random_init_seed`` (>= 1): the
    design powers up with random register and memory values from that seed (codesign.fpga.cosim.cosim_sources).
    """
    require_module("cocotbext.axi")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 3:
        raise ValueError(f"samples={samples!r}: the AXI bench needs at least 3 samples")
    wall_seconds = check_wall_seconds(wall_seconds)
    work = Path(work_dir).resolve()
    rtl = work / "rtl"
    manifest = emit_rtl(spec, rtl, pipeline=pipeline, seed=seed, force=True, initial=initial)
    stimulus = make_stimulus(spec, task=task, n_samples=samples, seed=seed)
    started = time.perf_counter()
    build = build_simulation([rtl / s for s in manifest["axi"]["sources"]], manifest["axi"]["top"], work / "sim_build",
                             {"MEM_DIR": f'"{rtl}"'}, [f"-I{rtl}", *(RANDOM_INIT_ARGS if random_init_seed is not None else ())])
    run_dir = work / "sim_run"
    run_dir.mkdir(parents=True, exist_ok=True)
    np.savez(run_dir / "stimulus.npz", x=stimulus.x, y=stimulus.y, train=stimulus.train)
    config = {
        "manifest": str(rtl / RTL_MANIFEST), "stimulus": str(run_dir / "stimulus.npz"),
        "kind": kind_of(spec).name, "spec": spec.to_dict(), "seed": seed,
        "resets": reset_plan(min(stimulus.x.shape[0], resets_within or stimulus.x.shape[0]), resets, seed),
        "rng_seed": seed,
        "source_pause": source_pause, "sink_pause": sink_pause, "wall_seconds": wall_seconds,
    }
    result = run_bench(build, manifest["axi"]["top"], BENCH_MODULE, config, run_dir,
                       timeout_s=wall_seconds + SIMULATOR_GRACE_SECONDS,
                       plusargs=random_init_plusargs(random_init_seed) if random_init_seed is not None else ())
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["log"] = str(run_dir / "sim.log")
    result["expected"] = manifest["pipeline"]
    if not result["passed"]:
        result["bit_exact"] = False
    return result
