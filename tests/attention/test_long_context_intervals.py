"""Bootstrap intervals over documents of codesign.llm.long_context (synthetic scores, no model)."""

import math

import pytest
import torch

from codesign.llm.long_context import TailScores, bootstrap_perplexity, bootstrap_ratio, concat, paired_ratio_interval


def _scores(documents: int, per_document: int = 20, seed: int = 0, shift: float = 0.0) -> TailScores:
    gen = torch.Generator().manual_seed(seed)
    level = torch.rand(documents, generator=gen, dtype=torch.float64) * 2 + 1  # documents differ in difficulty
    nll = level.repeat_interleave(per_document) + 0.3 * torch.randn(documents * per_document, generator=gen,
                                                                       dtype=torch.float64)
    return TailScores(nll + shift, torch.arange(documents).repeat_interleave(per_document))


def test_the_perplexity_interval_holds_the_estimate_and_narrows_with_more_documents():
    few, many = _scores(8), _scores(200)
    low, high = bootstrap_perplexity(few)
    assert low < few.perplexity < high
    m_low, m_high = bootstrap_perplexity(many)
    assert m_low < many.perplexity < m_high
    assert (m_high - m_low) < (high - low) / 2


def test_the_paired_ratio_is_exact_for_a_constant_shift_and_one_for_the_same_scores():
    base = _scores(30)
    assert bootstrap_ratio(base, base) == (1.0, 1.0)
    low, high = bootstrap_ratio(_scores(30, shift=0.05), base)
    assert low == pytest.approx(math.exp(0.05), rel=1e-12) and high == pytest.approx(math.exp(0.05), rel=1e-12)


def test_the_paired_interval_is_narrower_than_the_unpaired_one():
    base = _scores(40)
    noisy = TailScores(base.nll + 0.02 + 0.05 * torch.randn(base.nll.shape, generator=torch.Generator().manual_seed(1),
                                                            dtype=torch.float64), base.document)
    low, high = bootstrap_ratio(noisy, base)
    p_low, p_high = bootstrap_perplexity(noisy)
    assert low < noisy.perplexity / base.perplexity < high
    assert (high - low) < (p_high - p_low) / noisy.perplexity / 4


def test_scores_of_other_tokens_are_refused_and_contexts_concatenate():
    a, b = _scores(5), _scores(6)
    with pytest.raises(ValueError, match="not of the same tokens"):
        bootstrap_ratio(a, b)
    both = concat([a, TailScores(b.nll, b.document + 100)])
    assert both.nll.numel() == a.nll.numel() + b.nll.numel()
    assert torch.unique(both.document).numel() == 11


def test_the_interval_of_summed_units_is_the_document_interval_and_refuses_mismatched_units():
    base, shifted = _scores(30), _scores(30, shift=0.01)
    noisy = TailScores(shifted.nll + 0.05 * torch.randn(base.nll.shape, generator=torch.Generator().manual_seed(2),
                                                        dtype=torch.float64), base.document)
    sums = [noisy.nll[base.document == d].sum() for d in range(30)]
    ref = [base.nll[base.document == d].sum() for d in range(30)]
    assert paired_ratio_interval(sums, ref, [20] * 30) == pytest.approx(bootstrap_ratio(noisy, base), rel=1e-12)
    with pytest.raises(ValueError, match="one NLL sum, reference sum and token count per unit"):
        paired_ratio_interval(sums, ref[:-1], [20] * 30)
    with pytest.raises(ValueError, match="per unit"):
        paired_ratio_interval([], [], [])
