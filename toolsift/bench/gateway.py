"""``toolsift perf --gateway SERVERS``: what the gateway costs in time and saves in tokens.

Latency: the same SDK client (``mcp.Client`` over stdio, the handshake protocol) calls one tool of
an upstream server directly and through ``toolsift mcp --mcp-servers SERVERS`` (``call_tool``,
search mode), the two interleaved call by call so both see the same machine; the gateway's added
latency is the difference of the percentiles, with a bootstrap 95% interval on the p50 difference.

Tokens, what a client sends its model each turn (cl100k_base, each definition as compact JSON in
OpenAI's function form): every upstream tool listed (no gateway); ``--expose search`` (the fixed
three tools, plus one search result in a turn that searches); ``--expose dynamic`` (the three plus
the tools found so far in the session, after each of a series of searches).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from toolsift.bench.performance import percentiles
from toolsift.catalog import load_catalog
from toolsift.mcp import load_sources
from toolsift.mcp.client import open_client
from toolsift.mcp.sources import McpServerSpec
from toolsift.router.formats import to_mcp
from toolsift.router.tokens import token_counter

TASKS = (
    "echo this message back to me",
    "add two numbers",
    "read the contents of a text file",
    "write a new file with some content",
    "list the files in a directory",
    "search for files matching a pattern",
    "remember that Alice works at Acme",
    "what do you remember about Alice",
    "delete a stored memory",
    "move a file to another folder",
    "get information about a file",
    "show me a sample image",
)
"""The searches of the token figures: tasks a user of the three pinned servers would ask for."""
BOOTSTRAP = 2000


def run_gateway(
    servers_file: Path,
    tool: str,
    arguments: dict[str, Any],
    calls: int,
    echo: Callable[[str], None],
    catalog: Path | None = None,
) -> dict[str, Any]:
    """The figures; ``catalog``: static tools served beside the servers' (``--catalog``), listed
    with them when there is no gateway."""
    return anyio.run(_measure, servers_file, tool, arguments, calls, echo, catalog)


async def _measure(
    servers_file: Path,
    tool: str,
    arguments: dict[str, Any],
    calls: int,
    echo: Callable[[str], None],
    catalog: Path | None,
) -> dict[str, Any]:
    specs = [spec.model_copy(update={"protocol": "legacy"}) for spec in load_sources(servers_file)]
    count = token_counter()
    upstream = await _upstream_tools(specs)
    owner = next((spec for spec in specs if any(t["name"] == spec.prefix + tool for t in upstream[spec.name])), None)
    if owner is None:
        raise ValueError(f"no server in {servers_file} lists a tool named {tool!r}")
    every_tool = [definition for listed in upstream.values() for definition in listed]
    if catalog is not None:
        every_tool += [to_mcp(static) for static in load_catalog(catalog)]
    echo(f"{len(specs)} servers, {len(every_tool)} tools; timing {calls} calls of {tool!r} on '{owner.name}'")
    options = ("--catalog", str(catalog)) if catalog is not None else ()
    async with _gateway(servers_file, "search", options) as gateway, open_client(owner) as direct:
        latency = await _latency(direct, gateway, tool, owner.prefix, arguments, calls)
        searches = [await _timed_search(gateway, task) for task in TASKS]
        listed_search = (await gateway.list_tools()).tools
    echo("the dynamic mode's listing, search after search")
    async with _gateway(servers_file, "dynamic", options) as gateway:
        dynamic = []
        for number, task in enumerate(TASKS, start=1):
            await gateway.call_tool("search_tools", {"query": task, "k": 5})
            listed = (await gateway.list_tools(cache_mode="refresh")).tools
            dynamic.append({"searches": number, "tools": len(listed), "tokens": _tokens(count, listed)})
    return {
        "schema": "toolsift-gateway/1",
        "servers": [spec.name for spec in specs],
        "catalog": str(catalog) if catalog is not None else None,
        "tool": tool,
        "server": owner.name,
        "calls": calls,
        "latency_ms": latency,
        "search_ms": percentiles([seconds * 1000 for seconds, _ in searches]),
        "tokens": {
            "all_upstream": {"tools": len(every_tool), "tokens": sum(_tokens(count, [t]) for t in every_tool)},
            "search": {
                "tools": len(listed_search),
                "tokens": _tokens(count, listed_search),
                "search_result": percentiles([count(text) for _, text in searches]),
                "k": 5,
            },
            "dynamic": dynamic,
        },
    }


async def _upstream_tools(specs: list[McpServerSpec]) -> dict[str, list[dict[str, Any]]]:
    """Every tool each server lists, as the client of that server alone would see it (prefixed)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        async with open_client(spec) as client:
            tools = (await client.list_tools()).tools
        found[spec.name] = [_dumped(t) | {"name": spec.prefix + t.name} for t in tools]
    return found


