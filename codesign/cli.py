"""The `codesign` command line: one subcommand per job; bad input ends in a one-line error."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from codesign import __version__

__all__ = ["main", "build_parser"]


def _cmd_tasks(args: argparse.Namespace) -> int:
    from codesign.tasks import list_tasks

    for name, summary in list_tasks().items():
        print(f"{name:20s} {summary}")
    return 0


def _cmd_learn(args: argparse.Namespace) -> int:
    from codesign.kan.run import learn_on_task

    learn_on_task(args.learner, args.task, n_samples=args.samples, seed=args.seed, config=args.config)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from codesign.kan.profile_cli import run_profile

    run_profile(args.learner, args.config, args.task, args.samples, args.seed, args.out, args.force)
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from codesign.doctor import doctor_report

    text, essential = doctor_report()
    print(text)
    return 0 if essential else 1


def _cmd_boards(args: argparse.Namespace) -> int:
    from codesign.fpga.boards import load_boards
    from codesign.fpga.report import format_boards

    print(format_boards(load_boards()))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from codesign.fpga.build import build
    from codesign.fpga.csim import CsimError

    try:
        report = build(
            args.learner, target=args.target, config=args.config, out=args.out, force=args.force,
            samples=args.samples, task=args.task, seed=args.seed,
        )
    except CsimError as exc:  # the generated project did not compile or run: not a usage error
        print(f"codesign: error: {exc}", file=sys.stderr)
        return 1
    csim = report["csim"]
    if not csim["bit_exact"]:
        print(
            f"codesign: error: the C-simulation does not match the Python reference ({csim['mismatches']} mismatches); "
            f"see {report['output']}/csim/csim.log",
            file=sys.stderr,
        )
        return 1
    return 0


_BUILD_EPILOG = """The output folder (default ./codesign_out/<learner>_<part>, e.g. codesign_out/kan_online_xcvu9p)
holds firmware/, tb/, tb_data/, csim/, build_prj.tcl (vitis_hls -f build_prj.tcl), README.md,
manifest.json and report.json. An existing non-empty folder is refused; --force replaces those
generated entries (and the Vitis project folder <learner>_prj/) and leaves other files alone.

C-simulation stream: --samples samples of --task (a task with an n_inputs option, such as
function_tracking, is generated with the spec's input width; otherwise task columns are reused
cyclically, negated on every second pass, to fit the spec's widths), then 512 corner samples
(act_t extremes, grid edges, random raw values, train off for about a quarter). The learner's
clock is the board's default unless the config sets clock_mhz.
"""


def _cmd_cim_help(args: argparse.Namespace) -> int:
    args.cim_parser.print_help()
    return 2


def _cmd_cim_energy(args: argparse.Namespace) -> int:
    import torch

    from codesign.cim.config import CIMConfig, ConverterConfig, TileConfig
    from codesign.cim.energy import EnergyConstants, energy_table, estimate_energy, hermes_crosscheck
    from codesign.cim.energy import sensitivity, sensitivity_table
    from codesign.cim.workloads import build_model, layer_workloads

    model, sample_shape = build_model(args.model)
    config = CIMConfig(
        device=args.device,
        converter=ConverterConfig(dac_bits=args.dac_bits, adc_bits=args.adc_bits),
        tile=TileConfig(rows=args.tile, cols=args.tile),
    )
    workloads = layer_workloads(model.eval(), torch.zeros(1, *sample_shape))
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="codesign", description=__doc__)
    parser.add_argument("--version", action="version", version=f"codesign {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("tasks", help="list the online-learning tasks")
    p.set_defaults(func=_cmd_tasks)

    p = sub.add_parser("learn", help="run a bit-exact online learner on a task stream and print its error")
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--task", default="function_tracking", help="task name (see `codesign tasks`)")
    p.add_argument("--samples", type=int, default=20_000, help="stream length (default 20000)")
    p.add_argument("--seed", type=int, default=0, help="stream and initialisation seed")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields")
    p.set_defaults(func=_cmd_learn)

    p = sub.add_parser("profile", help="range, overflow and narrowest type of every named fixed-point signal over a stream")
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields")
    p.add_argument("--task", default="function_tracking", help="task name (see `codesign tasks`)")
    p.add_argument("--samples", type=int, default=20_000, help="stream length (default 20000)")
    p.add_argument("--seed", type=int, default=0, help="stream and initialisation seed")
    p.add_argument("--out", help="output folder (default ./codesign_out/profile_<learner>)")
    p.add_argument("--force", action="store_true", help="replace profile files in an existing output folder")
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("doctor", help="versions of the tools codesign drives, which features work here, and fixes")
    p.set_defaults(func=_cmd_doctor)

    p = sub.add_parser("boards", help="list the FPGA parts and boards that --target accepts")
    p.set_defaults(func=_cmd_boards)

    p = sub.add_parser(
        "build",
        help="emit a Vitis HLS project of an online learner and verify it by g++ C-simulation",
        epilog=_BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("learner", help="kan_online or mlp_online")
    p.add_argument("--target", default="xcvu9p", help="part or board name, e.g. xcvu9p or vcu118 (see `codesign boards`)")
    p.add_argument("--config", help="TOML or YAML file overriding spec fields")
    p.add_argument("--out", help="output folder (default ./codesign_out/<learner>_<part>)")
    p.add_argument("--force", action="store_true", help="replace the generated files of an existing output folder")
    p.add_argument("--samples", type=int, default=10_000, help="task samples of the C-simulation stream (default 10000)")
    p.add_argument("--task", default="function_tracking", help="task of the C-simulation stream (see `codesign tasks`)")
    p.add_argument("--seed", type=int, default=0, help="stream and initialisation seed")
    p.set_defaults(func=_cmd_build)

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
    from codesign.compress.cli import add_compress_parser

    add_compress_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `codesign` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args)
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        print(f"codesign: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("codesign: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
