"""toolsift as an MCP server: one ``search_tools`` tool that any MCP client can call.

    toolsift mcp --index var/index                      # stdio (for Claude Desktop, IDEs, agents)
    toolsift mcp --index var/index --transport http     # streamable HTTP on /mcp

The result carries the chosen tools as MCP tool definitions (``inputSchema`` ...), best first in
``matches``, so a client can list them to its model or forward calls to the servers that own them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from toolsift._version import __version__
from toolsift.errors import ToolsiftError
from toolsift.router import MAX_K, MAX_QUERY_CHARS, Access, Router, SessionPolicy, SessionStore, TagRules, deliver
from toolsift.service.lifespans import serve_index_folder
from toolsift.service.schemas import route_body
from toolsift.service.state import ServiceState
from toolsift.settings import Settings

INSTRUCTIONS = (
    "toolsift knows a large catalog of tools. Before answering a request that may need a tool, call "
    "search_tools with the user's request; it returns the few tools that fit, with their schemas."
)


def serve_index_folder_over_mcp(settings: Settings) -> MCPServer:
    """The MCP server of ``toolsift mcp``: the index folder the settings name, loaded now and
    followed while the server runs (the same watcher and reload as the HTTP service)."""
    state = ServiceState.create(None, settings, None)
    state.routers.set(Router.load(settings.index_path, ranking=settings.ranking()))
    return create_mcp_server(state.routers.get, state.sessions, lifespan=lambda server: serve_index_folder(state))


def create_mcp_server(
    get_router: Callable[[], Router],
    sessions: SessionStore | None = None,
    lifespan: Callable[[MCPServer], AbstractAsyncContextManager[None]] | None = None,
) -> MCPServer:
    """An MCP server whose ``search_tools`` routes with the router ``get_router()`` returns at
    call time (so a reloaded router is picked up); ``lifespan`` runs beside it (a watcher)."""
    sessions = sessions if sessions is not None else SessionStore()
    server: MCPServer = MCPServer("toolsift", instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan)

    @server.tool(
        name="search_tools",
        description=(
            "Find the tools that fit a request, from toolsift's catalog. Returns MCP tool definitions "
            "(tools, in a stable order) and the ranking (matches, best first, with scores)."
        ),
        annotations=ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    def search_tools(
        query: Annotated[
            str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request, in their words")
        ],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many tools at most")] = 5,
        tags: Annotated[list[str] | None, Field(description="Only tools with at least one of these tags")] = None,
        exclude_tags: Annotated[list[str] | None, Field(description="No tool with any of these tags")] = None,
        access: Annotated[Access, Field(description="read_only: only tools that change nothing")] = "any",
        session_id: Annotated[
            str | None, Field(max_length=128, description="Keep earlier results in place and append new ones")
        ] = None,
        session_policy: Annotated[
            SessionPolicy, Field(description="outranking: append only new tools ranked above the session's best")
        ] = "all",
    ) -> dict[str, Any]:
        try:
            router = get_router()
            rules = TagRules.parse(any_of=tags, exclude=exclude_tags, access=access)
            result = router.route(query, k, rules)
            delivered = deliver(
                router,
                result,
                output_format="mcp",
                rules=rules,
                session_id=session_id,
                sessions=sessions,
                session_policy=session_policy,
            )
            return route_body(delivered)
        except ToolsiftError as error:  # the message says what to fix; let the client's model read it
            raise ToolError(str(error)) from None

    return server
