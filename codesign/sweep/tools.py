"""The external tools a sweep's points need, and the check each worker runs before any point is sent to it.

A check finds a tool the way the point will (the same finder functions), so a worker that passes
it runs the point with the same tool; one that fails it names the tool and how to install it.
CIM points need torch and their data set (loaded as the point loads it) rather than a program.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence

__all__ = ["TOOLS", "data_set_tool", "missing_tools", "worker_report"]


def _yosys() -> None:
    from codesign.fpga.synth import find_yosys

    find_yosys()


def _gxx() -> None:
    from codesign.fpga.csim import find_compiler

    find_compiler()


def _verilator() -> None:
    from codesign.fpga.simulator import verilator_setup

    verilator_setup()


def _torch() -> None:
    import torch  # noqa: F401 - importable is the check


def _data_set(name: str) -> Callable[[], None]:
    def check() -> None:
        from codesign.cim.dwp.data import load_dataset

        load_dataset(name)  # the fixed splits, as a point loads them (cached in the worker afterwards)

    return check


# The tool's name (as a user knows it) and the function that finds it or raises with the fix.
TOOLS: dict[str, Callable[[], None]] = {"Yosys": _yosys, "g++": _gxx, "Verilator": _verilator, "torch": _torch}
# the CIM data sets (codesign.cim.dwp.data.DATASETS, named here without importing torch): "digits data set", ...
TOOLS.update({f"{name} data set": _data_set(name) for name in ("digits", "mnist5k")})


def data_set_tool(name: str) -> str:
    """The tool name under which a worker's check loads the CIM data set ``name``."""
    return f"{name} data set"


def missing_tools(tools: Sequence[str]) -> dict[str, str]:
    """{tool: why it is not usable here} for each of ``tools`` this process cannot find (empty: all found)."""
    from codesign.errors import one_line_error

    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        raise ValueError(f"unknown tool {unknown[0]!r}: choose from {', '.join(TOOLS)}")
    missing = {}
    for tool in tools:
        try:
            TOOLS[tool]()
        except (OSError, ValueError, ImportError) as exc:
            missing[tool] = one_line_error(exc) or str(exc)
    return missing


def worker_report(tools: Sequence[str]) -> dict:
    """What a worker tells the runner before it gets work: its host, its codesign version, the tools it lacks."""
    from codesign import __version__

    return {"host": socket.gethostname(), "pid": os.getpid(), "codesign": __version__, "missing": missing_tools(tools)}
