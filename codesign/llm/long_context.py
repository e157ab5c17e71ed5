"""Long-context perplexity: held-out articles joined into long contexts, the last tokens of each scored.

Protocol (fixed, so numbers compare across methods and context lengths):
- A context is consecutive whole articles of one split, each BOS + its tokens, cut at `length`
  tokens; the article cut at the end is not used again, so no article is in two contexts and a
  context never mixes splits (held-out contexts come from `test` only).
- The first `length - tail` tokens are the prefix, prefilled once with exact attention; the KV
  cache it leaves is what an attention method starts from (a method stores its own form of the
  prefix's keys and values: rotated keys, or quantized latents). The last `tail` tokens are then
  run in one pass through the method, every row as the decode step it would be, and scored: each
  scored token sees at least `length - tail` tokens before it.
- Only the layers a method replaces change; Gemma-3's sliding-window layers keep their window.
- The interval is a bootstrap over documents: the scored tokens grouped by (context, article),
  groups resampled with replacement; a paired interval of the perplexity ratio to a reference
  resamples the same groups for both.
- Fidelity (`evaluate(..., fidelity=True)`): per scored token, the KL divergence from the exact
  model's next-token distribution to the method's, and whether their most likely tokens agree.
  Unlike perplexity it is not improved by a method that drops history the scored text does not
  need (joined articles do not need each other): any change of the distribution counts.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from codesign.llm.perplexity import logit_chunks, next_token_nll

__all__ = ["LongContext", "TailScores", "long_contexts", "prefix_length", "prefill", "reference_logprobs", "reference_tails",
           "score_tail", "bootstrap_perplexity", "bootstrap_ratio", "paired_ratio_interval", "bootstrap_mean",
           "report_cells", "report_numbers", "concat", "evaluate"]


@dataclass(frozen=True)
class LongContext:
    """One context: tokens [L] and, per token, the index of its article in the split it came from."""

    tokens: torch.Tensor
    article: torch.Tensor
    split: str = ""


@dataclass(frozen=True)
class TailScores:
    """Negative log-likelihoods (nats) of the scored tokens and the document each belongs to; when scored against a
    reference distribution, each token's KL divergence from it (nats) and whether the most likely tokens agree (0/1)."""

    nll: torch.Tensor
    document: torch.Tensor
    kl: torch.Tensor | None = None
    agree: torch.Tensor | None = None

    @property
    def perplexity(self) -> float:
        """exp(mean NLL) over every scored token."""
        return math.exp(float(self.nll.mean()))


def long_contexts(tokenizer: Any, split: str, length: int, count: int, skip_articles: int = 0) -> list[LongContext]:
    """`count` contexts of `length` tokens from consecutive whole articles of `split` (see the module doc)."""
    from codesign.llm.wiki import wiki_articles

    if length < 2 or count < 1:
        raise ValueError(f"need a context length >= 2 and a count >= 1, got {length} and {count}")
    bos = tokenizer.bos_token_id
    if bos is None:
        raise ValueError("the tokenizer has no BOS token to separate articles")
    articles = wiki_articles(split)
    contexts: list[LongContext] = []
    ids: list[int] = []
    owner: list[int] = []
    for index in range(skip_articles, len(articles)):
        piece = [bos, *tokenizer(articles[index][1], add_special_tokens=False)["input_ids"]]
        ids.extend(piece)
        owner.extend([index] * len(piece))
        if len(ids) >= length:
            contexts.append(LongContext(torch.tensor(ids[:length]), torch.tensor(owner[:length]), split))
            ids, owner = [], []
            if len(contexts) == count:
                return contexts
    raise ValueError(f"split {split!r} holds only {len(contexts)} contexts of {length} tokens, asked for {count}")


@torch.no_grad()
def prefix_length(context: LongContext, tail: int) -> int:
    """Positions that prefill() runs exactly: all but the last tail + 1 tokens of the context."""
    return context.tokens.numel() - tail - 1


