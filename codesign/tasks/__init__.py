"""Seeded, non-stationary online-learning streams.

Four tasks are registered in :data:`TASKS` (see each module's docstring for
equations, parameters and switch times):

``function_tracking``  regression of a target function that switches abruptly;
``qubit_readout``      classification of drifting single-shot IQ points;
``mackey_glass``       one-step prediction of a chaotic series whose delay changes;
``pendulum_id``        one-step identification of a pendulum whose mass/friction change.

Example::

    from codesign.tasks import make_stream, online_metrics
    stream = make_stream("mackey_glass", n_samples=20_000, seed=1)
    pred = learner_run(stream.x, stream.y)        # predict-then-update
    report = online_metrics(pred, stream, window=500)

A user's own stream comes from a file (``load_data("my.npz")``, docs/data.md) as a
:class:`DataStream`, which every consumer of a :class:`TaskStream` takes.
"""

from .data_file import DataStream, load_data, outside_fraction
from .metrics import online_metrics, output_errors, squared_errors
from .registry import TASKS, check_stream_size, list_tasks, make_stream, task_options
from .stream import TaskStream

__all__ = [
    "check_stream_size",
    "DataStream",
    "TASKS",
    "TaskStream",
    "list_tasks",
    "load_data",
    "make_stream",
    "online_metrics",
    "output_errors",
    "outside_fraction",
    "squared_errors",
    "task_options",
]
