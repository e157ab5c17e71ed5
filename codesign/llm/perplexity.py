"""Perplexity of a causal LM on a token stream, in fixed windows, with the vocabulary projection chunked.

Protocol (fixed, so numbers compare across methods): the stream is cut into windows of `context`
tokens starting at 0, stride, 2*stride, ... Chunked (stride == context, the default): every window
starts from an empty context and scores its tokens 1..L-1, so a token sees between 1 and context-1
tokens before it. Sliding (stride < context): each later window scores only its last `stride`
tokens, which then see at least context - stride tokens. Every scored token is scored once.
Logits are computed `logit_rows` rows at a time: Gemma's 262k-entry vocabulary makes a full
[context, vocab] logit matrix gigabytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch

__all__ = ["PerplexityResult", "perplexity", "next_token_nll", "next_token_log_probs", "next_token_kl", "window_mean_nll",
           "logit_chunks"]


@dataclass(frozen=True)
class PerplexityResult:
    """Perplexity = exp(mean negative log-likelihood, nats) over n_scored tokens; per window, the summed NLL and the
    tokens scored (what a bootstrap over windows resamples)."""

    perplexity: float
    mean_nll: float
    n_scored: int
    context: int
    stride: int
    window_nll: tuple[float, ...] = ()
    window_tokens: tuple[int, ...] = ()


def logit_chunks(model: torch.nn.Module, hidden: torch.Tensor, logit_rows: int = 128) -> Iterator[tuple[int, torch.Tensor]]:
    """(first row, float32 logits [rows, vocab]) of the model's head on hidden states [R, d], logit_rows rows at a time,
    with the model's final soft-cap (Gemma's) applied."""
    head = model.get_output_embeddings()
    cap = getattr(model.config, "final_logit_softcapping", None)
    for start in range(0, hidden.shape[0], logit_rows):
        logits = head(hidden[start : start + logit_rows]).float()
        if cap:
            logits = torch.tanh(logits / cap) * cap
        yield start, logits


def next_token_nll(model: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, logit_rows: int = 128) -> torch.Tensor:
    """Per-row NLL (nats, float32) of targets [R] under the model's head on hidden states [R, d], logit_rows rows at a time."""
    return torch.cat([torch.nn.functional.cross_entropy(logits, targets[start : start + logits.shape[0]], reduction="none")
                      for start, logits in logit_chunks(model, hidden, logit_rows)])


def next_token_log_probs(model: torch.nn.Module, window: torch.Tensor) -> torch.Tensor:
    """Next-token log-probabilities [T - 1, vocab] (float32) of a causal LM on one window of token ids [T]."""
    hidden = model.base_model(input_ids=window[None]).last_hidden_state[0, :-1]
    return torch.cat([logits.log_softmax(-1) for _, logits in logit_chunks(model, hidden)])


def next_token_kl(model: torch.nn.Module, window: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Mean over positions of KL(teacher ‖ model), teacher: next_token_log_probs of the reference on the same window."""
    student = next_token_log_probs(model, window)
    teacher = teacher.float()
    return (teacher.exp() * (teacher - student)).sum(-1).mean()


def window_mean_nll(model: torch.nn.Module, window: torch.Tensor, logit_rows: int = 128) -> float:
    """Mean next-token NLL (nats) of a window's tokens 1..T-1 given the tokens before them in the window."""
    total, count = _window_nll(model, window, 0, logit_rows)
    return total / count


def _window_nll(model: torch.nn.Module, window: torch.Tensor, first_scored: int, logit_rows: int) -> tuple[float, int]:
    hidden = model.base_model(input_ids=window[None]).last_hidden_state[0]
    # position t predicts token t + 1
    start = max(first_scored - 1, 0)
    nll = next_token_nll(model, hidden[start:-1], window[start + 1 :], logit_rows)
    return float(nll.sum()), nll.numel()


@torch.no_grad()
def perplexity(
    model: torch.nn.Module,
    tokens: torch.Tensor,
    context: int = 512,
    stride: int | None = None,
    logit_rows: int = 128,
) -> PerplexityResult:
    """Perplexity of a transformers causal LM on a 1-D token stream (see the module doc for the protocol)."""
    stride = context if stride is None else stride
    if tokens.dim() != 1 or tokens.numel() < 2:
        raise ValueError(f"tokens must be a 1-D stream of at least 2 tokens, got shape {tuple(tokens.shape)}")
    if context < 2:
        raise ValueError(f"context must be at least 2 tokens, got {context}")
    if not 1 <= stride <= context:
        raise ValueError(f"stride must be in 1..context={context}, got {stride}")
    device = next(model.parameters()).device
    tokens = tokens.to(device)
    sums: list[float] = []
    counts: list[int] = []
    start = 0
    while True:
        window = tokens[start : start + context]
        first_scored = 1 if start == 0 or stride == context else context - stride
        if window.numel() > first_scored:
            nll, n = _window_nll(model, window, first_scored, logit_rows)
            sums.append(nll)
            counts.append(n)
        if start + context >= tokens.numel():
            break
        start += stride
    mean = sum(sums) / sum(counts)
    return PerplexityResult(math.exp(mean), mean, sum(counts), context, stride, tuple(sums), tuple(counts))
