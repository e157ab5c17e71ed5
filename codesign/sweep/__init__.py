"""One sweep runner for every repeated experiment: points on the local process pool or on Ray, resumable.

codesign.sweep.runner runs the points (resume file, worker checks, one retry, progress);
codesign.sweep.executors holds the executors (``local``, ``ray``); codesign.sweep.resume the
``points.jsonl`` format; codesign.sweep.tools the external tools a point may need.
"""

from codesign.sweep.executors import EXECUTORS, make_executor
from codesign.sweep.resume import POINTS_FILE, read_points
from codesign.sweep.runner import SweepResult, run_sweep

__all__ = ["EXECUTORS", "make_executor", "POINTS_FILE", "read_points", "SweepResult", "run_sweep"]
