"""Delivery: pinned tools, access rules and allowed_tools, the response body in each output
format, and byte-identical bodies across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolsift import Router, TagRules
from toolsift.errors import InvalidQuery, UnknownTool
from toolsift.router import RouteQuery, deliver
from toolsift.service.schemas import route_body


def test_pinned_tools_come_first_and_do_not_take_places(tiny_router: Router) -> None:
    result = tiny_router.route("weather forecast", 2, pinned=["send_email"])
    assert [t.name for t in result.pinned] == ["send_email"]
    assert len(result.matches) == 2 and "send_email" not in result.names
    assert result.tools[0].name == "send_email"
    assert [t.name for t in result.tools[1:]] == sorted(result.names)
    # pinned tools obey the request's rules too: a pinned tool they forbid is a conflict
    with pytest.raises(InvalidQuery, match="'delete_file' is pinned"):
        tiny_router.route("weather", 1, TagRules.parse(any_of=["weather"]), pinned=["delete_file"])
    ruled = tiny_router.route("weather", 1, TagRules.parse(any_of=["weather"]), pinned=["get_forecast"])
    assert [t.name for t in ruled.tools][0] == "get_forecast"


def test_unknown_pinned_tool_is_a_clear_error(tiny_router: Router) -> None:
    with pytest.raises(UnknownTool, match="Did you mean 'send_email'"):
        tiny_router.route("x", pinned=["send_emails"])


def test_allowed_tools_needs_openai_and_a_small_superset(tiny_router: Router) -> None:
    result = tiny_router.route("weather", 2)
    with pytest.raises(InvalidQuery, match="format=openai"):
        deliver(tiny_router, result, RouteQuery("weather", 2, delivery="allowed_tools"))
    body = route_body(
        deliver(tiny_router, result, RouteQuery("weather", 2, output_format="openai", delivery="allowed_tools"))
    )
    assert [t["function"]["name"] for t in body["tools"]] == sorted(tiny_router.catalog.names)
    masked = [t["function"]["name"] for t in body["tool_choice"]["allowed_tools"]["tools"]]
    assert masked == sorted(result.names) and body["tool_choice"]["type"] == "allowed_tools"


@pytest.mark.model
def test_pinned_access_and_allowed_tools_over_http(bundled_client: TestClient) -> None:
    conflict = bundled_client.post(
        "/route",
        json={"query": "delete the old files", "k": 3, "access": "read_only", "pinned": ["send_email"]},
    )
    assert conflict.status_code == 400 and "'send_email' is pinned" in conflict.json()["error"]["message"]
    catalog = bundled_client.get("/tools", params={"limit": 1000}).json()["tools"]
    read_only = {t["name"] for t in catalog if t.get("annotations", {}).get("read_only")}
    reader = "search_emails" if "search_emails" in read_only else sorted(read_only)[0]
    body = bundled_client.post(
        "/route",
        json={"query": "delete the old files", "k": 3, "access": "read_only", "pinned": [reader]},
    ).json()
    assert body["tools"][0]["name"] == reader and body["pinned"] == [reader]
    assert {m["name"] for m in body["matches"]} <= read_only and body["eligible"] == len(read_only) - 1

    masked = bundled_client.post(
        "/route",
        json={
            "query": "what's the weather",
            "k": 2,
            "format": "openai",
            "delivery": "allowed_tools",
            "tags": ["weather"],
        },
    ).json()
    superset = [t["function"]["name"] for t in masked["tools"]]
    allowed = [t["function"]["name"] for t in masked["tool_choice"]["allowed_tools"]["tools"]]
    assert superset == sorted(superset) and set(allowed) <= set(superset) and len(allowed) == 2
    again = bundled_client.post(
        "/route",
        json={
            "query": "will it rain on Sunday",
            "k": 2,
            "format": "openai",
            "delivery": "allowed_tools",
            "tags": ["weather"],
        },
    ).json()
    assert again["tools"] == masked["tools"] and again["fingerprint"] == masked["fingerprint"]

    too_big = bundled_client.post("/route", json={"query": "x", "format": "openai", "delivery": "allowed_tools"})
    assert too_big.status_code == 400 and "session_id" in too_big.json()["error"]["message"]
    wrong = bundled_client.post("/route", json={"query": "x", "delivery": "allowed_tools"})
    assert wrong.status_code == 400 and "format=openai" in wrong.json()["error"]["message"]
    unknown = bundled_client.post("/route", json={"query": "x", "pinned": ["send_emial"]})
    assert unknown.status_code == 400 and "send_email" in unknown.json()["error"]["message"]
    bad_id = bundled_client.post("/route", json={"query": "x", "session_id": "has spaces"})
    assert bad_id.status_code == 422


_PRINT_ROUTE_BYTES = """
import sys
from fastapi.testclient import TestClient
from toolsift.service import create_app
from toolsift.settings import Settings
app = create_app(settings=Settings(index_path=sys.argv[1]))
with TestClient(app) as client:
    for fmt in ("openai", "anthropic", "mcp"):
        body = {"query": "what's the weather in Lisbon tomorrow", "k": 4, "format": fmt, "pinned": ["send_email"]}
        sys.stdout.buffer.write(client.post("/route", json=body).content + b"\\n")
"""


@pytest.mark.model
def test_route_bytes_are_identical_across_processes(bundled_index: Path) -> None:
    processes = [  # two processes at once, with different hash seeds
        subprocess.Popen(
            [sys.executable, "-c", _PRINT_ROUTE_BYTES, str(bundled_index)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PYTHONHASHSEED": seed, "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        )
        for seed in ("1", "2")
    ]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err.decode()[-2000:]
        outputs.append(out)
    assert outputs[0] == outputs[1]
    lines = outputs[0].splitlines()
    assert len(lines) == 3 and all(b'"send_email"' in line for line in lines)


def test_definitions_in_each_format(tiny_router: Router) -> None:
    result = tiny_router.route("delete a file", k=1, rules=TagRules.parse(any_of="admin"))
    [openai] = result.definitions("openai")
    [anthropic] = result.definitions("anthropic")
    [mcp] = result.definitions("mcp")
    assert openai == {
        "type": "function",
        "function": {
            "name": "delete_file",
            "description": "Delete a file from storage.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert anthropic["input_schema"] == {"type": "object", "properties": {}}
    assert mcp["annotations"] == {"destructiveHint": True}
    [gemini] = result.definitions("gemini")
    assert gemini == {"type": "function", "name": "delete_file", "description": "Delete a file from storage.",
                      "parameters": {"type": "object", "properties": {}}}  # fmt: skip
