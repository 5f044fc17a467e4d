"""Tool names providers refuse: never emitted, mapped to wire names that round-trip."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.catalog import parse_catalog
from toolsift.catalog.names import wire_name
from toolsift.cli import main
from toolsift.curation import lint_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.errors import CatalogError
from toolsift.service import create_app
from toolsift.settings import Settings

PROVIDER_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI function names, Anthropic tool names
HOSTILE = [
    "get the weather",
    "get/weather",
    "../../etc/passwd",
    "wéather",
    "w" * 256,
    "admin.tools.list",
    "hf:org/model",
]


def sent_names(body: dict[str, Any]) -> list[str]:
    return [str(t["function"]["name"] if "function" in t else t["name"]) for t in body["tools"]]


@pytest.fixture
def router() -> Router:
    tools = [{"name": name, "description": f"Tool number {i}: weather and files."} for i, name in enumerate(HOSTILE)]
    tools.append({"name": "get_weather", "description": "Current weather for a city."})
    return Router.build(parse_catalog(tools, source="hostile.json"), HashingEmbedder(64))


def test_wire_names_fit_every_provider_and_are_stable() -> None:
    for name in [*HOSTILE, "ok_name", "x" * 64, "日本語の名前"]:
        wire = wire_name(name)
        assert PROVIDER_RULE.match(wire), (name, wire)
        assert wire == wire_name(name) and (wire == name) == bool(PROVIDER_RULE.match(name))
    assert wire_name("get the weather").startswith("get_the_weather_") and wire_name("wéather").startswith("weather_")


@pytest.mark.parametrize("output_format", ["openai", "anthropic", "mcp"])
def test_route_never_sends_a_name_providers_refuse(router: Router, output_format: str) -> None:
    with TestClient(create_app(router, settings=Settings())) as client:
        body = client.post("/route", json={"query": "weather", "k": 8, "format": output_format}).json()
        names = sent_names(body)
        assert len(names) == 8 and all(PROVIDER_RULE.match(name) for name in names), names
        assert body["names"] == {wire_name(n): n for n in HOSTILE if wire_name(n) in names}
        assert {body["names"].get(name, name) for name in names} == {m["name"] for m in body["matches"]}

        pinned = client.post("/route", json={"query": "weather", "k": 1, "format": output_format, "pinned": [names[0]]})
        assert pinned.status_code == 200 and sent_names(pinned.json())[0] == names[0]  # a wire name is accepted back

        listing = client.get("/tools", params={"format": output_format, "limit": 100}).json()
        assert all(PROVIDER_RULE.match(name) for name in sent_names(listing)) and len(listing["names"]) == len(HOSTILE)


def test_allowed_tools_masks_by_wire_names(router: Router) -> None:
    with TestClient(create_app(router, settings=Settings())) as client:
        request = {"query": "weather", "k": 3, "format": "openai", "delivery": "allowed_tools"}
        body = client.post("/route", json=request).json()
        masked = [t["function"]["name"] for t in body["tool_choice"]["allowed_tools"]["tools"]]
        assert masked and set(masked) <= set(sent_names(body)) and all(PROVIDER_RULE.match(n) for n in masked)


def test_toolsift_format_keeps_the_catalog_names(router: Router) -> None:
    with TestClient(create_app(router, settings=Settings())) as client:
        body = client.post("/route", json={"query": "weather", "k": 8}).json()
        assert set(sent_names(body)) == set(router.catalog.names) and "names" not in body


def test_a_wire_name_clash_is_refused_at_load() -> None:
    clash = [
        {"name": "get weather", "description": "One."},
        {"name": wire_name("get weather"), "description": "Another tool whose own name is that wire name."},
    ]
    with pytest.raises(CatalogError, match="entry 2.*also the name sent for"):
        parse_catalog(list(reversed(clash)), source="clash.json")


def test_admin_added_names_are_mapped_too(router: Router) -> None:
    settings = Settings(admin_token="admin-token-0123456789")
    with TestClient(create_app(router, settings=settings)) as client:
        headers = {"Authorization": "Bearer admin-token-0123456789"}
        added = client.post(
            "/admin/tools", json={"tools": [{"name": "send a fax", "description": "Send a fax."}]}, headers=headers
        )
        assert added.status_code == 200
        body = client.post("/route", json={"query": "send a fax", "k": 1, "format": "anthropic"}).json()
        assert body["tools"][0]["name"] == wire_name("send a fax") and body["names"] == {
            wire_name("send a fax"): "send a fax"
        }


def test_lint_and_validate_name_the_rule_and_a_rename(router: Router, tmp_path: Path) -> None:
    report = lint_catalog(router.catalog, None, count_tokens=len)
    flagged = {f.tools[0]: f for f in report.findings if f.code == "name-renamed-for-providers"}
    assert set(flagged) == set(HOSTILE) and flagged["get the weather"].suggestion.endswith("'get_the_weather'")
    assert "^[a-zA-Z0-9_-]{1,64}$" in flagged["get/weather"].message
    catalog = tmp_path / "hostile.json"
    catalog.write_text(json.dumps([{"name": n, "description": "A tool."} for n in HOSTILE]))
    validated = CliRunner().invoke(main, ["validate", str(catalog)])
    assert validated.exit_code == 0 and f"{len(HOSTILE)} names do not match ^[a-zA-Z0-9_-]{{1,64}}$" in validated.output
