"""Multi-intent queries: splitting, and how each part's best tool joins the matches."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ranking import TOOLS, ConstantEmbedder

from toolsift import Router
from toolsift.catalog import parse_catalog
from toolsift.router import RankingConfig
from toolsift.router.intents import MAX_PARTS, split_intents
from toolsift.text import quoted_spans

THREE_STEPS = (
    "Check the weather forecast for Berlin this weekend. Convert 250 US dollars to euros. "
    "Open a GitHub issue about the login bug."
)


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        ("What is the weather in Paris?", ["What is the weather in Paris?"]),
        (
            "Book a flight to Rome, then reserve a hotel near the Colosseum.",
            ["Book a flight to Rome", "reserve a hotel near the Colosseum."],
        ),
        (
            "Check the review comments for project 76. After that, submit the file C:/docs/design_1.png for review.",
            ["Check the review comments for project 76.", "submit the file C:/docs/design_1.png for review."],
        ),
        (
            "Tell me the latest AI news, and also recommend some AI jobs.",
            ["Tell me the latest AI news", "recommend some AI jobs."],
        ),
        (
            "Get v1.2 notes; list open issues and then close stale ones",
            ["Get v1.2 notes", "list open issues", "close stale ones"],
        ),
        # abbreviations and short lead-ins do not make parts of their own
        (
            "Analyze the evidence (e.g. DNA, hair) from the scene.",
            ["Analyze the evidence (e.g. DNA, hair) from the scene."],
        ),
        ("Please help. Find me a cheap hotel in Rome", ["Please help. Find me a cheap hotel in Rome"]),
        (
            "Send it to Dr. Smith at 5 p.m. tomorrow. Then book a room for two.",
            ["Send it to Dr. Smith at 5 p.m. tomorrow.", "book a room for two."],
        ),
        # Korean and Japanese sentence ends and connectives
        ("오늘 날씨 알려줘. 그리고 내일 일정도 확인해줘", ["오늘 날씨 알려줘.", "내일 일정도 확인해줘"]),
        ("今日の天気を教えて。明日の予定も確認して。", ["今日の天気を教えて。", "明日の予定も確認して。"]),
        ("오늘 박스오피스 순위가 궁금해요", ["오늘 박스오피스 순위가 궁금해요"]),
        # quoted text is what a tool acts on: its sentences are not parts
        (
            'Send Dana "I am running late. Also, start the meeting without me."',
            ['Send Dana "I am running late. Also, start the meeting without me."'],
        ),
        (
            "Translate “Où est la gare? J'ai perdu mon billet.” into English; then email it to Bob",
            ["Translate “Où est la gare? J'ai perdu mon billet.” into English", "email it to Bob"],
        ),
        (
            "Reply 'sounds good. see you then'. Then book a room for two.",
            ["Reply 'sounds good. see you then'.", "book a room for two."],
        ),
        ('Say "ok". Then book it.', ['Say "ok". Then book it.']),  # a short part with its quote
        # apostrophes open no quote; a request all in quotes splits as if it had none
        ("I'm late. Also, it's raining; book a taxi", ["I'm late. Also, it's raining", "book a taxi"]),
        (
            '"Check the weather in Paris. After that, book a table for two."',
            ['"Check the weather in Paris.', 'book a table for two."'],
        ),
        ("「天気を教えて。明日の予定も」を翻訳して", ["「天気を教えて。明日の予定も」を翻訳して"]),
    ],
)
def test_split_intents(query: str, parts: list[str]) -> None:
    assert split_intents(query) == parts


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("say \"hi there\", 'ok' and „ja“, «oui», 「はい」", ['"hi there"', "'ok'", "„ja“", "«oui»", "「はい」"]),
        ("don't say 'I'm late,' to them", ["'I'm late,'"]),  # apostrophes open nothing, nor close
        ('"" then "a"', ['"a"']),  # an empty quote quotes nothing
        ("'unclosed and \"also", []),
        ("„" * 8192, []),  # hostile: one pass whatever the marks
        ("'a " * 2700, []),
    ],
)
def test_quoted_spans(text: str, quoted: list[str]) -> None:
    assert [text[start:end] for start, end in quoted_spans(text)] == quoted


def test_split_intents_routes_at_most_max_parts() -> None:
    query = " ".join(f"Please do task number {i}." for i in range(20))
    assert len(split_intents(query)) == MAX_PARTS


TWO_STEPS = "Please refund the payment for order 7. After that, email the invoice to the client."


def lexical_router(**config: float | bool) -> Router:
    """Dense similarity ties everywhere (constant vectors), so BM25 alone decides: checkable by hand."""
    ranking = RankingConfig(lexical_weight=2.0, **config)  # type: ignore[arg-type]
    return Router.build(parse_catalog(TOOLS), ConstantEmbedder(), ranking=ranking)


def test_each_parts_best_tool_follows_the_whole_querys_best() -> None:
    router = lexical_router(intent_min_score=1.0)
    result = router.route(TWO_STEPS, k=3)
    assert [m.rank for m in result.matches] == [1, 2, 3]
    first, second = result.matches[0], result.matches[1]
    assert first.intent is None  # the whole query's best
    assert {first.name, second.name} == {"refund_payment", "send_invoice"}
    assert second.intent in split_intents(TWO_STEPS)
    # the part's own score (its part's ranking), not the whole query's
    part = router.route(second.intent, k=1).matches[0]
    assert (part.name, part.score) == (second.name, second.score)
    assert len({m.name for m in result.matches}) == 3


def test_parts_that_do_not_stand_out_change_nothing() -> None:
    plain = lexical_router(split_intents=False).route(TWO_STEPS, k=3)
    strict = lexical_router(intent_min_score=100.0).route(TWO_STEPS, k=3)
    assert strict.matches == plain.matches
    assert all(m.intent is None for m in strict.matches)


def test_single_intent_queries_and_k1_rank_as_without_splitting() -> None:
    split, plain = lexical_router(intent_min_score=0.0), lexical_router(split_intents=False)
    for query in ("please refund this payment", "오늘 박스오피스 순위 알려줘"):
        assert split.route(query, k=3).matches == plain.route(query, k=3).matches
    assert split.route(TWO_STEPS, k=1).matches == plain.route(TWO_STEPS, k=1).matches


def test_split_intents_can_be_set_per_call() -> None:
    on, off = lexical_router(intent_min_score=1.0), lexical_router(intent_min_score=1.0, split_intents=False)
    assert on.route(TWO_STEPS, k=3, split_intents=False).matches == off.route(TWO_STEPS, k=3).matches
    assert off.route(TWO_STEPS, k=3, split_intents=True).matches == on.route(TWO_STEPS, k=3).matches
    assert any(m.intent for m in on.route(TWO_STEPS, k=3).matches)


def test_min_score_applies_to_parts_too() -> None:
    router = lexical_router(intent_min_score=0.0)
    everything = router.route(TWO_STEPS, k=4)
    assert any(m.intent is not None for m in everything.matches)
    floor = sorted(m.score for m in everything.matches)[1]  # drops the lowest scoring match
    kept = router.route(TWO_STEPS, k=4, min_score=floor)
    assert [m.name for m in kept.matches] == [m.name for m in everything.matches if m.score >= floor]


@pytest.mark.model
def test_http_matches_name_their_part(bundled_router: Router) -> None:
    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(bundled_router)) as client:
        body = client.post("/route", json={"query": THREE_STEPS, "k": 3}).json()
        whole = client.post("/route", json={"query": THREE_STEPS, "k": 3, "split_intents": False}).json()
    assert all(m["intent"] is None for m in whole["matches"])
    assert "get_exchange_rate" not in [m["name"] for m in whole["matches"]]  # the step ranking whole misses
    intents = {m["name"]: m["intent"] for m in body["matches"]}
    assert intents["get_exchange_rate"] == "Convert 250 US dollars to euros."
    assert intents[body["matches"][0]["name"]] is None
    assert sorted(t["name"] for t in body["tools"]) == [t["name"] for t in body["tools"]]


@pytest.mark.model
def test_a_quoted_message_brings_no_tool_of_its_own(bundled_router: Router) -> None:
    query = (
        'send a Slack message to Dana saying "I am running late. Please book a table for four at the Italian place."'
    )
    result = bundled_router.route(query, k=3)
    assert result.matches[0].name == "send_slack_message"
    assert all(m.intent is None for m in result.matches)  # the quote's sentence is not a request of its own
    unquoted = bundled_router.route(query.replace('"', ""), k=3)  # without quotes, two requests
    assert any(m.intent is not None for m in unquoted.matches)


@pytest.mark.model
def test_every_step_of_a_three_step_request_gets_its_tool(bundled_router: Router) -> None:
    result = bundled_router.route(THREE_STEPS, k=3)
    assert set(result.names) == {"get_weather_forecast", "get_exchange_rate", "create_github_issue"}
    assert [m.intent for m in result.matches if m.name == "get_exchange_rate"] == ["Convert 250 US dollars to euros."]
    # one sentence, one intent: the same answer as ranking the text whole
    whole = Router(bundled_router.index, bundled_router.embedder, RankingConfig(split_intents=False))
    single = "What's the weather going to be like in Berlin this weekend?"
    assert bundled_router.route(single, k=5).matches == whole.route(single, k=5).matches


@pytest.mark.model
def test_cli_route_shows_each_parts_tool_and_can_turn_splitting_off(bundled_index: Path) -> None:
    from click.testing import CliRunner

    from toolsift.cli import main

    split = CliRunner().invoke(main, ["route", THREE_STEPS, "--index", str(bundled_index), "-k", "3"])
    assert split.exit_code == 0, split.output
    assert "get_exchange_rate" in split.output and "for: Convert 250 US dollars to euros." in split.output
    whole = CliRunner().invoke(
        main, ["route", THREE_STEPS, "--index", str(bundled_index), "-k", "3", "--no-split-intents"]
    )
    assert whole.exit_code == 0, whole.output
    assert "for:" not in whole.output and "get_exchange_rate" not in whole.output
