"""Read the tools of one MCP server with the official SDK and turn them into toolsift Tools."""

from __future__ import annotations

import logging
from typing import Any

from mcp import Client
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters

from toolsift.catalog import Tool, ToolAnnotations, parse_tool
from toolsift.errors import CatalogError
from toolsift.mcp.sources import McpServerSpec

logger = logging.getLogger("toolsift.mcp")

MAX_PAGES = 1000
_KNOWN_ANNOTATIONS = {field.alias or name for name, field in ToolAnnotations.model_fields.items()} | {"title"}


def open_client(spec: McpServerSpec, message_handler: MessageHandlerFnT | None = None) -> Client:
    """An (unentered) SDK client for ``spec``: ``async with open_client(spec) as client: ...``."""
    if spec.command is not None:
        server: Any = StdioServerParameters(command=spec.command, args=list(spec.args), env=spec.env, cwd=spec.cwd)
    else:
        server = spec.url
    return Client(server, read_timeout_seconds=spec.timeout, message_handler=message_handler, mode=spec.protocol)


async def list_server_tools(
    client: Client, spec: McpServerSpec, *, believe: bool = True
) -> tuple[list[Tool], list[str]]:
    """Every tool the server lists (all pages), as toolsift Tools, and a problem line for each
    tool that could not be read (it is left out; the others still count). ``believe=False``
    keeps the server's annotations as it claims them (``believed`` applies the trust later)."""
    tools: list[Tool] = []
    problems: list[str] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for listed in page.tools:
            record = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
            try:
                tools.append(to_tool(record, spec, believe=believe))
            except CatalogError as error:
                problems.append(f"server '{spec.name}': {error}")
        cursor = page.next_cursor
        if not cursor:
            break
    return tools, problems


def to_tool(record: dict[str, Any], spec: McpServerSpec, *, believe: bool = True) -> Tool:
    """One MCP tool definition as a Tool: prefixed name, the servers file's tags for it, group and
    source = server name, its annotations as far as the server is believed (``believed``). Tags
    and group are the operator's: a server's own (``_meta``) are ignored, or it could tag its way
    into a tenant's scope."""
    annotations = record.get("annotations")
    if isinstance(annotations, dict):  # newer hints this version does not know must not reject the tool
        record = {**record, "annotations": {k: v for k, v in annotations.items() if k in _KNOWN_ANNOTATIONS}}
    tool = parse_tool(record, dialect="mcp")
    tags = tuple(dict.fromkeys((*spec.tags, spec.server_tag)))
    update = {"name": spec.prefix + tool.name, "tags": tags, "group": spec.group, "source": spec.name}
    claimed = tool.model_copy(update=update)
    return believed(claimed, spec) if believe else claimed


def believed(tool: Tool, spec: McpServerSpec) -> Tool:
    """``tool`` (of ``spec``'s server) with the annotations toolsift acts on."""
    hints = _believed(tool.annotations, tool.name.removeprefix(spec.prefix), spec)
    return tool.model_copy(update={"annotations": hints})


def _believed(hints: ToolAnnotations, name: str, spec: McpServerSpec) -> ToolAnnotations:
    """The annotations toolsift acts on: an untrusted server's claims that a tool is harmless
    (``readOnlyHint: true``, ``destructiveHint: false``) are dropped; the operator's ``read_only``
    list marks a tool read-only whatever the server says."""
    if name in spec.read_only:
        return hints.model_copy(update={"read_only": True})
    if spec.trusted:
        return hints
    return hints.model_copy(
        update={"read_only": None if hints.read_only else hints.read_only,
                "destructive": None if hints.destructive is False else hints.destructive}
    )  # fmt: skip
