"""The sources `codesign build` writes for the default spec of each learner, as the golden files hold them.

Kept: every generated file of the HLS project and the RTL folder. Left out: the copies of the
libraries (``firmware/codesign/*.h``, the ``rtl/`` modules; their sources are in the repository),
the test-bench stream (``tb_data/``) and what the tools write later (C-simulation, report).
"""

from __future__ import annotations

import io
from pathlib import Path

from codesign.fpga.build import write_sources
from codesign.fpga.estimate import analytic_estimate
from codesign.fpga.plan import make_plan
from codesign.fpga.simulator import rtl_dir
from codesign.kan.kinds import learner_names
from codesign.outputs import Progress

__all__ = ["GOLDEN_DIR", "TARGET", "LEARNERS", "emit_sources", "golden_files"]

GOLDEN_DIR = Path(__file__).parent
TARGET = "xcvu9p"  # the build's default target
LEARNERS = tuple(learner_names())
_SAMPLES = 1  # the stream only fills tb_data/, which is left out


def emit_sources(learner: str, out: Path) -> None:
    """Write what `codesign build <learner>` (default target, pipeline, seed and spec) writes before it compiles."""
    plan = make_plan(learner, TARGET, samples=_SAMPLES)
    analytic = analytic_estimate(plan.spec, plan.board, plan.choice)
    write_sources(out, out, plan, analytic, Progress(3, io.StringIO()))


def golden_files(folder: Path) -> dict[str, str]:
    """The kept files of an emitted folder: path relative to it -> text."""
    library = {p.name for p in rtl_dir().iterdir()}
    kept = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or rel.startswith(("tb_data/", "firmware/codesign/")):
            continue
        if rel.startswith("rtl/") and path.name in library:
            continue
        kept[rel] = path.read_text()
    return kept
