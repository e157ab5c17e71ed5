"""Start the online learner from a float KAN trained offline (``codesign build --init model.pt``).

The file is a torch state dict of :class:`codesign.kan.float_model.KAN` (``torch.save(model.state_dict(),
path)``; a whole saved module or ``{"state_dict": ...}`` is read the same way). Layer l's ``layers.<l>.coef``
must have the spec's shape (out, in, G+k); a state dict with ``base_weight`` (the SiLU base branch) is
refused, since the fixed-point learner has no such branch. Each layer's ``layers.<l>.grid`` (the extended
knots, G + 2k + 1 of them) says the grid size, order and range the model was trained with; a file whose
grid differs from the spec's is refused, naming the fields. A file saved before the knots were kept has
no grid: the spec's is assumed, and the build says so (``--strict`` refuses it).

Quantization rule: each coefficient is clipped to coef_t's range [min_value, max_value], then converted as
``coef_t c = value;`` (coef_t's own rounding mode); the clipped ones are counted and reported, never wrapped.
More than SATURATED_SHARE of them clipped is a warning (``--strict``: refused): coef_t is too narrow.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from codesign.kan.spec import KANSpec

__all__ = ["InitialState", "SATURATED_SHARE", "load_initial_state", "float_vs_fixed_error"]

# more than this share of the coefficients clipped to coef_t's range: the initial model is not the trained one
SATURATED_SHARE = 0.01


@dataclass(frozen=True)
class FileGrid:
    """The grid a saved float KAN was trained on, read from its knots."""

    grid_size: int
    spline_order: int
    grid_range: tuple[float, float]


@dataclass(frozen=True)
class InitialState:
    """The quantized initial coefficients (raw coef_t, per layer (out, in, G+k)) and how they were made."""

    coefficients: list[np.ndarray]
    floats: list[np.ndarray]
    saturated: int
    source: str
    sha256: str
    grid: FileGrid | None  # None: the file holds no knots (saved before they were kept); the spec's grid is assumed
    state: dict[str, Any] = field(repr=False)  # the file's state dict, the float model the check evaluates

    def summary(self) -> dict[str, Any]:
        """Plain data for report.json."""
        return {"file": self.source, "sha256": self.sha256, "coefficients": int(sum(c.size for c in self.coefficients)),
                "saturated": self.saturated, "grid": "from the file" if self.grid else "not in the file: the spec's assumed",
                "rule": "clip to coef_t's range (counted as saturated), then coef_t's rounding"}

    def warnings(self, spec: KANSpec) -> list[str]:
        """One line per thing the user should know before trusting the initial model (``--strict`` refuses them)."""
        lines = []
        n = sum(c.size for c in self.coefficients)
        if self.saturated > SATURATED_SHARE * n:
            lines.append(f"--init {self.source}: {self.saturated} of {n} coefficients ({self.saturated / n:.0%}) are outside "
                         f"coef_t={spec.coef_t}'s range [{spec.coef_t.min_value:g}, {spec.coef_t.max_value:g}] and were "
                         "clipped: give coef_t more integer bits in --config (e.g. a wider ap_fixed)")
        if self.grid is None:
            lines.append(f"--init {self.source}: the file holds no grid (layers.<l>.grid; saved before codesign's KAN kept "
                         f"it): assumed the spec's grid_size {spec.grid_size}, spline_order {spec.spline_order}, grid_range "
                         f"{tuple(spec.grid_range)}; save the model again to have them checked")
        return lines


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


def _file_grid(path: Path, key: str, knots: Any, n_coef: int) -> FileGrid:
    """G, k and the range from a layer's extended knots (G + 2k + 1 uniform points, the range from knot k to G+k)."""
    t = np.asarray(knots.detach().cpu().double().numpy() if hasattr(knots, "detach") else knots, float).ravel()
    k = t.size - 1 - n_coef
    g = n_coef - k
    if k < 0 or g < 1 or not np.isfinite(t).all():
        raise ValueError(f"--init {path}: {key} holds {t.size} knots, which no grid with G + k = {n_coef} has")
    return FileGrid(g, k, (float(t[k]), float(t[g + k])))


def _grid_mismatch(grid: FileGrid, spec: KANSpec) -> list[str]:
    """The fields in which a file's grid differs from the spec's, as 'name file (spec spec)'."""
    differ = []
    if grid.grid_size != spec.grid_size:
        differ.append(f"grid_size {grid.grid_size} (spec {spec.grid_size})")
    if grid.spline_order != spec.spline_order:
        differ.append(f"spline_order {grid.spline_order} (spec {spec.spline_order})")
    # the knots may have been stored in float32 (model.float()): equal to that precision is equal
    if not np.allclose(grid.grid_range, spec.grid_range, rtol=1e-6, atol=1e-6 * (spec.grid_range[1] - spec.grid_range[0])):
        differ.append(f"grid_range ({grid.grid_range[0]:g}, {grid.grid_range[1]:g}) "
                      f"(spec ({spec.grid_range[0]:g}, {spec.grid_range[1]:g}))")
    return differ


