"""Every rule holds in every delivery mode and under sessions: a delivered tool always satisfies
this request's tag rules, access rule and tenant scope, whatever earlier turns delivered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from toolsift import Router, TagRules
from toolsift.errors import InvalidQuery
from toolsift.router import Caller, RouteQuery, SessionStore, answer
from toolsift.service import create_app
from toolsift.service.schemas import route_body
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants

TENANT_KEY = "tenant-key-0123456789abcdef"
RULES: dict[str, dict[str, Any]] = {
    "read_only": {"access": "read_only"},
    "non_destructive": {"access": "non_destructive"},
    "exclude_admin": {"tags": {"exclude": ["admin"]}},
    "exclude_write": {"tags": {"exclude": ["write"]}},
    "any_weather": {"tags": ["weather"]},
    "all_read_weather": {"tags": {"all": ["read", "weather"]}},
}
MODES = [
    ("subset", "toolsift"),
    ("subset", "openai"),
    ("subset", "anthropic"),
    ("subset", "mcp"),
    ("subset", "gemini"),
    ("allowed_tools", "openai"),
]


def name_of(definition: dict[str, Any]) -> str:
    return str(definition["function"]["name"] if "function" in definition else definition["name"])


def rules_of(request: dict[str, Any]) -> TagRules:
    return TagRules.from_spec(request.get("tags"), request.get("access", "any"))


@pytest.fixture
def client(tiny_router: Router) -> Iterator[TestClient]:
    with TestClient(create_app(tiny_router, settings=Settings())) as test_client:
        yield test_client


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize(("delivery", "output_format"), MODES)
def test_a_session_never_delivers_what_this_turns_rules_forbid(
    client: TestClient, tiny_router: Router, rule: str, delivery: str, output_format: str
) -> None:
    base = {"k": 8, "session_id": f"s-{rule}-{delivery}-{output_format}", "delivery": delivery, "format": output_format}
    first = client.post("/route", json={**base, "query": "delete the old file"}).json()
    assert len(first["tools"]) == len(tiny_router.catalog)  # every tool is in the session now

    restricted = {**base, "query": "what is the weather", **RULES[rule]}
    second = client.post("/route", json=restricted)
    assert second.status_code == 200, second.text
    body = second.json()
    rules = rules_of(restricted)
    delivered = [name_of(d) for d in body["tools"]]
    assert all(rules.permits(tiny_router.catalog.get(name)) for name in delivered)  # type: ignore[arg-type]
    forbidden = sorted(t.name for t in tiny_router.catalog if not rules.permits(t))
    assert sorted(body["session"]["withheld"]) == forbidden and body["session"]["prefix_changed"] is True
    assert body["fingerprint"] != first["fingerprint"]
    if delivery == "allowed_tools" and not body["matches"] and not body["pinned"]:
        assert body["tool_choice"] == "none"  # nothing this turn may call
    elif delivery == "allowed_tools":
        masked = [t["function"]["name"] for t in body["tool_choice"]["allowed_tools"]["tools"]]
        assert set(masked) <= set(delivered)

    third = client.post("/route", json=restricted).json()  # same rules again: nothing withheld, prefix kept
    assert third["session"]["withheld"] == [] and third["session"]["prefix_changed"] is False
    assert [name_of(d) for d in third["tools"]][: len(delivered)] == delivered


def test_a_withheld_tool_comes_back_at_the_end_when_selected_again(tiny_router: Router) -> None:
    sessions = SessionStore()

    def turn(query: str, k: int, rules: TagRules) -> list[str]:
        delivered = answer(tiny_router, RouteQuery(query, k, rules, session_id="s"), sessions=sessions)
        return [t.name for t in delivered.tools]

    everything = turn("delete a file", 8, TagRules())
    safe = turn("weather", 2, TagRules(access="read_only"))
    assert "delete_file" in everything and "delete_file" not in safe
    again = turn("delete a file", 8, TagRules())
    assert again[: len(safe)] == safe and "delete_file" in again[len(safe) :]


@pytest.mark.parametrize("rule", ["read_only", "exclude_admin", "exclude_write", "any_weather"])
def test_a_pinned_tool_the_rules_forbid_is_a_400_naming_the_conflict(client: TestClient, rule: str) -> None:
    response = client.post("/route", json={"query": "weather", "pinned": ["delete_file"], **RULES[rule]})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message.startswith("pinned: 'delete_file' is pinned, but this request's rules forbid it")
    assert ("access" in message) == (rule == "read_only") and "Unpin it or relax the rule" in message


def test_a_pinned_tool_the_rules_allow_is_still_delivered_first(client: TestClient) -> None:
    body = client.post(
        "/route", json={"query": "weather", "k": 1, "pinned": ["search_emails"], "tags": {"exclude": ["admin"]}}
    )
    assert body.status_code == 200 and name_of(body.json()["tools"][0]) == "search_emails"


def test_pinned_tools_obey_rules_in_the_library_too(tiny_router: Router) -> None:
    with pytest.raises(InvalidQuery, match="'delete_file' is pinned.*tags.exclude drops tools tagged admin"):
        tiny_router.route("weather", 1, TagRules.parse(exclude=["admin"]), pinned=["delete_file"])
    with pytest.raises(InvalidQuery, match="tags.any asks for one of weather and it carries none"):
        tiny_router.route("weather", 1, TagRules.parse(any_of=["weather"]), pinned=["delete_file"])


def test_a_tenants_tag_rule_never_reaches_past_its_tools(tiny_router: Router) -> None:
    """A request's ``tags.any`` is applied within the tenant's scope, not over the whole catalog."""
    tenants = parse_tenants({"tenants": {"solo": {"key": TENANT_KEY, "tools": ["get_weather", "send_email"]}}})
    app = create_app(tiny_router, settings=Settings(), tenants=tenants)
    headers = {"Authorization": f"Bearer {TENANT_KEY}"}
    with TestClient(app) as client:
        for delivery, output_format in MODES:
            for session_id in (None, f"t-{delivery}-{output_format}"):
                request = {"query": "weather forecast", "k": 8, "tags": ["weather"], "delivery": delivery}
                request.update(format=output_format, **({"session_id": session_id} if session_id else {}))
                body = client.post("/route", json=request, headers=headers).json()
                assert [name_of(d) for d in body["tools"]] == ["get_weather"], (delivery, output_format, body)
                assert body["eligible"] == 1


def test_library_delivery_filters_the_session_by_scope(tiny_router: Router) -> None:
    sessions = SessionStore()
    answer(tiny_router, RouteQuery("weather", 8, session_id="s"), sessions=sessions)
    caller = Caller(tiny_router.scope_for(TagRules(), ["get_weather", "get_forecast"]))
    delivered = answer(tiny_router, RouteQuery("weather", 2, session_id="s"), caller, sessions)
    assert sorted(t.name for t in delivered.tools) == ["get_forecast", "get_weather"]
    assert delivered.session is not None and len(delivered.session.withheld) == 6
    assert route_body(delivered)["session"]["withheld"] == list(delivered.session.withheld)


DEFERRED = [
    ({"delivery": "tool_reference", "format": "anthropic"}, "content"),
    ({"delivery": "tool_search_output", "format": "responses", "call_id": "c1"}, "output_item"),
    ({"delivery": "tool_search_output", "format": "responses", "call_id": "c1", "namespaces": True}, "output_item"),
    ({"delivery": "function_result", "format": "gemini", "call_id": "c1"}, "output_item"),
]


def referenced(body: dict[str, Any], field: str) -> list[str]:
    """The tools a deferred answer hands the model (in namespaces too)."""
    if field == "content":
        return [block["tool_name"] for block in body["content"] if block["type"] == "tool_reference"]
    item = body["output_item"]
    listed = item["tools"] if item["type"] == "tool_search_output" else item["result"]
    return [t["name"] for entry in listed for t in entry.get("tools", [entry]) if t.get("type") != "text"]


@pytest.mark.parametrize("rule", sorted(RULES))
@pytest.mark.parametrize(
    ("options", "field"), DEFERRED, ids=["tool_reference", "tool_search_output", "namespaces", "function_result"]
)
def test_a_deferred_answer_never_hands_over_what_this_turns_rules_forbid(
    grouped_router: Router, rule: str, options: dict[str, Any], field: str
) -> None:
    tenants = parse_tenants({"tenants": {"t": {"key": TENANT_KEY, "tags": {"exclude": ["finance"]}}}})
    with TestClient(create_app(grouped_router, settings=Settings(), tenants=tenants)) as client:
        headers = {"X-API-Key": TENANT_KEY}
        base = {"k": 8, "session_id": f"d-{rule}-{field}", "repeat_references": True, **options}
        first = client.post("/route", json={**base, "query": "delete the old file"}, headers=headers).json()
        assert set(referenced(first, field)) == {t.name for t in grouped_router.catalog} - {"convert_currency"}
        restricted = {**base, "query": "what is the weather", **RULES[rule]}
        second = client.post("/route", json=restricted, headers=headers)
        assert second.status_code == 200, second.text
        rules = rules_of(restricted)
        handed = referenced(second.json(), field)
        assert all(rules.permits(grouped_router.catalog.get(name)) for name in handed)  # type: ignore[arg-type]
        assert "convert_currency" not in handed  # beyond the tenant's key, whatever the rule


@pytest.fixture
def grouped_router(tiny_catalog: Any, hashing_embedder: Any) -> Router:
    """The tiny tools, each in the group its first tag names (so namespaces have something to hold)."""
    from toolsift.catalog import Catalog

    tools = [tool.model_copy(update={"group": tool.tags[0]}) for tool in tiny_catalog]
    return Router.build(Catalog(tools, source="tiny-grouped"), hashing_embedder)
