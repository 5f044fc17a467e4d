from __future__ import annotations

from pathlib import Path

import pytest

from toolsift import Catalog, Router, TagRules, load_catalog
from toolsift.embeddings import Embedder, HashingEmbedder
from toolsift.errors import IndexMismatch, InvalidQuery, UnknownTag
from toolsift.router import MAX_K
from toolsift.settings import BUNDLED_CATALOG


def test_route_returns_at_most_k_ranked(tiny_router: Router) -> None:
    result = tiny_router.route("send an email to my boss", k=3)
    assert len(result.matches) == 3
    assert [m.rank for m in result.matches] == [1, 2, 3]
    scores = [m.score for m in result.matches]
    assert scores == sorted(scores, reverse=True)
    assert result.eligible == len(tiny_router.catalog)


def test_tools_are_in_canonical_order_and_fingerprint_ignores_ranking(tiny_router: Router) -> None:
    result = tiny_router.route("weather forecast email", k=4)
    assert [t.name for t in result.tools] == sorted(result.names)
    same_subset = tiny_router.route("email weather forecast", k=4)
    if set(same_subset.names) == set(result.names):
        assert same_subset.fingerprint == result.fingerprint
    other = tiny_router.route("calendar event", k=1)
    assert other.fingerprint != result.fingerprint


def test_all_eligible_tools_come_back_when_k_exceeds_them(tiny_router: Router) -> None:
    result = tiny_router.route("anything at all", k=5, rules=TagRules.parse(any_of="weather"))
    assert sorted(result.names) == ["get_forecast", "get_weather"]
    assert result.eligible == 2
    everything = tiny_router.route("anything", k=MAX_K)
    assert len(everything.matches) == len(tiny_router.catalog)


def test_rules_apply_before_ranking(tiny_router: Router) -> None:
    result = tiny_router.route("send an email", k=3, rules=TagRules.parse(exclude="email"))
    assert "send_email" not in result.names and "search_emails" not in result.names
    assert len(result.matches) == 3
    none_left = tiny_router.route("send an email", k=3, rules=TagRules.parse(all_of="email,weather"))
    assert none_left.matches == () and none_left.eligible == 0


def test_min_score_can_return_fewer_or_none(tiny_router: Router) -> None:
    everything = tiny_router.route("send email", k=5)
    best = everything.matches[0].score
    assert tiny_router.route("send email", k=5, min_score=best + 0.01).matches == ()
    cut = (everything.matches[1].score + everything.matches[2].score) / 2
    partial = tiny_router.route("send email", k=5, min_score=cut)
    assert len(partial.matches) == 2 and all(m.score >= cut for m in partial.matches)