def load_initial_state(path: str | Path, spec: KANSpec, strict: bool = False) -> InitialState:
    """Read, check and quantize a float KAN's coefficients for ``spec`` (the module docstring's rule).

    A grid other than the spec's is refused; with ``strict``, so is anything :meth:`InitialState.warnings` names.
    """
    path = Path(path)
    state = _state_dict(path)
    if any(k.endswith("base_weight") for k in state):
        raise ValueError(f"--init {path}: the model has a SiLU base branch (base_weight); the online learner has none "
                         "(train the float KAN with base=False)")
    floats, grids = [], []
    for layer, (n_in, n_out) in enumerate(spec.layer_shapes):
        key = f"layers.{layer}.coef"
        if key not in state:
            raise ValueError(f"--init {path}: no {key} (the spec has {len(spec.layer_shapes)} layers, widths {spec.widths})")
        coef = state[key].detach().cpu().double().numpy() if hasattr(state[key], "detach") else np.asarray(state[key], float)
        differ = []
        if f"layers.{layer}.grid" in state and coef.ndim == 3:
            grids.append(_file_grid(path, f"layers.{layer}.grid", state[f"layers.{layer}.grid"], coef.shape[-1]))
            differ = _grid_mismatch(grids[-1], spec)
        other_grid = f"the model was trained on another grid: {', '.join(differ)}" if differ else ""
        want = (n_out, n_in, spec.n_coef)
        if coef.shape != want:
            raise ValueError(f"--init {path}: {key} has shape {tuple(coef.shape)}, the spec needs {want} "
                             f"(widths {spec.widths}, G + k = {spec.n_coef})" + (f"; {other_grid}" if other_grid else ""))
        if other_grid:
            raise ValueError(f"--init {path}: {other_grid}; set them in --config to the model's, or train the model on the "
                             "spec's grid")
        if not np.isfinite(coef).all():
            raise ValueError(f"--init {path}: {key} holds NaN or inf")
        floats.append(coef)
    extra = sorted(k for k in state if k.startswith("layers.") and int(k.split(".")[1]) >= len(spec.layer_shapes))
    if extra:
        raise ValueError(f"--init {path}: {extra[0]} is beyond the spec's {len(spec.layer_shapes)} layers (widths {spec.widths})")
    t = spec.coef_t
    saturated = int(sum(np.count_nonzero((c < t.min_value) | (c > t.max_value)) for c in floats))
    raw = [t.quantize(np.clip(c, t.min_value, t.max_value)) for c in floats]
    initial = InitialState(raw, floats, saturated, str(path), hashlib.sha256(path.read_bytes()).hexdigest(),
                           grids[0] if len(grids) == len(floats) else None, state)
    if strict and initial.warnings(spec):
        raise ValueError(f"{initial.warnings(spec)[0]} (--strict)")
    return initial


def float_vs_fixed_error(spec: KANSpec, initial: InitialState, x_raw: np.ndarray) -> dict[str, float]:
    """The initial model's error: the user's float KAN (the file's state dict, on the file's grid) against the
    fixed-point learner (no update) on inputs ``x_raw``."""
    import torch  # noqa: PLC0415

    from codesign.kan.float_model import KAN  # noqa: PLC0415
    from codesign.kan.run import make_learner  # noqa: PLC0415

    grid = initial.grid or FileGrid(spec.grid_size, spec.spline_order, (spec.grid_range[0], spec.grid_range[1]))
    model = KAN(spec.widths, grid_size=grid.grid_size, spline_order=grid.spline_order, grid_range=grid.grid_range,
                dtype=torch.float64)
    model.load_state_dict({k: torch.as_tensor(v) for k, v in initial.state.items()})  # every key, as the user saved it
    with torch.no_grad():
        x = spec.act_t.to_float(x_raw)
        # the fixed-point grid clamps its inputs to the grid range; the float model is asked the same
        lo, hi = spec.grid_range
        want = model(torch.from_numpy(np.clip(x, lo, hi))).numpy()
    learner = make_learner(spec, initial=initial.coefficients)
    got = spec.act_t.to_float(learner.run_raw(x_raw, np.zeros((x_raw.shape[0], spec.n_outputs), np.int64), train=False))
    diff = got - want
    return {"samples": int(x_raw.shape[0]), "rms": float(np.sqrt(np.mean(diff**2))), "max_abs": float(np.max(np.abs(diff))),
            "float_rms": float(np.sqrt(np.mean(want**2)))}
