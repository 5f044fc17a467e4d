"""Hybrid ranking on small cases whose answers can be checked by hand."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from toolsift import Router, TagRules
from toolsift.catalog import parse_catalog
from toolsift.embeddings import Embedder
from toolsift.index import ExactIndex
from toolsift.router import RankingConfig
from toolsift.types import Matrix


class ConstantEmbedder:
    """Every text gets the same vector: dense similarity ties everywhere, so only the lexical
    part can separate tools."""

    name = "constant-8"
    dimension = 8

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.embed_documents(texts)


TOOLS = [
    {"name": "get_weather", "description": "Current conditions for a city.", "tags": ["weather"]},
    {"name": "send_invoice", "description": "Email an invoice to a client.", "tags": ["billing"]},
    {"name": "refund_payment", "description": "Give money back to a customer.", "tags": ["billing"]},
    {"name": "getTodayBoxOfficeRanking", "description": "오늘의 박스오피스 순위를 제공합니다", "tags": ["movies"]},
]


@pytest.fixture
def constant_router() -> Router:
    return Router.build(parse_catalog(TOOLS), ConstantEmbedder())


def test_lexical_part_breaks_dense_ties(constant_router: Router) -> None:
    result = constant_router.route("please refund this payment", k=2)
    assert result.names[0] == "refund_payment"
    top = result.matches[0]
    assert top.similarity == pytest.approx(1.0) and top.lexical == pytest.approx(1.0)
    # score = z(cosine) + 0.3 * z(bm25), each standardised over the catalog for this query
    assert constant_router.lexical is not None
    bm25 = constant_router.lexical.scores("please refund this payment")
    expected_lexical = 0.3 * (bm25[2] - bm25.mean()) / bm25.std()
    assert top.dense_part == pytest.approx(0.0, abs=1e-4)  # every cosine is equal: no dense evidence
    assert top.lexical_part == pytest.approx(expected_lexical, rel=1e-4)
    assert top.score == pytest.approx(top.dense_part + top.lexical_part, abs=1e-5)


def test_dense_part_is_the_cosine_standardised_over_the_catalog(tiny_router: Router) -> None:
    vectors = tiny_router.index.vectors.vectors(np.arange(len(tiny_router.catalog)))
    query = tiny_router.embedder.embed_queries(["weather forecast"])[0]
    cosines = vectors @ query
    result = tiny_router.route("weather forecast", k=3)
    for match in result.matches:
        cosine = cosines[tiny_router.catalog.position(match.name)]
        assert match.dense_part == pytest.approx((cosine - cosines.mean()) / cosines.std(), rel=1e-3, abs=1e-4)
    # with tag rules, the statistics are those of the allowed tools
    ruled = tiny_router.route("weather forecast", k=2, rules=TagRules.parse(any_of=["read"]))
    allowed = [tiny_router.catalog.position(t.name) for t in tiny_router.catalog if "read" in t.tags]
    subset = cosines[allowed]
    top = ruled.matches[0]
    expected = (cosines[tiny_router.catalog.position(top.name)] - subset.mean()) / subset.std()
    assert top.dense_part == pytest.approx(expected, rel=1e-3, abs=1e-4)


def test_identifier_words_and_korean_bigrams_are_matched(constant_router: Router) -> None:
    assert constant_router.route("box office ranking today", k=1).names == ["getTodayBoxOfficeRanking"]
    assert constant_router.route("요즘 박스오피스 순위가 궁금해", k=1).names == ["getTodayBoxOfficeRanking"]


def test_word_forms_and_parameter_details_are_matched() -> None:
    router = Router.build(
        parse_catalog(
            TOOLS
            + [
                {
                    "name": "convert_units",
                    "description": "Convert a quantity.",
                    "parameters": {
                        "type": "object",
                        "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]}},
                    },
                },
            ]
        ),
        ConstantEmbedder(),
    )
    # "refunds"/"payments" meet "refund_payment" through their stems
    assert router.route("I need refunds for these payments", k=1).names == ["refund_payment"]
    # a word found only among a parameter's allowed values
    assert router.route("what is 300 kelvin", k=1).names == ["convert_units"]


def test_weight_zero_is_plain_dense_order(constant_router: Router) -> None:
    dense = Router(constant_router.index, constant_router.embedder, RankingConfig(lexical_weight=0, min_confidence=0))
    result = dense.route("please refund this payment", k=4)
    assert result.names == [
        "get_weather",
        "send_invoice",
        "refund_payment",
        "getTodayBoxOfficeRanking",
    ]  # ties: catalog order
    assert all(match.lexical == 0 for match in result.matches)


def test_lexical_candidates_obey_tag_rules(constant_router: Router) -> None:
    result = constant_router.route("refund payment", k=3, rules=TagRules.parse(exclude="billing"))
    assert "refund_payment" not in result.names and "send_invoice" not in result.names


def test_dense_only_matches_the_numpy_reference(tiny_router: Router) -> None:
    dense = Router(tiny_router.index, tiny_router.embedder, RankingConfig(lexical_weight=0))
    vectors = tiny_router.index.vectors.vectors(np.arange(len(tiny_router.catalog)))
    for query in ("send email", "weather tomorrow", "delete my files"):
        expected = ExactIndex(vectors).search(tiny_router.embedder.embed_queries([query])[0], 3)[1]
        assert dense.route(query, k=3).names == [tiny_router.catalog[int(i)].name for i in expected]


def test_ranking_config_is_validated() -> None:
    with pytest.raises(ValueError, match="lexical_weight"):
        RankingConfig(lexical_weight=-1)


@pytest.mark.model
def test_korean_request_finds_the_tool_with_the_english_model(real_embedder: Embedder) -> None:
    router = Router.build(parse_catalog(TOOLS), real_embedder)
    # ranking only: with an English-only model a Hangul request is judged on its words alone, and its
    # confidence stays low (the multilingual model, which `auto` picks for such catalogs, reads it)
    assert router.route("오늘 박스오피스 순위 알려줘", k=1, min_confidence=0).names == ["getTodayBoxOfficeRanking"]
    dense_only = Router(router.index, real_embedder, RankingConfig(lexical_weight=0))
    assert dense_only.route("refund the customer's payment", k=1).names == ["refund_payment"]
