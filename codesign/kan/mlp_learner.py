"""Bit-exact fixed-point MLP online learner: the baseline, in the same types and the same SGD.

Arithmetic (docs/arithmetic.md §8): each neuron's sum is exact, then one cast to act_t; the
hidden activation is ReLU or hardtanh; the update and the backward pass follow the KAN's rules.
"""

from __future__ import annotations

import numpy as np

from codesign.kan.learner_base import OnlineLearner, njit, pack_type, type_row
from codesign.kan.mlp_online import (
    ACT_HARDTANH,
    ACT_RELU,
    T_ACT,
    T_ERR,
    T_GRAD,
    activation_mask,
    dense_forward,
    dense_input_gradient,
    dense_update,
)
from codesign.kan.online_error import output_error
from codesign.kan.spec import MLPSpec

__all__ = ["MLPLearner", "init_mlp_weights"]


def init_mlp_weights(spec: MLPSpec, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Float (weights (out, in), biases (out,)) per layer: He-uniform hidden layers, zero output layer."""
    rng = np.random.default_rng(seed)
    params = []
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        if layer == len(spec.layer_shapes) - 1:
            params.append((np.zeros((n_out, n_in)), np.zeros(n_out)))
            continue
        bound = np.sqrt(6.0 / n_in)
        params.append((rng.uniform(-bound, bound, (n_out, n_in)), rng.uniform(-0.5, 0.5, n_out)))
    return params


class MLPLearner(OnlineLearner):
    """An MLP online learner on fixed-point integers (SGD, batch 1, predict-then-update)."""

    def __init__(self, spec: MLPSpec | None = None, params: list[tuple[np.ndarray, np.ndarray]] | None = None, seed: int = 0):
        self.spec = spec if spec is not None else MLPSpec()
        if params is None:
            params = init_mlp_weights(self.spec, seed)
        if len(params) != len(self.spec.layer_shapes):
            raise ValueError(f"{len(params)} parameter pairs for {len(self.spec.layer_shapes)} layers")
        flat = []
        for layer, ((w, b), (n_in, n_out)) in enumerate(zip(params, self.spec.layer_shapes)):
            if np.shape(w) != (n_out, n_in) or np.shape(b) != (n_out,):
                raise ValueError(
                    f"layer {layer} has weights {np.shape(w)} and biases {np.shape(b)}, expected ({n_out}, {n_in}) and ({n_out},)"
                )
            # One row per neuron: n_in weights, then the bias.
            flat.append(np.concatenate([np.asarray(w, float), np.asarray(b, float)[:, None]], axis=1).ravel())
        self.offsets = np.cumsum([0] + [f.size for f in flat]).astype(np.int64)
        self.weights = self.spec.coef_t.quantize(np.concatenate(flat))
        self.types = np.stack([pack_type(getattr(self.spec, n)) for n in ("act_t", "coef_t", "err_t", "grad_t")])
        self.activation = ACT_RELU if self.spec.activation == "relu" else ACT_HARDTANH

    def signal_names(self) -> list[str]:
        """Instrumented signals: per layer the outputs, input gradients and updates; the errors."""
        names = []
        for l, (n_in, n_out) in enumerate(self.spec.layer_shapes):
            names += [f"layer{l}.out[o={o}]" for o in range(n_out)]
            if l > 0:
                names += [f"layer{l}.grad_in[i={i}]" for i in range(n_in)]
            for o in range(n_out):
                names += [f"layer{l}.weight_update[o={o},i={i}]" for i in range(n_in)] + [f"layer{l}.bias_update[o={o}]"]
        names += [f"err[o={o}]" for o in range(self.spec.n_outputs)]
        return names

    def _signal_bases(self) -> np.ndarray:
        """First stats row of outputs, input gradients and updates per layer (-1: absent); errors last."""
        shapes = self.spec.layer_shapes
        bases = np.full((len(shapes) + 1, 3), -1, dtype=np.int64)
        row = 0
        for l, (n_in, n_out) in enumerate(shapes):
            bases[l, 0], row = row, row + n_out
            if l > 0:
                bases[l, 1], row = row, row + n_in
            bases[l, 2], row = row, row + n_out * (n_in + 1)
        bases[len(shapes), 0] = row
        return bases

    def params_raw(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Raw coef_t (weights, biases) per layer (copies)."""
        out = []
        for (a, b), (n_in, n_out) in zip(zip(self.offsets[:-1], self.offsets[1:]), self.spec.layer_shapes):
            rows = self.weights[a:b].reshape(n_out, n_in + 1)
            out.append((rows[:, :n_in].copy(), rows[:, n_in].copy()))
        return out

    def run_raw(self, x_raw: np.ndarray, y_raw: np.ndarray, train: bool | np.ndarray = True,
                stats: np.ndarray | None = None, lr_shifts: int | np.ndarray | None = None) -> np.ndarray:
        """Stream raw act_t integers through the learner; returns raw predictions (n, n_outputs).

        The MLP's learning-rate shift is fixed: lr_shifts may only repeat the spec's lr_shift.
        """
        x_raw, y_raw, train_arr, pred, widths = self._kernel_arrays(x_raw, y_raw, train)
        self._lr_shifts(lr_shifts, x_raw.shape[0])
        _mlp_stream(
            x_raw, y_raw, train_arr, self.weights, widths, self.offsets, self.types, self.activation,
            self.spec.lr_shift, pred, stats, self._signal_bases(),
        )
        return pred


@njit(cache=True)
def _mlp_stream(x: np.ndarray, y: np.ndarray, train: np.ndarray, wts: np.ndarray, widths: np.ndarray, offsets: np.ndarray,
                types: np.ndarray, activation: int, lr_shift: int, pred: np.ndarray, stats: np.ndarray | None, sig: np.ndarray) -> None:
    """Predict-then-update over a stream; wts is updated in place (docs/arithmetic.md §8).

    stats/sig: a profile's table (None: not profiling) and the first row of each signal kind.
    """
    n_layers = widths.shape[0] - 1
    w_max = widths.max()
    err_t = type_row(types, T_ERR)
    pre = np.zeros((n_layers + 1, w_max), dtype=np.int64)  # cast sums, before the activation
    acts = np.zeros((n_layers + 1, w_max), dtype=np.int64)
    grads = np.zeros((n_layers + 1, w_max), dtype=np.int64)
    for t in range(x.shape[0]):
        for i in range(widths[0]):
            acts[0, i] = x[t, i]
        for l in range(n_layers):
            dense_forward(wts, acts, pre, l, offsets[l], widths[l], widths[l + 1], l < n_layers - 1, activation, types,
                          stats, sig[l, 0], t)
        for o in range(widths[n_layers]):
            pred[t, o] = acts[n_layers, o]
        if train[t] == 0:
            continue
        output_error(acts, y, grads, n_layers, widths[n_layers], types[T_ACT, 1], err_t, stats, sig[n_layers, 0], t)
        for l in range(n_layers - 1, -1, -1):
            n_in, n_out = widths[l], widths[l + 1]
            f_g = types[T_ERR, 1] if l == n_layers - 1 else types[T_GRAD, 1]
            # the gradient through the activation of this layer's outputs (the last layer is linear)
            activation_mask(pre, grads, l, n_out, l < n_layers - 1, activation, types[T_ACT, 1])
            if l > 0:
                dense_input_gradient(wts, grads, l, offsets[l], n_in, n_out, f_g, types, stats, sig[l, 1], t)
            dense_update(wts, acts, grads, l, offsets[l], n_in, n_out, f_g, lr_shift, types, stats, sig[l, 2], t)
