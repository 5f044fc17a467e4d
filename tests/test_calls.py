"""The gateway's call path without processes: who may call what (``tool_to_call``, the same scope
searches rank within), the argument check, results cut to size, a session's found tools, an exact
name found first, and ``POST /call`` on a service that has no MCP servers."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.catalog import Tool
from toolsift.errors import InvalidToolArguments, ToolCallRefused
from toolsift.mcp import LiveCatalog
from toolsift.mcp.calls import Forwarder, cut_to_size
from toolsift.router import Caller, TagRules, tool_to_call
from toolsift.service import create_app
from toolsift.service.gateway import FoundTools
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants


def test_a_caller_may_call_only_what_its_searches_may_find(tiny_router: Router) -> None:
    everyone = Caller.anyone(tiny_router.catalog)
    assert tool_to_call(tiny_router, "delete_file", everyone).name == "delete_file"
    rules = TagRules.parse(exclude="admin", access="non_destructive")
    held = everyone.under(rules, tiny_router.scope_for(rules))
    with pytest.raises(ToolCallRefused, match="tags.exclude drops tools tagged admin"):
        tool_to_call(tiny_router, "delete_file", held)  # its key reaches it: the rule is named
    tenants = parse_tenants({"tenants": {"wx": {"key": "wx-key-0123456789abcdef", "tags": ["weather"]}}})
    tenant = tenants.caller(tenants.specs[0], tiny_router)
    with pytest.raises(ToolCallRefused) as refused:
        tool_to_call(tiny_router, "send_email", tenant)
    assert "no tool named 'send_email'" in str(refused.value)  # beyond its key: it does not exist for it
    with pytest.raises(ToolCallRefused, match="Did you mean 'get_weather'"):
        tool_to_call(tiny_router, "get_wether", tenant)  # suggestions come from its own tools only
    with pytest.raises(ToolCallRefused) as hidden:
        tool_to_call(tiny_router, "send_emial", tenant)
    assert "send_email" not in str(hidden.value)
    no_admin = TagRules.parse(exclude="admin")
    assert tool_to_call(tiny_router, "get_weather", tenant.under(no_admin, tiny_router.scope_for(no_admin))).name
    with pytest.raises(ToolCallRefused, match="access non_destructive"):
        tool_to_call(tiny_router, "get_weather", tenant.under(rules, tiny_router.scope_for(rules)))


def test_an_exact_name_is_found_first(tiny_router: Router) -> None:
    assert tiny_router.route("convert_currency", k=3).names[0] == "convert_currency"
    assert tiny_router.route("  list_events ", k=1).names == ["list_events"]
    rules = TagRules.parse(exclude="admin")
    assert "delete_file" not in tiny_router.route("delete_file", k=3, rules=rules).names  # rules first


def tool(parameters: dict[str, Any]) -> Tool:
    return Tool(name="t", description="d", parameters=parameters)


def test_arguments_are_checked_against_the_input_schema() -> None:
    forwarder = Forwarder(LiveCatalog([], build=lambda catalog, previous: None, publish=lambda r: None))  # type: ignore[arg-type, return-value]
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "required": ["old"]}},
        },
        "required": ["path"],
    }
    forwarder.check_arguments(tool(schema), {"path": "/a", "edits": [{"old": "x"}]})
    with pytest.raises(InvalidToolArguments, match=r"at arguments: \"path\" is a required property"):
        forwarder.check_arguments(tool(schema), {})
    with pytest.raises(InvalidToolArguments, match=r"at arguments\.edits\[0\]: \"old\" is a required property"):
        forwarder.check_arguments(tool(schema), {"path": "/a", "edits": [{}]})
    with pytest.raises(InvalidToolArguments, match=r"at arguments\.path: 5 is not of type \"string\""):
        forwarder.check_arguments(tool(schema), {"path": 5})
    with pytest.raises(InvalidToolArguments, match="expected an object, got list"):
        forwarder.check_arguments(tool(schema), [1])
    forwarder.check_arguments(tool({}), {"anything": 1})  # no schema: nothing to check


def test_a_huge_result_is_cut_with_a_note() -> None:
    big = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a" * 3000),
            types.TextContent(type="text", text="b" * 50_000),
            types.ImageContent(type="image", data="AAAA" * 1000, mime_type="image/png"),
        ],
        structured_content={"rows": ["x" * 100] * 500},
    )
    size = len(big.model_dump_json(by_alias=True, exclude_none=True))
    cut = cut_to_size(big, "export", size, 10_000)
    assert len(cut.model_dump_json(by_alias=True, exclude_none=True)) <= 10_000
    assert cut.content[0] == big.content[0]  # what fits comes through untouched
    assert isinstance(cut.content[1], types.TextContent) and cut.content[1].text.startswith("bbb")
    note = cut.content[-1]
    assert isinstance(note, types.TextContent)
    assert f"was {size} bytes" in note.text and "1 content block(s) left out" in note.text
    assert "structuredContent left out" in note.text and cut.structured_content is None


def test_a_sessions_found_tools_are_appended_and_the_least_recently_used_goes() -> None:
    found = FoundTools(cap=4)
    assert found.add(["a", "b", "c"]) and found.names == ["a", "b", "c"]
    assert not found.add(["b", "a"])  # nothing new: no change to announce
    assert found.add(["d"]) and found.names == ["a", "b", "c", "d"]  # appended, never reordered
    found.touch("c")  # called: used
    assert found.add(["e"]) and found.names == ["a", "c", "d", "e"]  # b was used longest ago
    assert found.add(["f", "g", "h", "i", "j"]) and found.names == ["f", "g", "h", "i"]  # a search bigger than the cap


def test_call_on_a_service_without_mcp_servers_says_how_to_start_one(tiny_router: Router) -> None:
    with TestClient(create_app(tiny_router, settings=Settings())) as client:
        response = client.post("/call", json={"tool": "get_weather", "arguments": {"city": "Lisbon"}})
        assert response.status_code == 409
        assert "--mcp-servers" in response.json()["error"]["message"]
        bad = client.post("/call", json={"tool": "", "arguments": []})
        assert bad.status_code == 422


def test_operator_rules_hold_in_every_http_view(tiny_router: Router) -> None:
    settings = Settings(exclude_tags="admin", access="non_destructive")
    with TestClient(create_app(tiny_router, settings=settings)) as client:
        routed = client.post("/route", json={"query": "delete a file from storage", "k": 8}).json()
        assert "delete_file" not in [match["name"] for match in routed["matches"]]
        listed = client.get("/tools", params={"limit": 100}).json()
        assert "delete_file" not in [entry["name"] for entry in listed["tools"]]
        assert client.get("/tools/delete_file").status_code == 404
        deferred = client.get("/deferred", params={"format": "anthropic"}).json()
        assert "delete_file" not in str(deferred)


def test_uri_templates_match_what_they_describe() -> None:
    from toolsift.mcp.relay import _template_pattern

    one_segment = _template_pattern("demo://resource/dynamic/text/{resourceId}")
    assert one_segment.fullmatch("demo://resource/dynamic/text/7")
    assert not one_segment.fullmatch("demo://resource/dynamic/text/7/more")
    assert not one_segment.fullmatch("demo://resource/dynamic/blob/7")
    any_path = _template_pattern("file:///{+path}")
    assert any_path.fullmatch("file:///etc/hosts") and not any_path.fullmatch("http://x/etc")
    assert _template_pattern("a.b://{x}").fullmatch("a.b://y") and not _template_pattern("a.b://{x}").fullmatch(
        "aXb://y"
    )
