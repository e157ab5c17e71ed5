"""Long-context perplexity: a prefill then a tail pass equals one pass over the context; contexts are whole articles."""

import pytest
import torch

from codesign.attention.gemma import (
    ExactCore,
    LocalCore,
    LowRankCore,
    collect_kv_moments,
    fit_gemma_projections,
    gemma_attention_replacements,
    gemma_global_layers,
)
from codesign.llm import token_stream, wiki_articles
from codesign.llm.long_context import TailScores, bootstrap_mean, concat, evaluate, long_contexts, reference_tails
from tests.support import requires_llm

pytestmark = requires_llm


def _one_pass_nll(model, context, tail: int) -> torch.Tensor:
    with torch.no_grad():
        hidden = model.get_decoder()(input_ids=context.tokens[None]).last_hidden_state[0]
        logits = model.get_output_embeddings()(hidden[-tail - 1 : -1]).float()
    cap = model.config.final_logit_softcapping
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return torch.nn.functional.cross_entropy(logits, context.tokens[-tail:], reduction="none").double()


def test_prefill_then_tail_scores_what_one_pass_over_the_context_scores(gemma):
    model, tokenizer = gemma
    contexts = long_contexts(tokenizer, "test", 700, 2)
    tail = 96
    reference = torch.cat([_one_pass_nll(model, c, tail) for c in contexts])
    moments = collect_kv_moments(model, token_stream(tokenizer, "train", 1024), context=512)
    full_rank = dict(enumerate(fit_gemma_projections(moments, 1.0)))
    scores = evaluate(model, contexts, tail, {
        "as loaded": None,
        "exact on the global layers": lambda: gemma_attention_replacements(model, lambda i: ExactCore(), layers="global"),
        "exact on every layer": lambda: gemma_attention_replacements(model, lambda i: ExactCore()),
        # the control's window as long as the context: nothing is dropped
        "local, window 700": lambda: gemma_attention_replacements(model, lambda i: LocalCore(700), layers="global"),
        "local, window 64": lambda: gemma_attention_replacements(model, lambda i: LocalCore(64), layers="global"),
        # full rank and fp16: the cache's keys are un-rotated, projected and rotated back
        "full-rank latents": lambda: gemma_attention_replacements(
            model, lambda i: LowRankCore(full_rank[i], bits=16), layers="global"),
        # on the sliding-window layers too, whose cache holds only the last 511 of the prefix's positions
        "full-rank latents, every layer": lambda: gemma_attention_replacements(
            model, lambda i: LowRankCore(full_rank[i], bits=16)),
    }, progress=lambda _: None, fidelity=True)
    for name in ("as loaded", "exact on the global layers", "exact on every layer", "local, window 700"):
        assert scores[name].nll.shape == reference.shape
        assert torch.allclose(scores[name].nll, reference, atol=1e-4), name
        assert scores[name].kl.shape == reference.shape and float(scores[name].kl.max()) < 1e-5, name
        assert float(scores[name].agree.mean()) > 0.99, name
    # the model as loaded against its own reference pass: the same computation, so exactly no divergence
    assert torch.equal(scores["as loaded"].kl, torch.zeros_like(reference))
    assert torch.equal(scores["as loaded"].agree, torch.ones_like(reference))
    assert (scores["local, window 64"].nll - reference).abs().max() > 1e-2  # dropping the history changes the scores
    assert float(scores["local, window 64"].kl.mean()) > 100 * float(scores["full-rank latents"].kl.mean())
    for name in ("full-rank latents", "full-rank latents, every layer"):
        assert (scores[name].nll - reference).abs().mean() < 2e-3, name
        assert abs(scores[name].perplexity / scores["as loaded"].perplexity - 1) < 2e-3, name


def test_references_of_another_pass_replace_the_models_own(gemma):
    model, tokenizer = gemma
    contexts = long_contexts(tokenizer, "test", 500, 2)
    references = reference_tails(model, contexts, 64)
    assert [r.shape for r in references] == [(64, model.config.vocab_size)] * 2
    scores = evaluate(model, contexts, 64, {"as loaded": None,
                                            "local, window 32": lambda: gemma_attention_replacements(
                                                model, lambda i: LocalCore(32), layers="global")},
                      progress=lambda _: None, fidelity=True, references=references)
    # the same model's own prefill and tail pass: exactly no divergence; a cut history: some
    assert torch.equal(scores["as loaded"].kl, torch.zeros(128, dtype=torch.float64))
    assert float(scores["local, window 32"].kl.mean()) > 1e-3
    with pytest.raises(ValueError, match="one per context"):
        evaluate(model, contexts, 64, {"as loaded": None}, fidelity=True, references=references[:1])


