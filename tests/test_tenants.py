"""Per-tenant visibility: enforced before ranking, and nothing about another tenant's tools leaks
(not in matches, tool lists, tag counts, error suggestions, lint findings or sessions)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.embeddings import Embedder
from toolsift.errors import TenantsFileError
from toolsift.service import create_app
from toolsift.settings import Settings
from toolsift.tenants import load_tenants, parse_tenants

ACME_KEY = "acme-key-0123456789abcdef"
GLOBEX_KEY = "globex-key-0123456789abcdef"


@pytest.fixture
def tenants_file(tmp_path: Path) -> Path:
    path = tmp_path / "tenants.yaml"
    path.write_text(
        "tenants:\n"
        f"  acme:\n    key: {ACME_KEY}\n    tags: [email, calendar]\n"
        f"  globex:\n    key: {GLOBEX_KEY}\n    tags: {{any: [finance], exclude: [markets]}}\n    access: any\n"
    )
    return path


@pytest.fixture
def client(bundled_router: Router, tenants_file: Path) -> Iterator[TestClient]:
    with TestClient(create_app(bundled_router, settings=Settings(tenants=tenants_file))) as test_client:
        yield test_client


def as_tenant(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def visible(client: TestClient, key: str) -> set[str]:
    listing = client.get("/tools", params={"limit": 1000}, headers=as_tenant(key)).json()
    return {tool["name"] for tool in listing["tools"]}


@pytest.mark.model
def test_each_tenant_routes_only_within_its_tools(client: TestClient, bundled_router: Router) -> None:
    acme, globex = visible(client, ACME_KEY), visible(client, GLOBEX_KEY)
    assert "send_email" in acme and "transfer_money" in globex and not acme & globex
    catalog = bundled_router.catalog
    assert acme == {t.name for t in catalog if {"email", "calendar"} & set(t.tags)}
    assert globex == {t.name for t in catalog if "finance" in t.tags and "markets" not in t.tags}

    # a query that fits the other tenant's tools best still only gets the caller's own tools
    body = client.post(
        "/route", json={"query": "transfer 200 dollars to my savings account", "k": 5}, headers=as_tenant(ACME_KEY)
    ).json()
    assert body["eligible"] == len(acme)
    assert {m["name"] for m in body["matches"]} <= acme and {t["name"] for t in body["tools"]} <= acme
    rich = client.post(
        "/route",
        json={"query": "transfer 200 dollars to my savings account", "k": 5},
        headers={"X-API-Key": GLOBEX_KEY},
    ).json()
    assert rich["matches"][0]["name"] == "transfer_money"


@pytest.mark.model
def test_errors_and_listings_never_name_other_tenants_tools_or_tags(client: TestClient) -> None:
    globex_names = visible(client, GLOBEX_KEY)
    pinned = client.post("/route", json={"query": "x", "pinned": ["transfer_money"]}, headers=as_tenant(ACME_KEY))
    assert pinned.status_code == 400 and "no tool named 'transfer_money'" in pinned.text
    assert not any(name in pinned.json()["error"]["message"].replace("'transfer_money'", "") for name in globex_names)
    near = client.post("/route", json={"query": "x", "pinned": ["transfer_mone"]}, headers=as_tenant(ACME_KEY))
    assert "transfer_money" not in near.text  # no suggestion from outside the tenant

    tag = client.post("/route", json={"query": "x", "tags": ["finance"]}, headers=as_tenant(ACME_KEY))
    assert tag.status_code == 400 and "unknown tag 'finance'" in tag.text
    known = tag.json()["error"]["message"].split("Known tags:")[1]
    assert "payments" not in known and "email" in known  # only acme's tags are listed
    tags = client.get("/tools", headers=as_tenant(ACME_KEY)).json()["tags"]
    assert "finance" not in tags and tags["email"] >= 1

    lint = client.get("/lint", headers=as_tenant(ACME_KEY)).json()
    mentioned = {name for finding in lint["findings"] for name in finding["tools"]}
    assert mentioned and mentioned <= visible(client, ACME_KEY) and not mentioned & globex_names
    assert set(lint["schema_tokens"]) == visible(client, ACME_KEY)


@pytest.mark.model
def test_keys_are_required_and_sessions_are_per_tenant(client: TestClient) -> None:
    assert client.post("/route", json={"query": "send an email"}).status_code == 401
    assert client.post("/route", json={"query": "x"}, headers=as_tenant("wrong-key-0000000000")).status_code == 401
    assert client.get("/tools").status_code == 401
    assert client.get("/healthz").json() == {"status": "ok", "version": client.get("/healthz").json()["version"]}

    first = client.post(
        "/route", json={"query": "send an email to Bob", "k": 2, "session_id": "shared-id"}, headers=as_tenant(ACME_KEY)
    ).json()
    other = client.post(
        "/route",
        json={"query": "what is my account balance", "k": 2, "session_id": "shared-id"},
        headers=as_tenant(GLOBEX_KEY),
    ).json()
    assert first["session"]["turn"] == 1 and other["session"]["turn"] == 1  # same id, separate sessions
    assert other["session"]["id"] == "shared-id"
    assert not {t["name"] for t in other["tools"]} & {t["name"] for t in first["tools"]}


def test_tenants_file_is_checked(tmp_path: Path) -> None:
    with pytest.raises(TenantsFileError, match="tenant 'a'.*key_sha256"):
        parse_tenants({"tenants": {"a": {"tags": ["x"]}}})
    with pytest.raises(TenantsFileError, match="share a key"):
        parse_tenants({"tenants": {"a": {"key": ACME_KEY}, "b": {"key": ACME_KEY}}})
    path = tmp_path / "t.json"
    digest = "a" * 64
    path.write_text(json.dumps({"tenants": {"a": {"key_sha256": digest, "tools": ["send_email"]}}}))
    assert load_tenants(path).specs[0].tools == ("send_email",)


TYPO_TENANTS = {
    "tenants": {
        "ok": {"key": "ok-key-0123456789abcdef", "tags": ["email"]},
        "typo": {"key": "typo-key-0123456789abcdef", "tags": ["emial"], "tools": ["send_emails"]},
    }
}


def test_a_typo_in_a_tenants_tags_or_tools_is_named(tiny_router: Router) -> None:
    problems = parse_tenants(TYPO_TENANTS).problems(tiny_router.catalog)
    assert problems == [
        "tenant 'typo': no tool has the tag 'emial' (did you mean 'email'?)",
        "tenant 'typo': no tool is named 'send_emails' (did you mean 'send_email', 'search_emails'?)",
        "tenant 'typo' sees no tool of this catalog (8 tools)",
    ]


def test_serve_refuses_to_start_with_a_tenant_typo(tmp_path: Path, tiny_router: Router) -> None:
    from click.testing import CliRunner

    from toolsift.cli import main

    folder = tiny_router.save(tmp_path / "index")
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(TYPO_TENANTS))
    result = CliRunner().invoke(main, ["serve", "--index", str(folder), "--tenants", str(tenants)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "tenants.json" in result.output and "no tool has the tag 'emial' (did you mean 'email'?)" in result.output


def test_a_typo_is_logged_loudly_when_a_catalog_loads(tiny_router: Router, caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(tiny_router, settings=Settings(), tenants=parse_tenants(TYPO_TENANTS))
    with caplog.at_level("WARNING", logger="toolsift.service"), TestClient(app):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "tenants file: tenant 'typo' sees no tool of this catalog (8 tools)" in warnings


def test_tenants_see_their_own_fingerprint_and_no_server_details(tiny_router: Router) -> None:
    from toolsift.catalog import fingerprint_tools

    key = "solo-key-0123456789abcdef"
    tenants = parse_tenants({"tenants": {"solo": {"key": key, "tags": ["weather"]}}})
    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(tiny_router, settings=Settings(), tenants=tenants)) as client:
        mine = fingerprint_tools([t for t in tiny_router.catalog if "weather" in t.tags])
        routed = client.post("/route", json={"query": "weather"}, headers=headers).json()
        listed = client.get("/tools", headers=headers).json()
        assert routed["catalog_fingerprint"] == listed["catalog_fingerprint"] == mine != tiny_router.catalog.fingerprint
        assert "toolsift_catalog_tools" not in client.get("/metrics").text  # unauthenticated
        lint = client.get("/lint", headers=headers).json()
        assert lint["catalog"] == "catalog" and tiny_router.catalog.source not in json.dumps(lint)


def test_an_operator_tag_typo_is_logged_when_a_catalog_loads(
    tiny_router: Router, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(tiny_router, settings=Settings(tags="emial", exclude_tags="wether,weather"))
    with caplog.at_level("WARNING", logger="toolsift.service"), TestClient(app):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("unknown tag 'emial'. Did you mean 'email'?" in w and "no tool passes it" in w for w in warnings)
    assert any("unknown tag 'wether'" in w and "it leaves nothing out" in w for w in warnings)
    assert not any("'weather'." in w for w in warnings)  # a known tag is no typo


def test_a_tenant_reads_catalog_wide_findings_without_the_catalogs_counts(hashing_embedder: Embedder) -> None:
    from toolsift.catalog import parse_catalog

    tools = [
        {"name": "get_weather", "description": "Current weather for a city.", "tags": ["weather"]},
        {"name": "get_forecast", "description": "Weather forecast for the next days.", "tags": ["weather"]},
        {"name": "send_email", "description": "Send an email.", "tags": ["email"], "examples": ["mail Bob"]},
        {"name": "read_email", "description": "Read an email.", "tags": ["email"], "examples": ["open my mail"]},
    ]
    router = Router.build(parse_catalog(tools, source="/srv/secret/catalog.json"), hashing_embedder)
    key = "wx-only-key-0123456789abcdef"
    tenants = parse_tenants({"tenants": {"wx": {"key": key, "tags": ["weather"]}}})
    with TestClient(create_app(router, settings=Settings(), tenants=tenants)) as client:
        lint = client.get("/lint", params={"check": "no-examples"}, headers=as_tenant(key)).json()
        (finding,) = lint["findings"]
        assert finding["message"] == "get_weather, get_forecast: no example requests" and "of 4" not in str(lint)
        page = client.get("/tools/get_weather", headers=as_tenant(key)).json()
        assert [f["message"] for f in page["findings"] if f["code"] == "no-examples"] == [finding["message"]]


def test_a_tenant_reads_the_accuracy_of_its_own_tools_only(tiny_router: Router, tmp_path: Path) -> None:
    """TOOLSIFT_LINT_QUERIES gives the lint report a recall per tool; a tenant's page of findings
    lists those of its own tools, never another tenant's tool names."""
    queries = tmp_path / "queries.jsonl"
    labelled = [("send an email to Bob", "send_email"), ("weather in Oslo", "get_weather")]
    queries.write_text(
        "\n".join(json.dumps({"id": str(n), "query": q, "relevant": [t]}) for n, (q, t) in enumerate(labelled))
    )
    key = "wx-only-key-0123456789abcdef"
    tenants = parse_tenants({"tenants": {"wx": {"key": key, "tags": ["weather"]}}})
    with TestClient(create_app(tiny_router, settings=Settings(lint_queries=queries), tenants=tenants)) as client:
        mine = client.get("/lint", headers=as_tenant(key)).json()
        assert set(mine["per_tool_accuracy"]) == {"get_weather"} and "send_email" not in json.dumps(mine)
        page = client.get("/tools/get_weather", headers=as_tenant(key)).json()
        assert page["accuracy"] is not None
