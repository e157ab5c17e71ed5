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
