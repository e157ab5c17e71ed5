"""The attention drop-ins in the real Gemma-3-270M: exactness, generation with transformers' cache, perplexity."""

import warnings

import pytest
import torch

from tests.support import requires_llm

pytestmark = [requires_llm, pytest.mark.slow]


@pytest.fixture(scope="module")
def tokens(gemma):
    from codesign.llm import token_stream

    return token_stream(gemma[1], "test", 530)


def cores(model, make):
    from codesign.attention.gemma import gemma_attention_replacements

    return gemma_attention_replacements(model, make)


@torch.no_grad()
def test_exact_core_is_gemmas_attention(gemma, tokens):
    # 530 tokens: the sliding-window layers (window 512) must drop their oldest keys
    from codesign.attention.gemma import ExactCore, SantaCore
    from codesign.llm import swapped

    model, _ = gemma
    reference = model.get_decoder()(tokens[None]).last_hidden_state
    with swapped(model, cores(model, lambda i: ExactCore())):
        exact = model.get_decoder()(tokens[None]).last_hidden_state
    assert torch.allclose(exact, reference, atol=1e-4)
    with swapped(model, cores(model, lambda i: SantaCore(ratio=4))):
        sampled = model.get_decoder()(tokens[None, :64]).last_hidden_state
    assert not torch.allclose(sampled, reference[:, :64], atol=1e-2)


@torch.no_grad()
def test_generation_through_the_cache(gemma, tokens):
    from codesign.attention import reset_fallback_warnings
    from codesign.attention.gemma import ExactCore, LowRankCore, SantaCore, collect_kv_moments, fit_gemma_projections
    from codesign.llm import swapped

    model, tokenizer = gemma
    prompt = tokenizer("The Eiffel Tower is located in", return_tensors="pt")
    length = prompt["input_ids"].shape[1]
    expected = model.generate(**prompt, max_new_tokens=6, do_sample=False)[0, length:]
    with swapped(model, cores(model, lambda i: ExactCore())):
        exact = model.generate(**prompt, max_new_tokens=6, do_sample=False)[0, length:]
    assert torch.equal(exact, expected)
    # full rank, float16 latent: decode steps go through lowrank_decode_attention on the latent cache
    projections = fit_gemma_projections(collect_kv_moments(model, tokens[:256], context=256), 1.0)
    assert all(p.kept_fraction() == 1.0 for p in projections)
    reset_fallback_warnings()
    with warnings.catch_warnings(record=True) as caught, swapped(model, cores(model, lambda i: LowRankCore(projections[i]))):
        warnings.simplefilter("always")
        lowrank = model.generate(**prompt, max_new_tokens=6, do_sample=False)[0, length:]
    assert torch.equal(lowrank, expected)
    assert sum("torch reference attention" in str(w.message) for w in caught) == 1  # float32 on CPU: one warning
    # SANTA's one-token steps go through santa_attention (its fallback warns once), the prompt through the rows path
    reset_fallback_warnings()
    with warnings.catch_warnings(record=True) as caught, swapped(model, cores(model, lambda i: SantaCore(2, seed=i))):
        warnings.simplefilter("always")
        sampled = model.generate(**prompt, max_new_tokens=6, do_sample=False)[0, length:]
    assert sampled.shape == (6,) and int(sampled.max()) < model.config.vocab_size
    assert sum("torch reference attention" in str(w.message) for w in caught) == 1


@torch.no_grad()
def test_perplexity_with_compressed_attention(gemma, tokens):
    from codesign.attention.gemma import LowRankCore, SantaCore, collect_kv_moments, fit_gemma_projections
    from codesign.llm import perplexity, swapped, token_stream

    model, tokenizer = gemma
    text = tokens[:128]
    dense = perplexity(model, text, context=128).perplexity
    santa = {}
    for ratio in (2, 8):
        with swapped(model, cores(model, lambda i, ratio=ratio: SantaCore(ratio=ratio, seed=i))):
            santa[ratio] = perplexity(model, text, context=128).perplexity
    moments = collect_kv_moments(model, token_stream(tokenizer, "train", 256), context=256)
    ppl = {}
    for keep in (0.75, 0.25):
        projections = fit_gemma_projections(moments, keep)
        assert sum(sum(p.key_ranks) + sum(p.value_ranks) for p in projections) == round(keep * 18 * 2 * 256)
        with swapped(model, cores(model, lambda i, projections=projections: LowRankCore(projections[i], bits=8))):
            ppl[keep] = perplexity(model, text, context=128).perplexity
    # more samples or channels, less loss; with 128-token contexts and 256 calibration tokens the
    # losses are far larger than at the benchmark's budget (docs/attention.md)
    assert dense < santa[2] < santa[8], (dense, santa)
    assert dense < ppl[0.75] < 2 * dense < ppl[0.25], (dense, ppl)


@torch.no_grad()
def test_bernoulli_queries_in_front_of_a_core(gemma, tokens):
    from codesign.attention.gemma import BernoulliQueryCore, ExactCore, SantaCore
    from codesign.llm import swapped

    model, tokenizer = gemma
    window = tokens[None, :96]
    with swapped(model, cores(model, lambda i: ExactCore())):
        exact = model.get_decoder()(window).last_hidden_state
    with swapped(model, cores(model, lambda i: BernoulliQueryCore(1.0))):
        assert torch.equal(model.get_decoder()(window).last_hidden_state, exact)  # density 1: the query itself
    made = []
    with swapped(model, cores(model, lambda i: made.append(BernoulliQueryCore(0.5, seed=i)) or made[-1])):
        sampled = model.get_decoder()(window).last_hidden_state
    assert torch.isfinite(sampled).all() and not torch.allclose(sampled, exact, atol=1e-2)
    share = sum(c.features_read for c in made) / sum(c.rows for c in made)
    assert abs(share - 0.5) < 0.01  # the keys' features the scores read
    prompt = tokenizer("The Eiffel Tower is located in", return_tensors="pt")
    with swapped(model, cores(model, lambda i: BernoulliQueryCore(0.5, SantaCore(4, seed=i), seed=i))):
        generated = model.generate(**prompt, max_new_tokens=4, do_sample=False)  # decode steps through the cache
    assert generated.shape[1] == prompt["input_ids"].shape[1] + 4
