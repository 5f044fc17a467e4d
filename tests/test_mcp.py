"""Live catalogs from real MCP servers (official SDK, stdio and streamable HTTP), and toolsift as an
MCP server. The servers are tests/fixtures/mcp_tool_server.py, run as subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolsift import Router
from toolsift.catalog import fingerprint_tools
from toolsift.cli import main
from toolsift.embeddings import Embedder
from toolsift.errors import McpServersFileError
from toolsift.mcp import LiveCatalog, McpServerSpec, ReloadFailed, parse_sources, router_builder, to_tool
from toolsift.service import create_app
from toolsift.service.mcp_server import mcp_server_for
from toolsift.settings import Settings

from conftest import free_port

FIXTURE_SERVER = Path(__file__).parent / "fixtures" / "mcp_tool_server.py"

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_weather",
        "description": "Current weather conditions for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "send_email",
        "description": "Send an email message to a recipient.",
        "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}},
    },
    {
        "name": "create_invoice",
        "description": "Create an invoice for a customer with line items and a due date.",
        "inputSchema": {"type": "object", "properties": {"customer": {"type": "string"}}},
    },
]

CHANGED: list[dict[str, Any]] = [
    TOOLS[0],
    {**TOOLS[1], "description": "Send an email or a reply to one or more recipients."},  # edited
    {
        "name": "translate_text",
        "description": "Translate text from one language into another.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "to": {"type": "string"}}},
    },
]  # create_invoice removed


def write_tools(path: Path, tools: list[dict[str, Any]] | str) -> None:
    staging = path.with_suffix(".tmp")
    staging.write_text(tools if isinstance(tools, str) else json.dumps(tools))
    os.replace(staging, path)  # the server never reads a half-written file


def stdio_spec(tools_file: Path, **extra: Any) -> McpServerSpec:
    return McpServerSpec(
        name="fixture",
        command=sys.executable,
        args=(str(FIXTURE_SERVER), str(tools_file), "stdio"),
        timeout=60,
        **extra,
    )


async def wait_for(condition: Callable[[], bool], seconds: float = 60) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.05)


# -- the servers file and tool conversion --------------------------------------------------


def test_servers_file_is_parsed_and_checked() -> None:
    specs = parse_sources(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-filesystem", "/data"], "env": {"A": "1"}},
                "github": {"url": "https://mcp.example.com/mcp", "prefix": "gh_", "tags": ["code"]},
            }
        }
    )
    assert [(s.name, s.transport) for s in specs] == [("files", "stdio"), ("github", "http")]
    with pytest.raises(McpServersFileError, match="server 'both'.*either 'command'"):
        parse_sources({"mcpServers": {"both": {"command": "x", "url": "http://a"}}})
    with pytest.raises(McpServersFileError, match="server 'none'"):
        parse_sources({"mcpServers": {"none": {"args": ["x"]}}})
    with pytest.raises(McpServersFileError, match="server 'typo'.*comand"):
        parse_sources({"mcpServers": {"typo": {"comand": "x"}}})
    with pytest.raises(McpServersFileError, match="no servers listed"):
        parse_sources({"servers": {}})


def test_mcp_tools_become_catalog_tools() -> None:
    spec = McpServerSpec(name="gh", url="http://localhost/mcp", prefix="gh_", tags=("code",))
    claims = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "someFutureHint": 1}
    tool = to_tool({**TOOLS[0], "annotations": claims}, spec)
    assert tool.name == "gh_get_weather" and tool.source == "gh"
    assert tool.tags == ("code", "mcp:gh") and tool.parameters["required"] == ["city"]
    # an untrusted server's claims that a tool is harmless are dropped; other hints are kept
    assert tool.annotations.read_only is None and tool.annotations.destructive is None
    assert tool.annotations.idempotent is True
    destructive = to_tool({**TOOLS[0], "annotations": {"destructiveHint": True}}, spec)
    assert destructive.annotations.destructive is True  # a claim of harm stands
    trusted = to_tool({**TOOLS[0], "annotations": claims}, spec.model_copy(update={"trusted": True}))
    assert trusted.annotations.read_only is True and trusted.annotations.destructive is False
    vouched = to_tool(TOOLS[0], spec.model_copy(update={"read_only": ("get_weather",)}))
    assert vouched.annotations.read_only is True  # the operator's word, whatever the server says


def test_a_name_clash_drops_the_newcomers_tool_and_the_rest_keeps_applying(
    tmp_path: Path, hashing_embedder: Embedder
) -> None:
    """A clash once froze every later rebuild (and a restart with it exited): now the source that
    served the name keeps it, the other's tool of that name is left out and reported, and every
    other change still applies."""
    one, two = stdio_spec(tmp_path / "a.json"), McpServerSpec(name="other", url="http://localhost:1/mcp")
    published: list[Router] = []
    live = LiveCatalog([one, two], build=router_builder(hashing_embedder), publish=published.append)
    live.servers["fixture"].tools = [to_tool(TOOLS[0], one), to_tool(TOOLS[1], one)]
    live.servers["other"].tools = [to_tool(TOOLS[0], two)]
    assert [t.name for t in live.merged_catalog()] == ["get_weather", "send_email"]  # the first listed serves it
    assert live.clashes == [{"tool": "get_weather", "serving": "server 'fixture'", "dropped": ["server 'other'"]}]

    async def scenario() -> None:
        live.servers["fixture"].tools = [to_tool(TOOLS[1], one)]
        await live.rebuild("start")  # only 'other' offers get_weather now: it serves it
        assert live.status()["clashes"] == []
        live.servers["fixture"].tools = [to_tool(TOOLS[0], one), to_tool(TOOLS[1], one), to_tool(TOOLS[2], one)]
        await live.rebuild("list_changed")  # 'fixture' offers it too: 'other' keeps it, fixture's new tool lands
        catalog = published[-1].catalog
        assert sorted(catalog.names) == ["create_invoice", "get_weather", "send_email"]
        assert catalog.get("get_weather") == to_tool(TOOLS[0], two)
        assert live.status()["clashes"] == [
            {"tool": "get_weather", "serving": "server 'other'", "dropped": ["server 'fixture'"]}
        ]

    anyio.run(scenario)


# -- live catalog over stdio, with the real model --------------------------------------------


@pytest.mark.model
@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_live_catalog_follows_tools_list_changed(tmp_path: Path, real_embedder: Embedder, protocol: str) -> None:
    tools_file = tmp_path / "tools.json"
    write_tools(tools_file, TOOLS)
    published: list[Router] = []

    async def scenario() -> None:
        live = LiveCatalog(
            [stdio_spec(tools_file, protocol=protocol)],
            build=router_builder(real_embedder),
            publish=published.append,
        )
        async with live.running():
            server = live.status()["servers"]["fixture"]
            assert server["connected"] and server["tools"] == 3
            assert (server["protocol"] == "2026-07-28") == (protocol == "auto")
            first = published[-1]
            assert first.route("bill the customer", 1).names == ["create_invoice"]
            assert "mcp:fixture" in first.catalog.tags

            write_tools(tools_file, CHANGED)  # the server announces the change itself
            await wait_for(lambda: len(published) == 2)
            second = published[-1]
            assert sorted(second.catalog.names) == ["get_weather", "send_email", "translate_text"]
            assert second.route("translate this sentence into French", 1).names == ["translate_text"]
            assert second.last_build is not None
            assert (second.last_build.embedded, second.last_build.reused) == (2, 1)  # only new + edited
            report = live.status()["last_reload"]
            assert report["added"] == ["translate_text"] and report["removed"] == ["create_invoice"]
            assert first.catalog.names == ["get_weather", "send_email", "create_invoice"]  # untouched

            write_tools(tools_file, "{ not json")  # the server now fails to list its tools
            await wait_for(lambda: live.servers["fixture"].last_error is not None)
            with pytest.raises(ReloadFailed, match="previous catalog is still serving"):
                await live.reload()
            assert published[-1] is second and len(published) == 2

            write_tools(tools_file, TOOLS)
            await wait_for(lambda: len(published) == 3)
            assert published[-1].route("bill the customer", 1).names == ["create_invoice"]
            assert (await live.reload())["changed"] is False  # nothing new since

    anyio.run(scenario)


@pytest.mark.model
def test_live_catalog_over_streamable_http(tmp_path: Path, real_embedder: Embedder) -> None:
    tools_file = tmp_path / "tools.json"
    write_tools(tools_file, TOOLS)
    port = free_port()
    process = subprocess.Popen([sys.executable, str(FIXTURE_SERVER), str(tools_file), "http", str(port)])
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, "fixture HTTP server did not start"
                time.sleep(0.1)
        published: list[Router] = []

        async def scenario() -> None:
            spec = McpServerSpec(name="web", url=f"http://127.0.0.1:{port}/mcp", prefix="web_", timeout=60)
            live = LiveCatalog([spec], build=router_builder(real_embedder), publish=published.append)
            async with live.running():
                assert sorted(published[-1].catalog.names) == [
                    "web_create_invoice",
                    "web_get_weather",
                    "web_send_email",
                ]
                write_tools(tools_file, CHANGED)
                await wait_for(lambda: len(published) == 2)
                assert published[-1].route("translate into German", 1).names == ["web_translate_text"]

        anyio.run(scenario)
    finally:
        process.terminate()
        process.wait(timeout=30)


# -- the HTTP service with a live catalog ---------------------------------------------------


@pytest.fixture
def live_files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    tools_file = tmp_path / "tools.json"
    write_tools(tools_file, TOOLS)
    servers = tmp_path / "servers.yaml"
    servers.write_text(
        "mcpServers:\n"
        f"  fixture:\n    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(FIXTURE_SERVER))}, {json.dumps(str(tools_file))}, stdio]\n"
        "    timeout: 60\n"
        "    policy: accept\n"  # changes apply as they come (quarantine: test_changes_wait_for_approval)
    )
    yield tools_file, servers


@pytest.mark.model
def test_service_serves_a_live_catalog_with_admin_reload(
    live_files: tuple[Path, Path], real_embedder: Embedder
) -> None:
    tools_file, servers = live_files
    settings = Settings(mcp_servers=servers, cache_dir=None, admin_token="s3cret")
    with TestClient(create_app(settings=settings)) as client:
        body = client.post("/route", json={"query": "bill the customer", "k": 1, "session_id": "s1"}).json()
        assert [m["name"] for m in body["matches"]] == ["create_invoice"]
        assert client.post("/admin/reload").status_code == 401
        assert client.post("/admin/reload", headers={"Authorization": "Bearer nope"}).status_code == 401
        admin = {"Authorization": "Bearer s3cret"}
        status = client.get("/admin/status", headers=admin).json()
        assert status["live"]["servers"]["fixture"]["tools"] == 3
        edit = client.post("/admin/tools", json={"tools": [TOOLS[0]]}, headers=admin)
        assert edit.status_code == 409 and "MCP servers" in edit.json()["error"]["message"]

        write_tools(tools_file, CHANGED)
        deadline = time.monotonic() + 60
        while client.get("/healthz").json()["tools"] != 3 or "translate_text" not in str(client.get("/tools").json()):
            assert time.monotonic() < deadline, "the change was not picked up"
            time.sleep(0.1)
        reloaded = client.post("/admin/reload", headers=admin)
        assert reloaded.status_code == 200 and reloaded.json()["changed"] is False
        # the session saw create_invoice leave the catalog
        again = client.post("/route", json={"query": "translate to French", "k": 1, "session_id": "s1"}).json()
        assert again["session"]["removed"] == ["create_invoice"] and again["session"]["prefix_changed"]
        assert [t["name"] for t in again["tools"]] == ["translate_text"]

        write_tools(tools_file, "{ broken")
        failed = client.post("/admin/reload", headers=admin)
        assert failed.status_code == 502 and "still serving" in failed.json()["error"]["message"]
        assert (
            client.post("/route", json={"query": "translate", "k": 1}).json()["matches"][0]["name"] == "translate_text"
        )


def described(client: TestClient, name: str) -> str:
    return str({tool["name"]: tool for tool in client.get("/tools").json()["tools"]}[name]["description"])


def test_changes_wait_for_approval(live_files: tuple[Path, Path], real_embedder: Embedder) -> None:
    """``policy: quarantine`` (the default): the first listing is pinned; later, an edited tool
    keeps serving its approved definition and a new tool is not served, until approved (admin API,
    or ``toolsift approve`` from another process, which the service picks up)."""
    tools_file, servers = live_files
    servers.write_text(servers.read_text().replace("    policy: accept\n", ""))
    approvals = servers.with_name(servers.name + ".approvals.json")
    settings = Settings(mcp_servers=servers, cache_dir=None, admin_token="s3cret")
    admin = {"Authorization": "Bearer s3cret"}
    with TestClient(create_app(settings=settings)) as client:
        assert set(json.loads(approvals.read_text())["servers"]["fixture"]) == {t["name"] for t in TOOLS}
        write_tools(tools_file, CHANGED)
        deadline = time.monotonic() + 60
        while "create_invoice" in str(client.get("/tools").json()):  # removed: that applies at once
            assert time.monotonic() < deadline, "the change was not picked up"
            time.sleep(0.1)
        served = {t["name"]: t for t in client.get("/tools").json()["tools"]}
        assert set(served) == {"get_weather", "send_email"}  # translate_text is new: held
        assert served["send_email"]["description"] == TOOLS[1]["description"]  # the approved one
        held = client.get("/admin/status", headers=admin).json()["live"]["quarantined"]
        assert {(h["tool"], h["kind"]) for h in held} == {("send_email", "changed"), ("translate_text", "new")}
        assert "description" in next(h["what"] for h in held if h["tool"] == "send_email")

        approved = client.post("/admin/approve", json={"tools": ["translate_text"]}, headers=admin)
        assert approved.status_code == 200 and approved.json()["approved"] == {"fixture": ["translate_text"]}
        assert "translate_text" in str(client.get("/tools").json())
        assert client.post("/admin/approve", json={"tools": ["nope"]}, headers=admin).status_code == 400
        assert client.post("/admin/approve", json={}).status_code == 401

        result = CliRunner().invoke(main, ["approve", "--mcp-servers", str(servers), "--tool", "send_email"])
        assert result.exit_code == 0, result.output
        assert "send_email" in result.output
        deadline = time.monotonic() + 30
        while described(client, "send_email") != CHANGED[1]["description"]:
            assert time.monotonic() < deadline, "the approval made by the CLI was not picked up"
            time.sleep(0.2)
        assert client.get("/admin/status", headers=admin).json()["live"]["quarantined"] == []


# -- toolsift as an MCP server ---------------------------------------------------------------


@pytest.mark.model
def test_search_tools_over_mcp_in_process(bundled_router: Router) -> None:
    async def scenario() -> None:
        async with Client(mcp_server_for(bundled_router)) as client:
            listed = await client.list_tools()
            assert sorted(t.name for t in listed.tools) == ["list_tags", "search_tools"]
            query = "Email Sarah the quarterly report"
            result = await client.call_tool("search_tools", {"query": query, "k": 3})
            assert not result.is_error and result.structured_content is not None
            names = [m["name"] for m in result.structured_content["matches"]]
            assert "send_email" in names
            assert names == bundled_router.route(query, k=3).names  # the library's ranking, unchanged
            assert all("inputSchema" in tool for tool in result.structured_content["tools"])
            bad = await client.call_tool("search_tools", {"query": "x", "tags": ["emial"]})
            assert bad.is_error and "Did you mean 'email'" in bad.content[0].text  # type: ignore[union-attr]

    anyio.run(scenario)


@pytest.mark.model
def test_toolsift_mcp_command_over_stdio(bundled_index: Path) -> None:
    async def scenario() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolsift", "mcp", "--index", str(bundled_index)],
            env={"HF_HUB_OFFLINE": "1", "PATH": os.environ.get("PATH", "")},
        )
        async with Client(params, read_timeout_seconds=120) as client:
            result = await client.call_tool("search_tools", {"query": "weather forecast for Paris", "k": 2})
            assert result.structured_content is not None
            assert any("weather" in m["name"] or "forecast" in m["name"] for m in result.structured_content["matches"])

    anyio.run(scenario)


@pytest.mark.model
def test_build_snapshot_from_mcp_servers(live_files: tuple[Path, Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from toolsift.cli import main

    _, servers = live_files
    out = tmp_path / "snapshot"
    result = CliRunner().invoke(main, ["build", "--mcp-servers", str(servers), "--out", str(out), "--no-cache", "-q"])
    assert result.exit_code == 0, result.output
    assert "indexed 3 tools" in result.output
    assert sorted(Router.load(out).catalog.names) == ["create_invoice", "get_weather", "send_email"]


@pytest.mark.slow
def test_toolsift_mcp_follows_a_rebuilt_index_folder(tmp_path: Path, tiny_router: Router) -> None:
    """`toolsift mcp` reloads the index folder as `toolsift serve` does."""
    from toolsift.catalog import Catalog, parse_catalog

    folder = tiny_router.save(tmp_path / "index")
    fax = parse_catalog([{"name": "send_fax", "description": "Send a fax to a phone number."}], source="fax")
    bigger = tiny_router.rebuilt(Catalog([*tiny_router.catalog, *fax], source="bigger"))

    async def names_for(client: Client, query: str) -> set[str]:
        result = await client.call_tool("search_tools", {"query": query, "k": 9})
        assert result.structured_content is not None
        return {m["name"] for m in result.structured_content["matches"]}

    async def scenario() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolsift", "mcp", "--index", str(folder)],
            env={**os.environ, "TOOLSIFT_RELOAD_INTERVAL": "0.2"},
        )
        async with Client(params, read_timeout_seconds=120) as client:
            assert "send_fax" not in await names_for(client, "send a fax")
            bigger.save(folder)  # a new build lands in the folder
            deadline = time.monotonic() + 30
            while "send_fax" not in await names_for(client, "send a fax"):
                assert time.monotonic() < deadline, "toolsift mcp did not load the new index"
                await anyio.sleep(0.2)

    anyio.run(scenario)


def test_search_tools_validates_like_route_and_takes_pinned_and_min_score(tiny_router: Router) -> None:
    async def scenario() -> None:
        async with Client(mcp_server_for(tiny_router)) as client:
            bad_id = await client.call_tool("search_tools", {"query": "x", "session_id": "has spaces"})
            assert bad_id.is_error and "session_id" in bad_id.content[0].text  # type: ignore[union-attr]
            too_low = await client.call_tool("search_tools", {"query": "x", "min_score": -1000})
            assert too_low.is_error and "min_score" in too_low.content[0].text  # type: ignore[union-attr]
            pinned = await client.call_tool("search_tools", {"query": "weather", "k": 1, "pinned": ["send_email"]})
            assert pinned.structured_content is not None and pinned.structured_content["pinned"] == ["send_email"]
            assert pinned.structured_content["tools"][0]["name"] == "send_email"
            nothing = await client.call_tool("search_tools", {"query": "weather", "min_score": 99})
            assert nothing.structured_content is not None and nothing.structured_content["matches"] == []
            tags = await client.call_tool("list_tags", {})
            assert tags.structured_content == {"tags": tiny_router.tag_index.visible_tags(None), "groups": {}}

    anyio.run(scenario)


@pytest.mark.slow
def test_mcp_over_http_needs_a_key_and_scopes_by_tenant(tmp_path: Path, tiny_router: Router) -> None:
    from mcp.client.streamable_http import streamable_http_client

    folder = tiny_router.save(tmp_path / "index")
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text("tenants:\n  wx:\n    key: wx-key-0123456789abcdef\n    tags: [weather]\n")
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "toolsift",
        "mcp",
        "--index",
        str(folder),
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, env={**os.environ, "TOOLSIFT_TENANTS": str(tenants)}, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, timeout=5)
                break
            except httpx.HTTPError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "Unauthorized"
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope-0123456789abcdef"}, timeout=5)
        assert wrong.status_code == 401

        async def scenario() -> None:
            import httpx2  # the MCP SDK's HTTP client

            http = httpx2.AsyncClient(headers={"Authorization": "Bearer wx-key-0123456789abcdef"}, timeout=30)
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                found = await client.call_tool("search_tools", {"query": "send an email", "k": 8})
                assert found.structured_content is not None
                assert {m["name"] for m in found.structured_content["matches"]} == {"get_weather", "get_forecast"}
                weather = [tool for tool in tiny_router.catalog if "weather" in tool.tags]
                assert found.structured_content["catalog_fingerprint"] == fingerprint_tools(weather)  # the tenant's
                tags = await client.call_tool("list_tags", {})
                assert tags.structured_content == {"tags": {"read": 2, "weather": 2}, "groups": {}}

        anyio.run(scenario)
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_tools_list_carries_cache_hints_as_stable_as_the_listing_is(tiny_router: Router, tmp_path: Path) -> None:
    """On 2026-07-28 connections: toolsift's own listing (its tools change only with its version)
    for an hour, shared only when no key is asked for; a gateway's dynamic listing and relayed
    resources and prompts never cached."""
    from toolsift.service.mcp_server import LISTING_TTL_MS, cache_hints
    from toolsift.service.state import ServiceState
    from toolsift.tenants import parse_tenants

    async def listed(settings: Settings) -> tuple[int, str, str | None]:
        async with Client(mcp_server_for(tiny_router, settings)) as client:
            result = await client.list_tools(cache_mode="refresh")
            again = await client.list_tools()  # the client's cache answers within the hint
            assert again.tools == result.tools
            return result.ttl_ms, result.cache_scope, client.protocol_version

    assert anyio.run(listed, Settings()) == (LISTING_TTL_MS, "public", "2026-07-28")
    assert anyio.run(listed, Settings(admin_token="admin-token-0123456789"))[:2] == (LISTING_TTL_MS, "private")
    tenants = parse_tenants({"tenants": {"a": {"key": "a-key-0123456789abcdef"}}})
    keyed = cache_hints(ServiceState.create(tiny_router, Settings(), tenants))
    assert keyed["tools/list"].scope == "private" and keyed["tools/list"].ttl_ms == LISTING_TTL_MS
    servers = tmp_path / "servers.yaml"
    servers.write_text("mcpServers: {x: {command: x}}\n")
    for expose, ttl in (("search", LISTING_TTL_MS), ("dynamic", 0)):
        hints = cache_hints(ServiceState.create(tiny_router, Settings(mcp_servers=servers, expose=expose), None))
        assert hints["tools/list"].ttl_ms == ttl and hints["server/discover"].ttl_ms == LISTING_TTL_MS
        assert all(hints[m].ttl_ms == 0 and hints[m].scope == "private" for m in ("resources/list", "prompts/list"))
