"""Start the online learner from a float KAN trained offline (``codesign build --init model.pt``).

The file is a torch state dict of :class:`codesign.kan.float_model.KAN` (``torch.save(model.state_dict(),
path)``; a whole saved module or ``{"state_dict": ...}`` is read the same way). Layer l's ``layers.<l>.coef``
must have the spec's shape (out, in, G+k); a state dict with ``base_weight`` (the SiLU base branch) is
refused, since the fixed-point learner has no such branch. The grid size, order and range are not in a state
dict: the spec's are used, as the float model was built with them.

Quantization rule: each coefficient is clipped to coef_t's range [min_value, max_value], then converted as
``coef_t c = value;`` (coef_t's own rounding mode); the clipped ones are counted and reported, never wrapped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from codesign.kan.spec import KANSpec

__all__ = ["InitialState", "load_initial_state", "float_vs_fixed_error"]


@dataclass(frozen=True)
class InitialState:
    """The quantized initial coefficients (raw coef_t, per layer (out, in, G+k)) and how they were made."""

    coefficients: list[np.ndarray]
    floats: list[np.ndarray]
    saturated: int
    source: str
    sha256: str

    def summary(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return {"file": self.source, "sha256": self.sha256, "coefficients": int(sum(c.size for c in self.coefficients)),
                "saturated": self.saturated,
                "rule": "clip to coef_t's range (counted as saturated), then coef_t's rounding"}


def _state_dict(path: Path) -> dict[str, Any]:
    import torch  # noqa: PLC0415 - torch only when a file is read

    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise FileNotFoundError(f"--init {path}: no such file") from None
    except Exception as exc:  # torch raises many types for a file that is not a state dict
        raise ValueError(f"--init {path}: not a torch state dict ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})") from None
    if isinstance(loaded, dict) and isinstance(loaded.get("state_dict"), dict):
        loaded = loaded["state_dict"]
    if hasattr(loaded, "state_dict") and not isinstance(loaded, dict):
        loaded = loaded.state_dict()
    if not isinstance(loaded, dict):
        raise ValueError(f"--init {path}: expected a state dict of codesign's float KAN, got {type(loaded).__name__}")
    return loaded


def load_initial_state(path: str | Path, spec: KANSpec) -> InitialState:
    """Read, check and quantize a float KAN's coefficients for ``spec`` (the module docstring's rule)."""
    path = Path(path)
    state = _state_dict(path)
    if any(k.endswith("base_weight") for k in state):
        raise ValueError(f"--init {path}: the model has a SiLU base branch (base_weight); the online learner has none "
                         "(train the float KAN with base=False)")
    floats = []
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        key = f"layers.{layer}.coef"
        if key not in state:
            raise ValueError(f"--init {path}: no {key} (the spec has {len(spec.layer_shapes)} layers, widths {spec.widths})")
        coef = state[key].detach().cpu().double().numpy() if hasattr(state[key], "detach") else np.asarray(state[key], float)
        want = (n_out, n_in, spec.n_coef)
        if coef.shape != want:
            raise ValueError(f"--init {path}: {key} has shape {tuple(coef.shape)}, the spec needs {want} "
                             f"(widths {spec.widths}, G + k = {spec.n_coef})")
        if not np.isfinite(coef).all():
            raise ValueError(f"--init {path}: {key} holds NaN or inf")
        floats.append(coef)
    extra = sorted(k for k in state if k.startswith("layers.") and int(k.split(".")[1]) >= len(spec.layer_shapes))
    if extra:
        raise ValueError(f"--init {path}: {extra[0]} is beyond the spec's {len(spec.layer_shapes)} layers (widths {spec.widths})")
    t = spec.coef_t
    saturated = int(sum(np.count_nonzero((c < t.min_value) | (c > t.max_value)) for c in floats))
    raw = [t.quantize(np.clip(c, t.min_value, t.max_value)) for c in floats]
    return InitialState(raw, floats, saturated, str(path), hashlib.sha256(path.read_bytes()).hexdigest())


def float_vs_fixed_error(spec: KANSpec, initial: InitialState, x_raw: np.ndarray) -> dict[str, float]:
    """The initial model's error: the float KAN against the fixed-point learner (no update) on inputs ``x_raw``."""
    import torch  # noqa: PLC0415

    from codesign.kan.float_model import KAN  # noqa: PLC0415
    from codesign.kan.run import make_learner  # noqa: PLC0415

    model = KAN(spec.widths, grid_size=spec.grid_size, spline_order=spec.spline_order, grid_range=spec.grid_range,
                dtype=torch.float64)
    with torch.no_grad():
        for layer, coef in zip(model.layers, initial.floats):
            layer.coef.copy_(torch.from_numpy(coef))  # type: ignore[operator]  # nn.Module attributes type as Tensor | Module
        x = spec.act_t.to_float(x_raw)
        # the fixed-point grid clamps its inputs to the grid range; the float model is asked the same
        lo, hi = spec.grid_range
        want = model(torch.from_numpy(np.clip(x, lo, hi))).numpy()
    learner = make_learner(spec, initial=initial.coefficients)
    got = spec.act_t.to_float(learner.run_raw(x_raw, np.zeros((x_raw.shape[0], spec.n_outputs), np.int64), train=False))
    diff = got - want
    return {"samples": int(x_raw.shape[0]), "rms": float(np.sqrt(np.mean(diff**2))), "max_abs": float(np.max(np.abs(diff))),
            "float_rms": float(np.sqrt(np.mean(want**2)))}
