"""Per-sample disagreement across K perturbed forward passes, and the sample weights it gives.

Three measures of how much the K weight realizations disagree on one sample, from logits
shaped (K, B, classes):

- ``vote``: 1 − (votes of the most-voted class)/K, in [0, 1 − 1/K]; 0 when every
  realization predicts the same class, so only samples whose prediction flips count.
- ``mi``: mutual information between prediction and realization (BALD),
  H(mean_k p_k) − mean_k H(p_k), in nats; also sees confidence changes without a flip.
- ``kl``: mean_k KL(p_clean ‖ p_k), how far each realization moves from the unperturbed
  prediction (needs one extra clean forward pass).

One realization (K = 1) has no diversity: every measure is 0 then, and so are values below
``ROUND_OFF`` (identical realizations give ±1e-9 of round-off, not disagreement).

Weights: w_i = (1 − strength) + strength · d_i / mean(d) (uniform when mean(d) = 0), so the
batch mean is 1 and the smallest weight is 1 − strength; then clipped at ``weight_max`` by
scaling the spread around 1 down until the largest weight is ``weight_max``
(w ← 1 + t·(w − 1), t = (weight_max − 1)/(max w − 1)), which keeps the mean exactly 1 and
the order of the samples (cutting only the largest weights and renormalizing would undo
the cut when one sample holds most of the disagreement). They are detached: no gradient
flows through the weighting.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["MEASURES", "ROUND_OFF", "check_measure", "disagreement", "disagreement_weights"]

MEASURES: dict[str, str] = {
    "vote": "fraction of realizations outside the majority vote",
    "mi": "mutual information H(mean p) - mean H(p) (nats)",
    "kl": "mean KL(clean || perturbed) (nats)",
}
ROUND_OFF = 1e-6


def check_measure(name: object) -> str:
    """A known disagreement measure or a one-line ValueError."""
    if name not in MEASURES:
        raise ValueError(f"unknown disagreement measure {name!r}: choose one of {', '.join(MEASURES)}")
    return name  # type: ignore[return-value]


def _entropy(log_p: Tensor) -> Tensor:
    return -(log_p.exp() * log_p).sum(-1)


@torch.no_grad()
def disagreement(measure: str, logits: Tensor, clean_logits: Tensor | None = None) -> Tensor:
    """Per-sample disagreement (B,) of K realizations' logits (K, B, classes); see the module docstring."""
    check_measure(measure)
    if logits.dim() != 3:
        raise ValueError(f"logits of shape {tuple(logits.shape)}: expected (K, batch, classes)")
    k, batch, classes = logits.shape
    if k == 1:
        return logits.new_zeros(batch)
    logits = logits.detach().float()
    if measure == "vote":
        votes = torch.zeros(batch, classes, dtype=logits.dtype, device=logits.device)
        votes.scatter_add_(1, logits.argmax(-1).T, torch.ones(batch, k, dtype=logits.dtype, device=logits.device))
        d = 1.0 - votes.amax(-1) / k
    elif measure == "mi":
        log_p = torch.log_softmax(logits, -1)
        log_mean = torch.logsumexp(log_p, 0) - torch.log(torch.tensor(float(k)))
        d = _entropy(log_mean) - _entropy(log_p).mean(0)
    else:
        if clean_logits is None or clean_logits.shape != (batch, classes):
            raise ValueError(f"measure 'kl' needs the clean logits of shape ({batch}, {classes})")
        log_clean = torch.log_softmax(clean_logits.detach().float(), -1)
        log_p = torch.log_softmax(logits, -1)
        d = (log_clean.exp() * (log_clean - log_p)).sum(-1).mean(0)
    return torch.where(d > ROUND_OFF, d, torch.zeros_like(d))


@torch.no_grad()
def disagreement_weights(d: Tensor, strength: float = 0.8, weight_max: float = 4.0) -> Tensor:
    """Sample weights (B,) from disagreements d (B,): mean 1, at least 1 − strength, clipped at weight_max."""
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength={strength!r}: must be in [0, 1]")
    if not weight_max >= 1.0:
        raise ValueError(f"weight_max={weight_max!r}: must be >= 1 (the mean weight is 1)")
    d = d.detach()
    mean = d.mean()
    if not mean > 0:
        return torch.ones_like(d)
    w = (1.0 - strength) + strength * d / mean
    top = float(w.max())
    if top > weight_max:
        w = 1.0 + (w - 1.0) * ((weight_max - 1.0) / (top - 1.0))
    return w
