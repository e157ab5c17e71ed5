"""End-to-end tuning of a quantized causal LM's stored scales and levels by distillation of the original's next-token distribution.

Block-wise tuning (block_tune.py) matches each block's output; what a user measures is the model's
next-token distribution, which no block-level objective sees whole. With every code fixed, the stored
group scales (log space) and per-layer k-means levels of all quantized layers are trained together by
Adam to minimize KL(original ‖ quantized) of the next-token distributions on calibration windows
(EfficientQAT's end-to-end stage, here with the original model as the teacher rather than the text's
own tokens, and only the stored continuous values trained, so the format and its size do not change).
The last windows (`holdout`) are not trained on: the model keeps the evaluation point of least mean
KL on them, and its untuned values when none improves on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from codesign.compress.block_tune import TunedLinear
from codesign.llm import swapped
from codesign.llm.perplexity import next_token_kl, next_token_log_probs

__all__ = ["EndToEndConfig", "tune_end_to_end"]


@dataclass(frozen=True)
class EndToEndConfig:
    """epochs: passes over the training windows; lr: Adam's step on log-scales and levels; holdout: share of windows
    kept aside to pick the evaluation point; evaluations: holdout evaluations per epoch. The defaults were chosen on
    validation text with 3-bit Gemma-3-270M (docs/compress_models.md)."""

    epochs: int = 4
    lr: float = 3e-3
    holdout: float = 0.125
    evaluations: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for field_name in ("epochs", "evaluations"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"end-to-end {field_name} must be a positive integer, got {value!r}")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"end-to-end learning rate must lie in (0, 1), got {self.lr!r}")
        if not 0 < self.holdout < 1:
            raise ValueError(f"end-to-end holdout must lie in (0, 1), got {self.holdout!r}")


def tune_end_to_end(
    model: torch.nn.Module,
    replacements: Mapping[str, torch.nn.Module],
    windows: Sequence[torch.Tensor],
    config: EndToEndConfig = EndToEndConfig(),
    progress: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """Tune the scales (and levels) of the QuantizedLinears in `replacements` in place; model holds the originals.

    windows: 1-D token tensors of the calibration text. Returns the holdout KL before and after.
    """
    if len(windows) < 2:
        raise ValueError(f"end-to-end tuning needs at least 2 calibration windows, got {len(windows)}")
    held = max(1, round(len(windows) * config.holdout))
    train, check = list(windows[:-held]), list(windows[-held:])
    teacher_check = [_teacher(model, w) for w in check]
    tuned = {name: TunedLinear(module) for name, module in replacements.items()}
    frozen = [p for p in model.parameters() if p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    say = progress or (lambda _: None)
    try:
        optimizer = torch.optim.Adam([p for t in tuned.values() for p in t.trainable()], lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed)
        every = max(1, len(train) // config.evaluations)

        def holdout_kl() -> float:
            with torch.no_grad(), swapped(model, tuned):
                return sum(float(next_token_kl(model, w, t)) for w, t in zip(check, teacher_check)) / len(check)

        before = best = holdout_kl()
        say(f"holdout KL before tuning {before:.4f}")
        best_state: dict[str, list[torch.Tensor]] | None = None
        for epoch in range(config.epochs):
            for step, i in enumerate(torch.randperm(len(train), generator=generator).tolist(), 1):
                teacher = _teacher(model, train[i])
                optimizer.zero_grad(set_to_none=True)
                with torch.enable_grad(), swapped(model, tuned):
                    loss = next_token_kl(model, train[i], teacher)
                    loss.backward()
                optimizer.step()
                if step % every == 0 or step == len(train):
                    now = holdout_kl()
                    say(f"epoch {epoch + 1}, step {step}/{len(train)}: train KL {loss.item():.4f}, holdout KL {now:.4f}")
                    if now < best:
                        best, best_state = now, {n: t.state() for n, t in tuned.items()}
        for name, state in (best_state or {}).items():  # untouched otherwise: the stored values stay bit for bit
            tuned[name].load(state)
            tuned[name].write_back()
    finally:
        for p in frozen:
            p.requires_grad_(True)
    return {"holdout_before": before, "holdout_after": best}


@torch.no_grad()
def _teacher(model: torch.nn.Module, window: torch.Tensor) -> torch.Tensor:
    return next_token_log_probs(model, window)