async def _latency(
    direct: Client, gateway: Client, tool: str, prefix: str, arguments: dict[str, Any], calls: int
) -> dict[str, Any]:
    async def through_gateway() -> None:
        result = await gateway.call_tool("call_tool", {"name": prefix + tool, "arguments": arguments})
        if result.is_error:
            raise RuntimeError(f"the gateway's call failed: {result.content}")

    async def straight() -> None:
        await direct.call_tool(tool, arguments)

    for _ in range(20):  # warm both paths
        await straight()
        await through_gateway()
    times: dict[str, list[float]] = {"direct": [], "gateway": []}
    for number in range(calls):  # interleaved, alternating who goes first
        order = [("direct", straight), ("gateway", through_gateway)]
        for name, call in order if number % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            await call()
            times[name].append((time.perf_counter() - started) * 1000)
    direct_p, gateway_p = percentiles(times["direct"]), percentiles(times["gateway"])
    return {
        "direct": direct_p,
        "gateway": gateway_p,
        "added": {
            "p50": round(gateway_p["p50"] - direct_p["p50"], 3),
            "p95": round(gateway_p["p95"] - direct_p["p95"], 3),
            "p50_ci95": _median_difference_interval(times["gateway"], times["direct"]),
        },
    }


def _median_difference_interval(slower: list[float], faster: list[float]) -> list[float]:
    """A bootstrap 95% interval of median(slower) - median(faster)."""
    rng = random.Random(0)
    differences = sorted(
        statistics.median(rng.choices(slower, k=len(slower))) - statistics.median(rng.choices(faster, k=len(faster)))
        for _ in range(BOOTSTRAP)
    )
    return [round(differences[int(0.025 * BOOTSTRAP)], 3), round(differences[int(0.975 * BOOTSTRAP) - 1], 3)]


async def _timed_search(gateway: Client, task: str) -> tuple[float, str]:
    started = time.perf_counter()
    result = await gateway.call_tool("search_tools", {"query": task, "k": 5})
    seconds = time.perf_counter() - started
    text = "".join(getattr(block, "text", "") for block in result.content)
    return seconds, text


@asynccontextmanager
async def _gateway(servers_file: Path, expose: str, options: tuple[str, ...]) -> AsyncIterator[Client]:
    command = ["-m", "toolsift", "mcp", "--mcp-servers", str(servers_file), "--expose", expose, *options]
    params = StdioServerParameters(command=sys.executable, args=command, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=300, mode="legacy") as client:
            yield client


def _dumped(tool: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _tokens(count: Callable[[str], int], tools: list[Any]) -> int:
    """Tokens of MCP tool definitions in OpenAI's function form, as a client sends them to a model."""
    total = 0
    for tool in tools:
        record = tool if isinstance(tool, dict) else _dumped(tool)
        function = {"name": record["name"], "description": record.get("description", ""),
                    "parameters": record.get("inputSchema", {})}  # fmt: skip
        total += count(orjson.dumps({"type": "function", "function": function}).decode())
    return total


def gateway_table(document: dict[str, Any]) -> str:
    latency = document["latency_ms"]
    added = latency["added"]
    low, high = added["p50_ci95"]
    tokens = document["tokens"]
    search = tokens["search"]
    lines = [
        f"Calls of `{document['tool']}` on '{document['server']}', {document['calls']} each way, interleaved:",
        "",
        "| path | p50 ms | p95 ms |",
        "| --- | ---: | ---: |",
        f"| direct (SDK client → server) | {latency['direct']['p50']} | {latency['direct']['p95']} |",
        f"| through the gateway (`call_tool`) | {latency['gateway']['p50']} | {latency['gateway']['p95']} |",
        f"| **added by the gateway** | **{added['p50']}** (95% CI {low} to {high}) | **{added['p95']}** |",
        "",
        f"`search_tools` through the gateway: p50 {document['search_ms']['p50']} ms, "
        f"p95 {document['search_ms']['p95']} ms.",
        "",
        "Tokens the client sends its model per turn:",
        "",
        "| what is listed | tools | tokens per turn |",
        "| --- | ---: | ---: |",
        f"| every upstream tool{' and the catalog' if document.get('catalog') else ''} (no gateway) | {tokens['all_upstream']['tools']} | {tokens['all_upstream']['tokens']} |",
        f"| `--expose search` | {search['tools']} | {search['tokens']} "
        f"(+ {search['search_result']['p50']} p50 for a search result, k={search['k']}) |",
    ]
    for row in tokens["dynamic"]:
        if row["searches"] in (1, 3, len(tokens["dynamic"])):
            lines.append(
                f"| `--expose dynamic`, after {row['searches']} search(es) | {row['tools']} | {row['tokens']} |"
            )
    return "\n".join(lines) + "\n"