@pytest.mark.parametrize(
    ("query", "k", "message"),
    [
        ("", 5, "query: is empty"),
        ("   ", 5, "query: is empty"),
        ("x" * 9000, 5, "query: is 9000 characters; the limit is 8192"),
        ("ok", 0, "k: must be an integer from 1"),
        ("ok", MAX_K + 1, "k: must be an integer from 1"),
    ],
)
def test_bad_requests_say_what_is_wrong(tiny_router: Router, query: str, k: int, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        tiny_router.route(query, k=k)


def test_unknown_tag_in_rules(tiny_router: Router) -> None:
    with pytest.raises(UnknownTag):
        tiny_router.route("x", rules=TagRules.parse(any_of="nope"))


def test_router_refuses_an_index_built_with_another_model(tmp_path: Path, tiny_catalog: Catalog) -> None:
    Router.build(tiny_catalog, HashingEmbedder(64)).save(tmp_path / "idx")
    with pytest.raises(IndexMismatch, match="embedding model"):
        Router.load(tmp_path / "idx", HashingEmbedder(32))


# -- the real model, real FAISS, the bundled catalog --------------------------------------

PLAIN_QUERIES = {
    "What's the weather like in Berlin right now?": "get_current_weather",
    "Will it rain in Seattle this weekend?": "get_weather_forecast",
    "Email Sarah the quarterly report": "send_email",
    "Schedule a meeting with the design team on Friday at 3pm": "create_calendar_event",
    "Find me a cheap flight from Boston to London in March": "search_flights",
    "How much is one euro in Japanese yen?": "get_exchange_rate",
    "What's Apple's stock price today?": "get_stock_quote",
    "Translate 'good morning' into German": "translate_text",
    "Turn off the lights in the bedroom": "control_lights",
    "Set the heating to 21 degrees": "set_thermostat",
    "Play some jazz": "play_music",
    "Reserve a table for four at Luigi's tomorrow at 8pm": "book_restaurant_table",
    "Where is my package?": "track_order",
    "Refund the customer's last payment": "refund_payment",
    "Open a bug report in the acme/webapp repo": "create_github_issue",
    "Show me the logs of the checkout pod": "get_pod_logs",
    "Deploy version 2.3 of the api to production": "deploy_application",
    "Transcribe this voice memo": "transcribe_audio",
    "Draw a picture of a cat riding a bicycle": "generate_image",
    "What is the square root of 1764?": "calculate",
    "Convert 5 miles to kilometers": "convert_units",
    "What time is it in Tokyo?": "get_current_time",
    "I need a few days off next month for vacation": "request_time_off",
    "Post this announcement on LinkedIn and Twitter": "publish_social_post",
    "Text my wife that I'll be late": "send_sms",
    "Give me today's top news": "get_news_headlines",
    "Find a recipe with chicken and rice": "search_recipes",
    "How many calories are in an avocado?": "get_nutrition_facts",
    "Who is on call for the platform team?": "get_on_call_schedule",
    "Find an Italian restaurant near me": "search_nearby_places",
}


@pytest.mark.model
def test_bundled_catalog_finds_the_obvious_tool(bundled_router: Router) -> None:
    top1 = top3 = 0
    misses = []
    abstained = [query for query in PLAIN_QUERIES if bundled_router.route(query, k=3).abstained]
    # every one of these has a tool; at the default min_confidence at most two in thirty may abstain
    # (measured: "Translate 'good morning' into German", whose quoted words read as small talk, and,
    # since the bundled catalog's no-tool floor (0.15) is its default, "Draw a picture of a cat
    # riding a bicycle", which reads like the shipped creative-writing requests: 0.10-0.15)
    assert len(abstained) <= 2, abstained
    assert sum(bundled_router.route(query, k=3, min_confidence=0.1).abstained for query in abstained) <= 1
    for query, wanted in PLAIN_QUERIES.items():
        names = bundled_router.route(query, k=3, min_confidence=0).names
        top1 += names[0] == wanted
        top3 += wanted in names
        if names[0] != wanted:
            misses.append((query, wanted, names))
    # Measured with all-MiniLM-L6-v2 (tags in the lexical text only): dense only 25/30 top-1,
    # 28/30 top-3; hybrid (default: stemmed BM25 with parameter details, weight 0.3) 26/30 and
    # 28/30 (with tags in neither text: 27/30 top-3).
    assert top1 >= 0.8 * len(PLAIN_QUERIES), misses
    assert top3 >= 0.93 * len(PLAIN_QUERIES), misses


@pytest.mark.model
def test_end_to_end_load_build_save_load_route(tmp_path: Path, real_embedder: Embedder) -> None:
    catalog = load_catalog(BUNDLED_CATALOG)
    built = Router.build(catalog, real_embedder)
    built.save(tmp_path / "idx")
    loaded = Router.load(tmp_path / "idx")  # embedder chosen from the manifest
    assert loaded.embedder.name == "all-MiniLM-L6-v2"
    assert loaded.catalog.fingerprint == catalog.fingerprint
    for query in ("book a hotel in Rome for next weekend", "merge pull request 42"):
        before, after = built.route(query, k=5), loaded.route(query, k=5)
        assert before.names == after.names and before.fingerprint == after.fingerprint
        assert [m.score for m in before.matches] == pytest.approx([m.score for m in after.matches], abs=1e-5)
    result = loaded.route("book a hotel in Rome for next weekend", k=3, rules=TagRules.parse(exclude="hotels"))
    assert "book_hotel" not in result.names and "search_hotels" not in result.names


@pytest.mark.model
def test_hnsw_index_agrees_with_flat_on_the_bundled_catalog(bundled_router: Router, real_embedder: Embedder) -> None:
    # the same vectors, indexed approximately (nothing is embedded again)
    approximate = bundled_router.rebuilt(bundled_router.catalog, kind="hnsw")
    assert approximate.index.manifest.kind == "hnsw" and approximate.last_build is not None
    assert approximate.last_build.embedded == 0
    for query in PLAIN_QUERIES:
        assert approximate.route(query, k=3).names == bundled_router.route(query, k=3).names