def prefill(model: Any, context: LongContext, tail: int) -> Any:
    """The KV cache (transformers DynamicCache) of an exact pass over the prefix: all but the last tail + 1 tokens.

    The prefix's last token is left to the tail's pass: its position predicts the first scored token.
    """
    if not 1 <= tail <= context.tokens.numel() - 2:
        raise ValueError(f"tail must be in 1..{context.tokens.numel() - 2}, got {tail}")
    limit = getattr(model.config, "max_position_embeddings", None)
    if limit is not None and context.tokens.numel() > limit:
        raise ValueError(f"a context of {context.tokens.numel()} tokens is longer than the model supports ({limit})")
    device = next(model.parameters()).device
    prefix = context.tokens[: prefix_length(context, tail)].to(device)
    return model.get_decoder()(input_ids=prefix[None], use_cache=True).past_key_values


def _method_cache(cache: Any, replaced: Mapping[str, Any], seen: int) -> Any:
    """A copy of an exact prefill's cache of `seen` positions with each replaced layer's keys/values in its core's
    stored form; a sliding-window layer holds only the last of those positions, and they are numbered as such."""
    run = copy.deepcopy(cache)
    for block in replaced.values():
        layer = run.layers[block.layer_idx]
        held = layer.keys.shape[2]
        positions = torch.arange(seen - held, seen, device=layer.keys.device)
        layer.keys, layer.values = block.core.from_exact_cache(block, layer.keys, layer.values, positions)
    return run


def _tail_pass(model: Any, context: LongContext, cache: Any, tail: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden states [tail, d] that predict the scored tokens, the scored tokens [tail]): one pass after `cache`."""
    device = next(model.parameters()).device
    ids = context.tokens[-tail - 1 :].to(device)
    hidden = model.get_decoder()(input_ids=ids[None], cache=cache, use_cache=True).last_hidden_state[0]
    return hidden[:-1], ids[1:]


@torch.no_grad()
def reference_logprobs(model: Any, context: LongContext, cache: Any, tail: int, logit_rows: int = 128) -> torch.Tensor:
    """Next-token log-probabilities [tail, vocab] (float32) of the last `tail` tokens, one pass after `cache`."""
    hidden, _ = _tail_pass(model, context, cache, tail)
    return torch.cat([torch.log_softmax(logits, dim=-1) for _, logits in logit_chunks(model, hidden, logit_rows)])


def reference_tails(model: Any, contexts: Sequence[LongContext], tail: int) -> list[torch.Tensor]:
    """Per context, the next-token log-probabilities [tail, vocab] of `model` after its own exact prefill: the
    references of evaluate(..., references=) when the distribution to stay close to is another model's."""
    return [reference_logprobs(model, context, prefill(model, context, tail), tail) for context in contexts]


@torch.no_grad()
def score_tail(model: Any, context: LongContext, cache: Any, tail: int, document_base: int = 0,
               logit_rows: int = 128, reference: torch.Tensor | None = None) -> TailScores:
    """NLL of the last `tail` tokens of `context`, one pass after `cache` (the prefix's, in the model's layers' form);
    with `reference` (reference_logprobs of the same tokens), also each token's KL from it and top-1 agreement."""
    hidden, targets = _tail_pass(model, context, cache, tail)
    document = context.article[-tail:] + document_base
    if reference is None:
        return TailScores(next_token_nll(model, hidden, targets, logit_rows).double().cpu(), document)
    nll, kl, agree = [], [], []
    for start, logits in logit_chunks(model, hidden, logit_rows):
        logp = torch.log_softmax(logits, dim=-1)
        ref = reference[start : start + logp.shape[0]].to(logp.device)
        nll.append(-logp.gather(1, targets[start : start + logp.shape[0], None])[:, 0])
        kl.append((ref.exp() * (ref - logp)).sum(dim=-1).clamp_(min=0.0))  # ≥ 0; rounding can leave −1e-9
        agree.append((logp.argmax(dim=-1) == ref.argmax(dim=-1)).double())
    return TailScores(torch.cat(nll).double().cpu(), document, torch.cat(kl).double().cpu(), torch.cat(agree).cpu())


