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
