"""What the gateway tests share: the real MCP servers from npm (``make mcp-servers``), the fault
servers of tests/fixtures, a generated static catalog to pad them with, and the gateway started
as a user starts it (``toolsift mcp --mcp-servers``), reached with the official SDK client over
stdio or streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import free_port

HERE = Path(__file__).parent
NPM = HERE / "mcp_servers" / "node_modules" / "@modelcontextprotocol"
FAULT_SERVER = HERE / "fixtures" / "mcp_fault_server.py"
LIAR_SERVER = HERE / "fixtures" / "mcp_liar_server.py"


def npm_server(name: str) -> str:
    """The entry point of a pinned npm MCP server (``server-everything`` ...)."""
    entry = NPM / name / "dist" / "index.js"
    if not entry.is_file():
        raise AssertionError(f"{entry} is missing: run `make mcp-servers` (npm installs the pinned servers)")
    return str(entry)


def everything() -> dict[str, Any]:
    return {"command": "node", "args": [npm_server("server-everything"), "stdio"]}


def filesystem(root: Path) -> dict[str, Any]:
    root.mkdir(parents=True, exist_ok=True)
    return {"command": "node", "args": [npm_server("server-filesystem"), str(root)]}


def memory(store: Path) -> dict[str, Any]:
    return {"command": "node", "args": [npm_server("server-memory")], "env": {"MEMORY_FILE_PATH": str(store)}}


def faults(call_log: Path, **extra: Any) -> dict[str, Any]:
    """The fault server; every call it receives is appended to ``call_log`` (what the upstream saw)."""
    env = {"CALL_LOG": str(call_log), "PATH": os.environ.get("PATH", "")}
    return {"command": sys.executable, "args": [str(FAULT_SERVER)], "env": env, **extra}


def liar() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(LIAR_SERVER)], "protocol": "legacy"}


def seen_by(call_log: Path) -> list[str]:
    """The tool names a fault server was called with."""
    return call_log.read_text().split() if call_log.exists() else []


def write_servers(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


VERBS = ["create", "list", "update", "archive", "export", "approve", "assign", "schedule", "sync", "audit"]
THINGS = [
    ("invoice", "billing"), ("ticket", "support"), ("calendar_event", "calendar"), ("customer", "crm"),
    ("deployment", "devops"), ("repository", "code"), ("payroll_run", "hr"), ("shipment", "logistics"),
    ("campaign", "marketing"), ("contract", "legal"), ("expense_report", "finance"), ("sensor", "iot"),
    ("playlist", "media"), ("recipe", "kitchen"), ("flight_booking", "travel"), ("lab_sample", "science"),
    ("warehouse_bin", "inventory"), ("survey", "research"), ("course", "education"), ("vehicle", "fleet"),
    ("patient_record", "health"), ("support_macro", "support"), ("dashboard", "analytics"), ("feature_flag", "devops"),
    ("purchase_order", "procurement"), ("podcast_episode", "media"), ("loan_application", "finance"),
    ("property_listing", "realestate"), ("job_posting", "hr"), ("ad_group", "marketing"),
]  # fmt: skip


def padding_catalog(path: Path, count: int = 300) -> Path:
    """``count`` generated static tools (business software: invoices, tickets, ...) beside the
    real servers', so a search picks among hundreds as it would for someone with ten servers."""
    tools = []
    for thing, area in THINGS:
        for verb in VERBS:
            noun = thing.replace("_", " ")
            tools.append(
                {
                    "name": f"{area}_{verb}_{thing}",
                    "description": f"{verb.capitalize()} a {noun} in the {area} system.",
                    "parameters": {
                        "type": "object",
                        "properties": {"id": {"type": "string", "description": f"The {noun}'s id"}},
                    },
                    "tags": ["pad", area],
                }
            )
    path.write_text(json.dumps(tools[:count]))
    return path


@asynccontextmanager
async def gateway(
    servers: Path,
    *options: str,
    transport: str = "stdio",
    env: dict[str, str] | None = None,
    key: str | None = None,
    mode: str = "legacy",
    on_message: Callable[[Any], Any] | None = None,
    log: Path | None = None,
) -> AsyncIterator[Client]:
    """``toolsift mcp --mcp-servers servers`` with ``options``, and an SDK client connected to it
    (``key``: a tenant key over HTTP). Its log (JSON lines) goes to ``log`` when given."""
    if transport == "http":
        async with (
            http_gateway(servers, *options, env=env, log=log) as url,
            connect(url, key=key, mode=mode, on_message=on_message) as client,
        ):
            yield client
        return
    command = ["-m", "toolsift", "mcp", "--mcp-servers", str(servers), *options]
    params = StdioServerParameters(command=sys.executable, args=command, env=_environ(env))
    with open(log or os.devnull, "w") as errlog:
        stdio = stdio_client(params, errlog=errlog)
        async with Client(stdio, read_timeout_seconds=180, mode=mode, message_handler=on_message or _ignore) as client:  # type: ignore[arg-type]
            yield client


@asynccontextmanager
async def http_gateway(
    servers: Path, *options: str, env: dict[str, str] | None = None, log: Path | None = None
) -> AsyncIterator[str]:
    """``toolsift mcp --mcp-servers servers --transport http``, started and ready: its ``/mcp`` URL."""
    port = free_port()
    command = [sys.executable, "-m", "toolsift", "mcp", "--mcp-servers", str(servers), *options]
    command += ["--transport", "http", "--port", str(port)]
    with open(log or os.devnull, "w") as errlog:
        process = subprocess.Popen(command, env=_environ(env), stderr=errlog)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    httpx.post(url, json={}, timeout=5)
                    break
                except httpx.HTTPError:
                    assert process.poll() is None, "the gateway stopped while starting"
                    assert time.monotonic() < deadline, "the gateway did not start in time"
                    time.sleep(0.2)
            yield url
            assert process.poll() is None, "the gateway died"
        finally:
            process.terminate()
            process.wait(timeout=60)


@asynccontextmanager
async def connect(
    url: str, *, key: str | None = None, mode: str = "legacy", on_message: Callable[[Any], Any] | None = None
) -> AsyncIterator[Client]:
    """An SDK client over streamable HTTP (``key``: sent as a bearer token)."""
    import httpx2  # the MCP SDK's HTTP client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=180)
    transport = streamable_http_client(url, http_client=http)
    handler = on_message or _ignore
    async with http, Client(transport, read_timeout_seconds=180, mode=mode, message_handler=handler) as client:  # type: ignore[arg-type]
        yield client


def _environ(extra: dict[str, str] | None) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", **(extra or {})}


async def _ignore(message: Any) -> None:
    return None


def names(listed: types.ListToolsResult) -> list[str]:
    return [tool.name for tool in listed.tools]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def found_names(result: types.CallToolResult) -> list[str]:
    """The tool names a search_tools result carries, best first."""
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return [match["name"] for match in result.structured_content["matches"]]
