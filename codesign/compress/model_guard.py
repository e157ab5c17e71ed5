"""A whole-model guard for SRR: keep a layer's preserved subspace only where the model's next-token distribution gains.

SRR's own guard compares one layer's output error with and without the preserved subspace. On
Gemma-3-270M with error feedback, every layer- and block-level measure favours SRR where the whole
model does not (docs/compress_models.md: the errors compound across blocks). This guard scores the
whole model: the mean KL(original ‖ quantized) of the next-token distribution on windows of text the
quantizers did not calibrate on (scored on their own calibration text, SRR's choices look better than
they are: docs/compress_models.md). The layers where SRR kept k > 0 are grouped into units (one kind of
layer, the last part of its name, within one of `depth_groups` equal spans of the blocks from 0 to the
deepest of those layers); each unit is scored alone on the scaled-QER fallback (SRR's own k = 0
candidate), then the units that gained are added greedily, largest gain first. A unit counts as a gain
only when the per-window KL differences, paired, fall by more than `confidence` standard errors: with a
few windows a small mean gain is as likely noise. When none gains, the model is scaled QER everywhere.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from codesign.compress.linear import QuantizedLinear
from codesign.compress.qer import QERConfig
from codesign.compress.qtensor import LowRankQuantizedWeight
from codesign.llm import swapped
from codesign.llm.perplexity import next_token_kl, next_token_log_probs, window_mean_nll

OBJECTIVES = ("nll", "kl")

__all__ = ["OBJECTIVES", "ModelGuardConfig", "check_guarded_config", "guard_units", "choose_by_model", "srr_model_guard"]


@dataclass(frozen=True)
class ModelGuardConfig:
    """windows: token windows the objective is measured on, held aside from calibration; depth_groups: spans of the depth
    a unit covers; confidence: standard errors of the paired per-window difference a gain must exceed;
    objective: "nll", the windows' own next-token negative log-likelihood (what perplexity measures), or "kl",
    KL(original ‖ quantized) of the next-token distribution."""

    windows: int = 8
    depth_groups: int = 3
    confidence: float = 2.0
    objective: str = "nll"

    def __post_init__(self) -> None:
        for field_name in ("windows", "depth_groups"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"model guard {field_name} must be a positive integer, got {value!r}")
        if isinstance(self.confidence, bool) or not isinstance(self.confidence, (int, float)) or self.confidence < 0:
            raise ValueError(f"model guard confidence must be a number >= 0, got {self.confidence!r}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"model guard objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")


def check_guarded_config(config: object) -> None:
    """ValueError unless config is SRR choosing its own preserved rank (what the guard chooses between)."""
    if not (isinstance(config, QERConfig) and config.method == "srr" and config.preserved_rank is None):
        raise ValueError("the model guard chooses SRR's preserved rank: it applies to QERConfig('srr') "
                         "with preserved_rank=None")


def _depth_index(name: str) -> int:
    """The last integer in a module path (the decoder block of 'model.layers.12.mlp.up_proj'); 0 without one."""
    numbers = re.findall(r"(?:^|\.)(\d+)(?=\.|$)", name)
    return int(numbers[-1]) if numbers else 0


def guard_units(names: Sequence[str], depth_groups: int) -> dict[str, list[str]]:
    """Unit label -> layer names: one kind of layer (last name part) in one of depth_groups spans of blocks 0..deepest."""
    depth = max((_depth_index(n) for n in names), default=0) + 1
    groups = min(depth_groups, depth)
    units: dict[str, list[str]] = {}
    for name in names:
        span = _depth_index(name) * groups // depth
        first, last = -(-span * depth // groups), -(-(span + 1) * depth // groups) - 1
        units.setdefault(f"{name.rsplit('.', 1)[-1]} in blocks {first}-{last}", []).append(name)
    return units


def choose_by_model(
    model: torch.nn.Module,
    fallback: Mapping[str, torch.nn.Module],
    alternative: Mapping[str, torch.nn.Module],
    windows: Sequence[torch.Tensor],
    depth_groups: int = 3,
    progress: Callable[[str], None] | None = None,
    confidence: float = 2.0,
    objective: str = "nll",
) -> tuple[list[str], dict[str, float]]:
    """The layers of `alternative` to take instead of `fallback` by the whole model's objective on windows.

    model holds its original modules (the teacher of "kl"); fallback: every replaced layer (the model is scored with
    all of them swapped in); alternative: the layers with a second choice. Returns the chosen names and the
    mean objective (per window, then over windows) of the fallback everywhere and of the choice.
    """
    if not set(alternative) <= set(fallback):
        raise ValueError("every layer with an alternative needs a fallback")
    if objective not in OBJECTIVES:
        raise ValueError(f"model guard objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    say = progress or (lambda _: None)
    teacher: list[torch.Tensor] = []
    if objective == "kl":
        with torch.no_grad():
            teacher = [next_token_log_probs(model, w).half() for w in windows]  # half: the vocabulary makes these large

    def window_score(window: torch.Tensor, i: int) -> float:
        if objective == "kl":
            return float(next_token_kl(model, window, teacher[i]))
        return window_mean_nll(model, window)

    def score(chosen: Sequence[str]) -> torch.Tensor:
        with torch.no_grad(), swapped(model, {**fallback, **{n: alternative[n] for n in chosen}}):
            return torch.tensor([window_score(w, i) for i, w in enumerate(windows)], dtype=torch.float64)

    def gains(trial: torch.Tensor, against: torch.Tensor) -> bool:
        diff = trial - against
        spread = float(diff.std()) / len(diff) ** 0.5 if len(diff) > 1 else 0.0
        return float(diff.mean()) < -confidence * spread  # confidence and spread >= 0: a gain is a fall

    best = base = score([])
    say(f"{objective} with the fallback everywhere {float(base.mean()):.4f}")
    units = guard_units(list(alternative), depth_groups)
    alone = {}
    for label, layers in units.items():
        alone[label] = score(layers)
        say(f"{label}: {objective} {float(alone[label].mean()):.4f} alone ({float(alone[label].mean() / base.mean()) - 1:+.2%}, "
            f"{'a gain' if gains(alone[label], base) else 'no gain'})")
    chosen: list[str] = []
    for label in sorted((u for u in units if gains(alone[u], base)), key=lambda u: float(alone[u].mean())):
        trial = score(chosen + units[label]) if chosen else alone[label]
        kept = gains(trial, best)
        if kept:
            best, chosen = trial, chosen + units[label]
        say(f"adding {label}: {objective} {float(trial.mean()):.4f} ({'kept' if kept else 'dropped'})")
    return chosen, {"fallback": float(base.mean()), "chosen": float(best.mean())}


def srr_model_guard(
    model: torch.nn.Module,
    replacements: Mapping[str, torch.nn.Module],
    covariances: Mapping[str, torch.Tensor],
    config: QERConfig,
    windows: Sequence[torch.Tensor],
    guard: ModelGuardConfig = ModelGuardConfig(),
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, torch.nn.Module], dict[str, float]]:
    """SRR's replacements with the whole-model guard applied: where it does not gain, a layer takes SRR's k = 0 result.

    replacements: QuantizedLinears built with `config` (SRR, preserved_rank None) from model's linears, which
    model still holds; covariances: their input second moments. Returns the guarded replacements and a summary
    (guard_layers: layers where SRR kept k > 0; guard_chosen: those that keep it; guard_score_*: the objective's
    mean with scaled QER in all of them and with the choice).
    """
    check_guarded_config(config)
    if len(windows) < 1:
        raise ValueError("the model guard needs at least one window to score on")
    kept = [n for n, m in replacements.items()
            if isinstance(m, QuantizedLinear) and isinstance(m.qweight, LowRankQuantizedWeight) and m.qweight.preserved_rank > 0]
    summary = {"guard_layers": float(len(kept)), "guard_chosen": 0.0}
    if not kept:
        return dict(replacements), summary
    modules = dict(model.named_modules())
    zero_config = dataclasses.replace(config, preserved_rank=0)
    fallback = dict(replacements)  # every layer quantized while the guard scores: the layers without a choice too
    for n in kept:
        linear = modules[n]
        kernel = getattr(replacements[n], "kernel", "auto")
        fallback[n] = QuantizedLinear.from_linear(linear, zero_config, covariances[n], kernel=kernel).to(linear.weight.device)
    chosen, scores = choose_by_model(model, fallback, {n: replacements[n] for n in kept}, windows[:guard.windows],
                                 guard.depth_groups, progress, guard.confidence, guard.objective)
    guarded = {**replacements, **{n: fallback[n] for n in kept if n not in chosen}}
    return guarded, {**summary, "guard_chosen": float(len(chosen)), "guard_score_fallback": scores["fallback"],
                     "guard_score_chosen": scores["chosen"]}
