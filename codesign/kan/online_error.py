"""The output error of the online learners (docs/arithmetic.md §4), the twin of ``hls/codesign/online_error.h``.

Shared by the KAN (``fixed_learner._kan_stream``) and the MLP (``mlp_learner._mlp_stream``), as the
HLS function is shared by both tops.
"""

from __future__ import annotations

import numpy as np

from codesign.kan.learner_base import TypeRow, njit, probe

__all__ = ["output_error"]


@njit(cache=True)
def output_error(acts: np.ndarray, y: np.ndarray, grads: np.ndarray, l: int, n_out: int, f_act: int, err_t: TypeRow,
                 stats: np.ndarray | None, sid: int, t: int) -> None:
    """grads[l, o] = cast_err_t(acts[l, o] - y[t, o]) (§4): the difference is exact (f_act bits); signal sid + o."""
    for o in range(n_out):
        grads[l, o] = probe(acts[l, o] - y[t, o], f_act, err_t, stats, sid + o, t)