def test_a_context_longer_than_the_model_and_held_out_calibration_are_refused(gemma):
    from codesign.attention.kv_budget import side_costs
    from codesign.llm.long_context import LongContext, prefill

    model, tokenizer = gemma
    limit = model.config.max_position_embeddings
    too_long = LongContext(torch.zeros(limit + 1, dtype=torch.long), torch.zeros(limit + 1, dtype=torch.long), "test")
    with pytest.raises(ValueError, match="longer than the model supports"):
        prefill(model, too_long, 64)
    held_out = long_contexts(tokenizer, "test", 300, 1)
    assert held_out[0].split == "test"
    with pytest.raises(ValueError, match="held-out split 'test'"):
        side_costs(model, held_out, 64, {}, [(32, 16)])


def test_contexts_are_whole_held_out_articles_never_shared(gemma):
    _, tokenizer = gemma
    contexts = long_contexts(tokenizer, "test", 600, 3)
    held_out = wiki_articles("test")
    seen: set[int] = set()
    for c in contexts:
        assert c.tokens.shape == c.article.shape == (600,)
        articles = torch.unique(c.article).tolist()
        assert not seen & set(articles)
        seen |= set(articles)
        assert bool((c.article[1:] >= c.article[:-1]).all())
        starts = torch.nonzero(torch.diff(c.article)).flatten() + 1
        assert c.tokens[0] == tokenizer.bos_token_id and bool((c.tokens[starts] == tokenizer.bos_token_id).all())
        first = articles[0]
        ids = tokenizer(held_out[first][1], add_special_tokens=False)["input_ids"]
        n = int((c.article == first).sum())
        assert c.tokens[1:n].tolist() == ids[: n - 1]
    with pytest.raises(ValueError, match="holds only"):
        long_contexts(tokenizer, "test", 600, 10**6)


def test_side_costs_measure_each_layer_side_alone_and_the_exact_choice_costs_nothing(gemma):
    from codesign.attention.kv_budget import allocate_by_cost, side_costs

    model, tokenizer = gemma
    glob = gemma_global_layers(model)
    all_moments = collect_kv_moments(model, token_stream(tokenizer, "train", 1024), context=512)
    moments = {i: all_moments[i] for i in glob}
    costs = side_costs(model, long_contexts(tokenizer, "train", 600, 1, skip_articles=400), 100, moments,
                       [(32, 16), (256, 4)], progress=lambda _: None)
    assert set(costs) == {"kl", "nll"}
    for measure in costs.values():
        assert set(measure) == {(i, side) for i in glob for side in ("key", "value")}
        for by_choice in measure.values():
            assert set(by_choice) == {(32, 16), (256, 4), (256, 16)} and by_choice[(256, 16)] == 0.0
            assert min(by_choice.values()) >= 0.0
    kl = costs["kl"]
    assert min(c[(32, 16)] for c in kl.values()) > 0.0  # every real cut moves the distribution, whatever the NLL does
    assert max(c[(32, 16)] for c in kl.values()) > 0.01  # a 32-of-256 cut is felt somewhere
    # the budget of one exact side and five rank-32 ones goes to the side whose cut costs most
    only_ranks = {g: {c: v for c, v in by_choice.items() if c != (256, 4)} for g, by_choice in kl.items()}
    chosen = allocate_by_cost(only_ranks, (256 + 5 * 32) * 16)
    worst = max(kl, key=lambda g: kl[g][(32, 16)])
    assert chosen[worst] == (256, 16) and sum(r for r, _ in chosen.values()) == 256 + 5 * 32


def test_bootstrap_mean_resamples_documents_and_rejects_mismatched_input():
    document = torch.tensor([0, 0, 0, 1, 1, 2])
    values = torch.tensor([1.0, 1.0, 1.0, 4.0, 4.0, 10.0])
    mean, low, high = bootstrap_mean(values, document, resamples=500)
    assert mean == pytest.approx(21.0 / 6)  # per token, not per document
    # every resample is a mix of whole documents: never below the smallest document mean, never above the largest
    assert 1.0 <= low <= mean <= high <= 10.0 and high > low
    with pytest.raises(ValueError, match="one per token"):
        bootstrap_mean(values[:-1], document)
    joined = concat([TailScores(values, document, values, values), TailScores(values, document + 3)])
    assert joined.kl is None and joined.nll.numel() == 12  # a part without kl: the joined scores have none
