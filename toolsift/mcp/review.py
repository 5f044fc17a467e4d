"""``toolsift approve``: what waits for approval, and pinning it.

A running service writes what it holds (``Approvals.publish_held``): approving a held tool pins
exactly the definition that service holds. Tools no service holds are read from the servers as
they list them now (a fresh connection), for approving a server's whole listing up front.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from toolsift.catalog import Tool
from toolsift.errors import CatalogError
from toolsift.mcp.approvals import Approvals
from toolsift.mcp.client import list_server_tools, open_client
from toolsift.mcp.sources import McpServerSpec, load_sources


async def approve_listed(
    servers_file: Path, approvals: Approvals, server: str | None, tools: list[str], list_only: bool
) -> list[str]:
    """Lines to print: what waits for approval (``list_only``), or what was pinned."""
    specs = [spec for spec in load_sources(servers_file) if server is None or spec.name == server]
    if not specs:
        raise CatalogError(f"no MCP server named '{server}'", source=str(servers_file))
    names = {spec.name for spec in specs}
    published = approvals.read_held()
    held = [h for h in published or [] if h["server"] in names and (not tools or h["tool"] in tools)]
    if list_only:
        if published is None:
            return ["no running service has held anything yet (it writes what it holds beside the approvals file)"]
        return [f"{h['server']}: {h['tool']} ({h['kind']}: {h['what']})" for h in held] or ["nothing waits"]
    lines = _pin_held(approvals, held)
    rest = [name for name in tools if name not in {h["tool"] for h in held}]
    if rest or (not tools and not held):
        lines += await _pin_listed(approvals, specs, rest)
    return lines


def _pin_held(approvals: Approvals, held: list[dict[str, Any]]) -> list[str]:
    lines = []
    for server in dict.fromkeys(h["server"] for h in held):
        pairs = [(h["upstream"], Tool.model_validate(h["definition"])) for h in held if h["server"] == server]
        lines.append(f"{server}: pinned {', '.join(sorted(approvals.pin(server, pairs, by='toolsift approve')))}")
    return lines


async def _pin_listed(approvals: Approvals, specs: list[McpServerSpec], tools: list[str]) -> list[str]:
    listings = []
    for spec in specs:
        with anyio.fail_after(spec.timeout):
            async with open_client(spec) as client:
                listed, _ = await list_server_tools(client, spec, believe=False)
        listings.append((spec, listed))
    missing = sorted(set(tools) - {tool.name for _, listed in listings for tool in listed})
    if missing:
        raise CatalogError(
            f"neither a running service holds nor a server lists {', '.join(missing)}",
            fix="Name tools as toolsift serves them (prefix included); `toolsift approve --list` shows what waits",
        )
    lines = []
    for spec, listed in listings:
        pairs = [(tool.name.removeprefix(spec.prefix), tool) for tool in listed if not tools or tool.name in tools]
        if pairs:
            lines.append(
                f"{spec.name}: pinned {', '.join(sorted(approvals.pin(spec.name, pairs, by='toolsift approve')))}"
            )
    return lines