def _groups(values: torch.Tensor, document: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per document: (sum of the tokens' values, token count)."""
    _, inverse = torch.unique(document, return_inverse=True)
    n = int(inverse.max()) + 1
    sums = torch.zeros(n, dtype=torch.float64).index_add_(0, inverse, values.double())
    counts = torch.zeros(n, dtype=torch.float64).index_add_(0, inverse, torch.ones_like(values, dtype=torch.float64))
    return sums, counts


def _draws(n: int, resamples: int, seed: int) -> torch.Tensor:
    return torch.randint(0, n, (resamples, n), generator=torch.Generator().manual_seed(seed))


def _percentiles(values: torch.Tensor, level: float) -> tuple[float, float]:
    tail = (1 - level) / 2
    return float(torch.quantile(values, tail)), float(torch.quantile(values, 1 - tail))


def bootstrap_perplexity(scores: TailScores, resamples: int = 2000, seed: int = 0,
                         level: float = 0.95) -> tuple[float, float]:
    """(low, high) percentile interval of the perplexity, documents resampled."""
    sums, counts = _groups(scores.nll, scores.document)
    pick = _draws(sums.numel(), resamples, seed)
    return _percentiles(torch.exp(sums[pick].sum(1) / counts[pick].sum(1)), level)


def bootstrap_mean(values: torch.Tensor, document: torch.Tensor, resamples: int = 2000, seed: int = 0,
                   level: float = 0.95) -> tuple[float, float, float]:
    """(mean per token, low, high) of per-token values (a TailScores' kl or agree), documents resampled."""
    if values.shape != document.shape or values.numel() == 0:
        raise ValueError(f"values {tuple(values.shape)} and documents {tuple(document.shape)}: need one per token")
    sums, counts = _groups(values, document)
    pick = _draws(sums.numel(), resamples, seed)
    low, high = _percentiles(sums[pick].sum(1) / counts[pick].sum(1), level)
    return float(sums.sum() / counts.sum()), low, high


def bootstrap_ratio(scores: TailScores, reference: TailScores, resamples: int = 2000, seed: int = 0,
                    level: float = 0.95) -> tuple[float, float]:
    """(low, high) interval of perplexity / reference perplexity on the same tokens, documents resampled together."""
    if not torch.equal(scores.document, reference.document):
        raise ValueError("the two scores are not of the same tokens")
    sums, counts = _groups(scores.nll, scores.document)
    ref_sums, _ = _groups(reference.nll, reference.document)
    return paired_ratio_interval(sums, ref_sums, counts, resamples, seed, level)


def paired_ratio_interval(nll_sums: Sequence[float] | torch.Tensor, reference_sums: Sequence[float] | torch.Tensor,
                          counts: Sequence[int] | torch.Tensor, resamples: int = 2000, seed: int = 0,
                          level: float = 0.95) -> tuple[float, float]:
    """(low, high) interval of exp((Σ nll - Σ reference nll) / Σ tokens), units (documents, windows) resampled together."""
    sums, ref, n = (torch.as_tensor(v, dtype=torch.float64) for v in (nll_sums, reference_sums, counts))
    if not sums.shape == ref.shape == n.shape or sums.dim() != 1 or sums.numel() == 0:
        raise ValueError(f"need one NLL sum, reference sum and token count per unit, got shapes {tuple(sums.shape)}, "
                         f"{tuple(ref.shape)}, {tuple(n.shape)}")
    pick = _draws(sums.numel(), resamples, seed)
    return _percentiles(torch.exp((sums[pick].sum(1) - ref[pick].sum(1)) / n[pick].sum(1)), level)


def report_cells(scores: TailScores, reference: TailScores, agree_interval: bool = True) -> list[str]:
    """Table cells of a method against a reference on the same tokens: perplexity (95 % CI), its paired ratio to the
    reference ("—" for the reference itself) and, when scored for fidelity, mean KL per token and top-1 agreement."""
    low, high = bootstrap_perplexity(scores)
    cells = [f"{scores.perplexity:.2f} ({low:.2f} … {high:.2f})"]
    if scores is reference:
        cells.append("—")
    else:
        r_low, r_high = bootstrap_ratio(scores, reference)
        cells.append(f"{scores.perplexity / reference.perplexity - 1:+.1%} ({r_low - 1:+.1%} … {r_high - 1:+.1%})")
    if scores.kl is not None and scores.agree is not None:
        kl, kl_low, kl_high = bootstrap_mean(scores.kl, scores.document)
        cells.append(f"{kl:.4f} ({kl_low:.4f} … {kl_high:.4f})")
        if agree_interval:
            agree, a_low, a_high = bootstrap_mean(scores.agree, scores.document)
            cells.append(f"{agree:.1%} ({a_low:.1%} … {a_high:.1%})")
        else:
            cells.append(f"{float(scores.agree.mean()):.1%}")
    return cells


def report_numbers(scores: TailScores, reference: TailScores) -> dict[str, Any]:
    """The numbers behind report_cells, for a JSON record: perplexity, its ratio to the reference with the paired 95 %
    interval, and (scored for fidelity) the mean KL with its interval and the top-1 agreement."""
    ratio = (1.0, 1.0, 1.0) if scores is reference else (scores.perplexity / reference.perplexity,
                                                           *bootstrap_ratio(scores, reference))
    out: dict[str, Any] = {"perplexity": scores.perplexity, "ratio_and_ci": ratio}
    if scores.kl is not None and scores.agree is not None:
        out |= {"kl_and_ci": bootstrap_mean(scores.kl, scores.document), "top1": float(scores.agree.mean())}
    return out


def concat(scores: Sequence[TailScores]) -> TailScores:
    """The scores of several contexts as one (kl and agree kept when every part has them)."""
    def joined(field: str) -> torch.Tensor | None:
        parts = [getattr(s, field) for s in scores]
        return None if any(p is None for p in parts) else torch.cat(parts)
    return TailScores(torch.cat([s.nll for s in scores]), torch.cat([s.document for s in scores]),
                      joined("kl"), joined("agree"))


def evaluate(model: Any, contexts: Sequence[LongContext], tail: int,
             methods: Mapping[str, Callable[[], Mapping[str, torch.nn.Module]] | None],
             progress: Callable[[str], None] = print, fidelity: bool = False,
             references: Sequence[torch.Tensor] | None = None) -> dict[str, TailScores]:
    """Scores of every method on every context; a method is a factory of attention replacements (None: as loaded).

    The prefix is prefilled once per context, exactly; each method then starts from its own copy of that cache.
    fidelity: also score each token's KL from the model as loaded and top-1 agreement with it (one more tail pass per
    context, and its [tail, vocab] log-probabilities held while the methods run); references (reference_tails of
    another model, one per context) replace that pass: e.g. the uncompressed model's, to score a compressed one.
    """
    if references is not None and len(references) != len(contexts):
        raise ValueError(f"{len(references)} references for {len(contexts)} contexts: need one per context")
    from codesign.llm.swap import swapped

    per_method: dict[str, list[TailScores]] = {name: [] for name in methods}
    stride = max(int(c.article.max()) for c in contexts) + 1
    for k, context in enumerate(contexts):
        cache = prefill(model, context, tail)
        if references is not None:
            reference: torch.Tensor | None = references[k]
        else:
            reference = reference_logprobs(model, context, copy.deepcopy(cache), tail) if fidelity else None
        for name, make in methods.items():
            replaced = {} if make is None else make()
            with swapped(model, replaced):
                run = _method_cache(cache, replaced, prefix_length(context, tail))
                per_method[name].append(score_tail(model, context, run, tail, k * stride, reference=reference))
        progress(f"context {k + 1}/{len(contexts)} ({context.tokens.numel()} tokens): {len(methods)} methods scored")
    return {name: concat(s) for name, s in per_method.items()}
