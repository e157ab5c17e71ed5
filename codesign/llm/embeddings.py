"""Sentence embeddings of a BERT-style encoder (MiniLM) and their cosine similarity to a reference model's.

As the all-MiniLM-L6-v2 model card prescribes: token embeddings of the last layer, mean-pooled
over the attention mask, then L2-normalized. Sentences are truncated at `max_length` tokens (256,
the model's sentence-transformers setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["SimilarityResult", "sentence_embeddings", "embedding_similarity"]


@dataclass(frozen=True)
class SimilarityResult:
    """Cosine similarity of a modified encoder's sentence embeddings to the reference's, over n sentences."""

    mean_cosine: float
    min_cosine: float
    n_sentences: int


@torch.no_grad()
def sentence_embeddings(
    model: torch.nn.Module, tokenizer, sentences: Sequence[str], batch_size: int = 64, max_length: int = 256
) -> torch.Tensor:
    """L2-normalized mean-pooled embeddings [len(sentences), hidden] (float32)."""
    if not sentences:
        raise ValueError("no sentences to embed")
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(sentences), batch_size):
        batch = tokenizer(
            list(sentences[start : start + batch_size]), padding=True, truncation=True,
            max_length=max_length, return_tensors="pt",
        ).to(device)
        tokens = model(**batch).last_hidden_state.float()
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        out.append(torch.nn.functional.normalize(pooled, dim=-1))
    return torch.cat(out)


def embedding_similarity(
    reference: torch.Tensor, model: torch.nn.Module, tokenizer, sentences: Sequence[str], batch_size: int = 64,
    max_length: int = 256,
) -> SimilarityResult:
    """Cosine of model's embeddings to precomputed reference embeddings of the same sentences (cut at max_length tokens)."""
    if reference.shape[0] != len(sentences):
        raise ValueError(f"{reference.shape[0]} reference embeddings for {len(sentences)} sentences")
    cosine = (sentence_embeddings(model, tokenizer, sentences, batch_size, max_length) * reference).sum(-1)
    return SimilarityResult(float(cosine.mean()), float(cosine.min()), len(sentences))
