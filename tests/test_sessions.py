"""Sticky sessions, pinned tools, access policy and allowed_tools delivery."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from toolsift import Catalog, Router
from toolsift.catalog import parse_catalog
from toolsift.errors import InvalidQuery
from toolsift.router import SessionStore

from conftest import TINY_TOOLS


def tools_of(catalog: Catalog, *names: str) -> list:  # type: ignore[type-arg]
    return [catalog.get(name) for name in names]


# -- SessionStore, on its own -----------------------------------------------------------------


def test_session_appends_new_tools_and_keeps_the_prefix(tiny_catalog: Catalog) -> None:
    store = SessionStore(cap=10)
    first = store.advance("s", tools_of(tiny_catalog, "get_forecast", "get_weather"), tiny_catalog)
    assert [t.name for t in first.tools] == ["get_forecast", "get_weather"]
    assert first.turn == 1 and first.appended == ("get_forecast", "get_weather") and not first.prefix_changed

    second = store.advance("s", tools_of(tiny_catalog, "create_event", "get_weather"), tiny_catalog)
    assert [t.name for t in second.tools] == ["get_forecast", "get_weather", "create_event"]
    assert second.tools[: len(first.tools)] == first.tools
    assert second.appended == ("create_event",) and not second.prefix_changed and second.turn == 2

    same = store.advance("s", tools_of(tiny_catalog, "get_weather"), tiny_catalog)
    assert same.tools == second.tools and same.appended == () and not same.prefix_changed


def test_session_resets_at_the_cap(tiny_catalog: Catalog) -> None:
    store = SessionStore(cap=3)
    store.advance("s", tools_of(tiny_catalog, "get_forecast", "get_weather"), tiny_catalog)
    full = store.advance("s", tools_of(tiny_catalog, "list_events"), tiny_catalog)
    assert len(full.tools) == 3 and not full.prefix_changed
    over = store.advance("s", tools_of(tiny_catalog, "create_event", "send_email"), tiny_catalog)
    assert over.reset and over.prefix_changed
    assert [t.name for t in over.tools] == ["create_event", "send_email"]
    assert set(over.removed) == {"get_forecast", "get_weather", "list_events"}


def test_outranking_policy_appends_only_what_beats_the_session(tiny_catalog: Catalog) -> None:
    store = SessionStore()
    store.advance(
        "s",
        tools_of(tiny_catalog, "get_weather", "send_email"),
        tiny_catalog,
        ranked=["get_weather", "send_email"],
        policy="outranking",
    )
    # the best match is already held: nothing changes, the whole prompt stays cached
    calm = store.advance(
        "s",
        tools_of(tiny_catalog, "get_forecast", "get_weather"),
        tiny_catalog,
        ranked=["get_weather", "get_forecast"],
        policy="outranking",
    )
    assert calm.appended == () and calm.held_back == ("get_forecast",) and not calm.prefix_changed
    # a new tool ranked above every held one is appended; the one ranked below them is held back
    moved = store.advance(
        "s",
        tools_of(tiny_catalog, "create_event", "delete_file", "list_events", "send_email"),
        tiny_catalog,
        ranked=["create_event", "send_email", "list_events"],
        policy="outranking",
    )
    assert moved.appended == ("create_event", "delete_file")  # delete_file is pinned: not in ranked
    assert moved.held_back == ("list_events",)
    assert [t.name for t in moved.tools] == ["get_weather", "send_email", "create_event", "delete_file"]
    with pytest.raises(InvalidQuery, match="session_policy"):
        store.advance("s", [], tiny_catalog, policy="lazy")  # type: ignore[arg-type]


def test_sessions_are_separate_bounded_and_expire(tiny_catalog: Catalog) -> None:
    now = [0.0]
    store = SessionStore(cap=10, max_sessions=2, ttl_seconds=60, clock=lambda: now[0])
    store.advance("a", tools_of(tiny_catalog, "get_weather"), tiny_catalog)
    store.advance("b", tools_of(tiny_catalog, "send_email"), tiny_catalog)
    assert store.names("a") == ("get_weather",)
    assert store.names("b") == ("send_email",)
    store.advance("c", tools_of(tiny_catalog, "list_events"), tiny_catalog)
    assert "a" not in store and len(store) == 2  # least recently used evicted
    now[0] = 1000.0
    again = store.advance("b", tools_of(tiny_catalog, "get_weather"), tiny_catalog)
    assert again.turn == 1 and [t.name for t in again.tools] == ["get_weather"]  # expired, started over


def test_session_follows_catalog_changes(tiny_catalog: Catalog) -> None:
    store = SessionStore()
    store.advance("s", tools_of(tiny_catalog, "get_forecast", "get_weather", "send_email"), tiny_catalog)
    changed = [dict(t) for t in TINY_TOOLS if t["name"] != "get_forecast"]
    for record in changed:
        if record["name"] == "get_weather":
            record["description"] = "Weather right now for a city or coordinates."
    new_catalog = parse_catalog(changed, source="changed")
    turn = store.advance("s", tools_of(new_catalog, "send_email"), new_catalog)
    assert turn.prefix_changed and turn.removed == ("get_forecast",) and turn.replaced == ("get_weather",)
    assert [t.name for t in turn.tools] == ["get_weather", "send_email"]
    assert turn.tools[0].description.startswith("Weather right now")


# -- Router: pinned tools and the access policy -----------------------------------------------


# -- over HTTP, with the real model -----------------------------------------------------------


CONVERSATION = [
    "send an email to the team about the outage",
    "also reply to the message from Dana",
    "what's the weather in Lisbon tomorrow",
    "book a meeting with Dana on Friday",
]


@pytest.mark.model
def test_sticky_session_over_http(bundled_client: TestClient) -> None:
    previous: list[str] = []
    for turn, query in enumerate(CONVERSATION, start=1):
        body = bundled_client.post(
            "/route", json={"query": query, "k": 3, "session_id": "conv-1", "format": "anthropic"}
        ).json()
        names = [t["name"] for t in body["tools"]]
        session = body["session"]
        assert session["turn"] == turn and session["size"] == len(names)
        assert names[: len(previous)] == previous, "earlier tools must keep their place"
        assert not session["prefix_changed"]
        assert session["appended"] == names[len(previous) :]
        assert {m["name"] for m in body["matches"]} <= set(names)
        previous = names
    assert "send_email" in previous and any("weather" in n or "forecast" in n for n in previous)
    # outranking: a follow-up whose best tool is already given leaves the array as it was
    lazy = [
        bundled_client.post(
            "/route", json={"query": q, "k": 3, "session_id": "lazy", "session_policy": "outranking"}
        ).json()
        for q in ("send an email to Bob", "now send an email to Alice as well", "what is the weather in Paris")
    ]
    assert lazy[1]["matches"][0]["name"] == "send_email"  # already given on turn 1
    assert lazy[1]["tools"] == lazy[0]["tools"] and lazy[1]["session"]["appended"] == []
    assert lazy[1]["fingerprint"] == lazy[0]["fingerprint"] and not lazy[1]["session"]["prefix_changed"]
    assert len(lazy[2]["session"]["appended"]) == 3  # a new topic: its tools all outrank the old ones
    assert lazy[2]["tools"][:3] == lazy[0]["tools"]
    # a different session starts from nothing
    other = bundled_client.post("/route", json={"query": CONVERSATION[2], "k": 3, "session_id": "conv-2"}).json()
    assert other["session"]["turn"] == 1 and other["session"]["size"] == 3


@pytest.mark.model
def test_session_cap_reset_over_http(bundled_client: TestClient) -> None:
    queries = CONVERSATION + [
        "convert 100 dollars to euros",
        "translate this paragraph to German",
        "create a jira ticket",
    ]
    resets = []
    for query in queries:
        body = bundled_client.post("/route", json={"query": query, "k": 4, "session_id": "capped"}).json()
        assert body["session"]["size"] <= 12
        resets.append(body["session"]["reset"])
        if body["session"]["reset"]:
            assert body["session"]["prefix_changed"] and len(body["tools"]) == 4
    assert any(resets), "seven turns of four new tools must hit a cap of twelve"


def test_a_retried_turn_gets_the_same_answer_and_the_session_does_not_advance(tiny_router: Router) -> None:
    from toolsift.router.sessions import SessionState, next_turn

    catalog = tiny_router.catalog
    tools = list(catalog)
    state, first = next_turn(SessionState(), "s", tools[:2], catalog, cap=64, turn_key="k1")
    same_state, again = next_turn(state, "s", tools[:2], catalog, cap=64, turn_key="k1")
    assert again == first and same_state == state and state.turns == 1
    assert SessionState.from_json(state.to_json()) == state  # the key travels through Redis too
    state, second = next_turn(state, "s", tools[2:4], catalog, cap=64, turn_key="k2")
    assert second.turn == 2 and second.appended == tuple(t.name for t in tools[2:4])
    _, unkeyed = next_turn(state, "s", tools[2:4], catalog, cap=64)
    assert unkeyed.turn == 3 and unkeyed.appended == ()  # without a key, a repeat is a new turn


def test_a_retried_deferred_search_is_answered_again_not_emptied(tiny_router: Router) -> None:
    """A search whose answer was lost and is retried used to get an empty tool_result: the session
    already held the tools. With the same turn key it gets the same answer."""
    from fastapi.testclient import TestClient

    from toolsift.service import create_app

    with TestClient(create_app(tiny_router)) as client:
        body = {"query": "weather forecast", "k": 2, "delivery": "tool_reference", "format": "anthropic"}
        keyed = {**body, "session_id": "conv", "turn_key": "toolu_01"}
        first = client.post("/route", json=keyed)
        retried = client.post("/route", json=keyed)
        assert first.status_code == 200 and first.json()["content"]
        assert retried.content == first.content  # the same bytes: same references, same turn
        following = client.post("/route", json={**keyed, "query": "send an email", "turn_key": "toolu_02"}).json()
        assert following["session"]["turn"] == 2


def test_a_reused_turn_key_never_delivers_what_this_requests_rules_forbid(tiny_router: Router) -> None:
    from toolsift.router import RouteQuery, TagRules, answer

    sessions = SessionStore()
    wide = answer(tiny_router, RouteQuery("delete a file", 8, session_id="s", turn_key="k"), sessions=sessions)
    assert "delete_file" in [tool.name for tool in wide.tools]
    narrow = RouteQuery("delete a file", 8, TagRules(access="read_only"), session_id="s", turn_key="k")
    again = answer(tiny_router, narrow, sessions=sessions)
    assert "delete_file" not in [tool.name for tool in again.tools] and again.session is not None
    assert "delete_file" in again.session.withheld and again.session.turn == 2  # a turn of its own
