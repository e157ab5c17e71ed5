"""Perplexity of the real Gemma-3-270M (GGUF dequantized) on held-out Wikipedia text."""

import math

import pytest
import torch

from codesign.llm import perplexity, token_stream
from tests.support import requires_llm

pytestmark = [requires_llm, pytest.mark.slow]


def test_loaded_model_is_the_dequantized_gguf(gemma):
    model, tokenizer = gemma
    assert type(model).__name__ == "Gemma3ForCausalLM"
    assert model.config.num_hidden_layers == 18 and model.config.head_dim == 256
    assert next(model.parameters()).dtype == torch.float32
    ids = tokenizer("The capital of France is", return_tensors="pt")
    out = model.generate(**ids, max_new_tokens=7, do_sample=False)
    # the greedy continuation of the model loaded straight from the GGUF (no conversion cache)
    assert tokenizer.decode(out[0, ids["input_ids"].shape[1]:]) == " the capital of the country of France"


def test_chunked_perplexity_equals_the_models_own_loss(gemma):
    model, tokenizer = gemma
    tokens = token_stream(tokenizer, "test", 128)
    with torch.no_grad():
        loss = model(tokens[None], labels=tokens[None]).loss
    result = perplexity(model, tokens, context=128, logit_rows=48)  # 3 logit chunks
    assert result.n_scored == 127
    assert math.isclose(result.mean_nll, float(loss), rel_tol=1e-4)
    assert 3 < result.perplexity < 100  # a 270M model on encyclopedic text


def test_windows_score_every_token_once(gemma):
    model, tokenizer = gemma
    tokens = token_stream(tokenizer, "test", 120)
    chunked = perplexity(model, tokens, context=60)
    sliding = perplexity(model, tokens, context=60, stride=30)
    assert chunked.n_scored == 118 and sliding.n_scored == 119
    # per window: 59 + 59 chunked; 59 + 30 + 30 sliding; the sums are the total NLL
    assert chunked.window_tokens == (59, 59) and sliding.window_tokens == (59, 30, 30)
    for result in (chunked, sliding):
        assert math.isclose(sum(result.window_nll) / result.n_scored, result.mean_nll, rel_tol=1e-12)
    assert sliding.mean_nll < chunked.mean_nll  # more context per token
    with pytest.raises(ValueError, match="stride must be in 1..context=60, got 61"):
        perplexity(model, tokens, context=60, stride=61)
