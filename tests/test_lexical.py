from __future__ import annotations

import numpy as np

from toolsift.index.lexical import LexicalIndex, cjk_bigrams, search_tokens, word_and_cjk_tokens, word_tokens


def test_word_tokens_split_identifiers_and_punctuation() -> None:
    assert word_tokens("getCurrentCryptoPrices") == ["get", "current", "crypto", "prices"]
    assert word_tokens("calculate_triangle_area") == ["calculate", "triangle", "area"]
    assert word_tokens("hf:YituTech/conv-bert-base v2") == ["hf", "yitu", "tech", "conv", "bert", "base", "v2"]
    assert word_tokens("PDF&URLTool") == ["pdf", "url", "tool"]


def test_cjk_bigrams() -> None:
    assert cjk_bigrams("박스오피스 순위") == ["박스", "스오", "오피", "피스", "순위"]
    assert cjk_bigrams("가 abc") == []  # a one-character run gives no bigram
    assert word_and_cjk_tokens("날씨를 알려줘") == ["날씨를", "알려줘", "날씨", "씨를", "알려", "려줘"]


def test_bm25_ranks_shared_terms_and_skips_unrelated_tools() -> None:
    index = LexicalIndex(["send email message", "weather forecast", "search email inbox", "play music"])
    scores, ids = index.search("email", 10)
    assert sorted(ids.tolist()) == [0, 2]  # tools sharing no token are not returned
    assert np.all(scores > 0)
    assert index.search("unknown words only", 5)[1].tolist() == []


def test_bm25_respects_allowed_ids() -> None:
    index = LexicalIndex(["send email", "email search", "email archive"])
    assert index.search("email", 5, np.array([1, 2]))[1].tolist() in ([1, 2], [2, 1])


def test_search_tokens_stem_and_drop_function_words() -> None:
    assert search_tokens("I want to extract features from the images") == ["want", "extract", "featur", "imag"]
    assert search_tokens("image feature extraction") == ["imag", "featur", "extract"]
    assert search_tokens("getWeatherForecasts") == ["get", "weather", "forecast"]
    assert search_tokens("what is this for?") == []  # only function words
    # other scripts pass unstemmed, with their bigrams
    assert search_tokens("날씨를 알려줘") == ["날씨를", "알려줘", "날씨", "씨를", "알려", "려줘"]


def test_stemmed_bm25_matches_other_word_forms() -> None:
    texts = ["Image feature extraction model", "Text summarization model", "Object detection in photos"]
    query = "extract features from my images"
    plain = LexicalIndex(texts, word_and_cjk_tokens)
    stemmed = LexicalIndex(texts, search_tokens)
    assert plain.search(query, 3)[1].tolist() == []  # no shared surface form at all
    assert stemmed.search(query, 3)[1].tolist() == [0]
    # function words alone match nothing (they would match every tool that has them)
    assert stemmed.search("what can you do for me", 3)[1].tolist() == []


def test_search_tokens_are_the_same_from_many_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"extracting {i} features from images while running searches" for i in range(400)]
    expected = [search_tokens(text) for text in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(search_tokens, texts)) == expected
