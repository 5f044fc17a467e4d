"""One door: HTTP, MCP and the CLI answer a request through ``toolsift.router.door.answer``, so
the same request from the same caller gets the same bytes whichever way it came, and the MCP
server answers a tenant exactly as the HTTP API does (its feedback, its fingerprint, the metric)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import orjson
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp.client import Client

from toolsift import Router
from toolsift.catalog import fingerprint_tools
from toolsift.cli import main
from toolsift.router import Caller, RouteQuery, Scope, TagRules, answer
from toolsift.router.usage import Feedback
from toolsift.service import create_app
from toolsift.service.mcp_server import ToolsiftTools, mcp_server_for
from toolsift.service.state import ServiceState
from toolsift.service.usage_feed import UsageFeed
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants

WX_KEY = "wx-key-0123456789abcdef"
OPS_KEY = "ops-key-0123456789abcdef"
TENANTS = {"tenants": {"wx": {"key": WX_KEY, "tags": ["weather"]}, "ops": {"key": OPS_KEY}}}

# (HTTP body, the same request as CLI arguments); MCP always answers in the mcp format
REQUESTS: list[tuple[dict[str, Any], list[str]]] = [
    ({"query": "weather forecast for Paris", "k": 3}, ["-k", "3"]),
    ({"query": "send an email and delete a file", "k": 4}, ["-k", "4"]),
    (
        {"query": "what is on my calendar", "k": 2, "tags": {"exclude": ["admin"]}, "pinned": ["search_emails"]},
        ["-k", "2", "--exclude-tags", "admin", "--pin", "search_emails"],
    ),
    (
        {"query": "plan a meeting next week", "k": 5, "tags": ["calendar", "email"]},
        ["-k", "5", "--tags", "calendar,email"],
    ),
]


def test_http_mcp_and_cli_give_the_same_bytes(tmp_path: Path, tiny_router: Router) -> None:
    folder = tiny_router.save(tmp_path / "index")
    router = Router.load(folder)
    runner = CliRunner()

    async def over_mcp(body: dict[str, Any]) -> bytes:
        arguments = dict(body)
        if isinstance(body.get("tags"), dict):
            arguments["exclude_tags"] = arguments.pop("tags")["exclude"]
        async with Client(mcp_server_for(router)) as client:
            result = await client.call_tool("search_tools", arguments)
        assert not result.is_error and result.structured_content is not None
        return orjson.dumps(result.structured_content, option=orjson.OPT_SORT_KEYS)

    with TestClient(create_app(router, settings=Settings())) as http:
        for body, arguments in REQUESTS:
            over_http = http.post("/route", json={**body, "format": "mcp"}).content
            printed = runner.invoke(
                main, ["route", body["query"], "--index", str(folder), "--format", "mcp", "--json", *arguments]
            )
            assert printed.exit_code == 0, printed.output
            assert printed.output.encode().rstrip(b"\n") == over_http, body
            assert anyio.run(over_mcp, body) == over_http, body
            assert orjson.loads(over_http)["matches"], body  # a real answer, not an empty one


def tenant_tools(router: Router, key: str, state: ServiceState) -> tuple[ToolsiftTools, SimpleNamespace]:
    """The MCP tools and a request context carrying ``key`` (as over streamable HTTP)."""
    return ToolsiftTools(state), SimpleNamespace(headers={"authorization": f"Bearer {key}"})


def routes_timed(state: ServiceState) -> float:
    return state.metrics.registry.get_sample_value("toolsift_route_seconds_count") or 0.0


def test_mcp_answers_a_tenant_with_its_feedback_its_fingerprint_and_the_route_metric(
    tmp_path: Path, tiny_router: Router
) -> None:
    state = ServiceState.create(tiny_router, Settings(), parse_tenants(TENANTS))
    log = tmp_path / "index.feedback.jsonl"
    state.usage.open_log(log)
    tools, wx = tenant_tools(tiny_router, WX_KEY, state)
    query = RouteQuery("bring an umbrella to the picnic?", 2, output_format="mcp")

    before = tools.search(wx, query)  # type: ignore[arg-type]
    assert [m["name"] for m in before["matches"]] and {m["name"] for m in before["matches"]} <= {
        "get_weather",
        "get_forecast",
    }
    visible = [tool for tool in tiny_router.catalog if "weather" in tool.tags]
    assert before["catalog_fingerprint"] == fingerprint_tools(visible) != tiny_router.catalog.fingerprint
    assert routes_timed(state) == 1

    # another worker takes feedback for this tenant: the next MCP search ranks with it
    fed = next(m["name"] for m in before["matches"] if m["rank"] != 1)
    other_worker = UsageFeed()
    other_worker.open_log(log)
    other_worker.record([Feedback(query.query, fed, "wx", "session:a")])
    after = tools.search(wx, query)  # type: ignore[arg-type]
    assert after["matches"][0]["name"] == fed
    assert routes_timed(state) == 2

    # the same request, as the HTTP API answers it for the same tenant: the same body
    with TestClient(create_app(tiny_router, settings=Settings(), tenants=parse_tenants(TENANTS))) as http:
        http.app.state.service.usage.open_log(log)  # type: ignore[attr-defined]
        body = {"query": query.query, "k": 2, "format": "mcp"}
        over_http = http.post("/route", json=body, headers={"Authorization": f"Bearer {WX_KEY}"}).json()
    assert over_http == after

    # another tenant's feedback pool is its own: the wx feedback does not lift the tool for ops
    ops_tools, ops = tenant_tools(tiny_router, OPS_KEY, state)
    for_ops = ops_tools.search(ops, query)  # type: ignore[arg-type]
    expected = tiny_router.route(query.query, 2, usage_pool="ops")
    assert [m["name"] for m in for_ops["matches"]] == expected.names
    assert for_ops["catalog_fingerprint"] == tiny_router.catalog.fingerprint  # ops sees every tool


def test_mcp_list_tags_is_the_tenants_own(tiny_router: Router) -> None:
    state = ServiceState.create(tiny_router, Settings(), parse_tenants(TENANTS))
    tools, wx = tenant_tools(tiny_router, WX_KEY, state)
    assert tools.tags(wx) == {"tags": {"read": 2, "weather": 2}, "groups": {}}  # type: ignore[arg-type]


def test_scope_answers_every_visibility_question(tiny_router: Router) -> None:
    catalog = tiny_router.catalog
    everything = Scope.everything(catalog)
    assert everything.is_everything and len(everything) == len(catalog)
    assert everything.fingerprint == catalog.fingerprint and everything.names == catalog.names
    assert everything.contains("send_email") and not everything.contains("no_such_tool")

    weather = tiny_router.scope_for(TagRules.parse(any_of=["weather"]))
    assert sorted(weather.names) == ["get_forecast", "get_weather"] and len(weather) == 2
    assert weather.contains("get_weather") and weather.contains(catalog.get("get_forecast"))  # type: ignore[arg-type]
    assert not weather.contains("send_email")
    assert weather.fingerprint == fingerprint_tools(weather.tools)


@pytest.mark.parametrize("delivery", ["subset", "tool_reference"])
def test_a_caller_never_gets_a_tool_outside_its_scope(tiny_router: Router, delivery: str) -> None:
    from toolsift.router import SessionStore

    sessions = SessionStore()
    weather = Caller(tiny_router.scope_for(TagRules.parse(any_of=["weather"])), pool="wx", namespace="wx")
    for turn in range(3):
        query = RouteQuery("send an email about the weather", 8, session_id="s", delivery=delivery)  # type: ignore[arg-type]
        delivered = answer(tiny_router, query, weather, sessions)
        assert {tool.name for tool in delivered.tools} <= {"get_weather", "get_forecast"}, turn
        assert delivered.result.catalog_fingerprint == weather.scope.fingerprint
    # the same session id of another caller is another session
    everyone = answer(
        tiny_router, RouteQuery("send an email", 1, session_id="s"), Caller.anyone(tiny_router.catalog), sessions
    )
    assert everyone.session is not None and everyone.session.turn == 1


def test_a_retried_mcp_search_with_its_turn_key_is_the_same_turn(tiny_router: Router) -> None:
    async def scenario() -> None:
        async with Client(mcp_server_for(tiny_router)) as client:
            arguments = {"query": "weather forecast", "k": 2, "session_id": "conv", "turn_key": "search-1"}
            first = await client.call_tool("search_tools", arguments)
            retried = await client.call_tool("search_tools", arguments)
            following = await client.call_tool("search_tools", {**arguments, "turn_key": "search-2"})
        assert first.structured_content is not None and retried.structured_content == first.structured_content
        assert first.structured_content["session"]["turn"] == 1
        assert following.structured_content is not None and following.structured_content["session"]["turn"] == 2

    anyio.run(scenario)
