"""toolsift as one MCP server in front of many: the tools ``search_tools`` finds can be called.

    toolsift mcp --mcp-servers servers.yaml                   # --expose search (the default)
    toolsift mcp --mcp-servers servers.yaml --expose dynamic

- ``--expose search``: the client lists ``search_tools``, ``list_tags`` and ``call_tool``, a list
  that never changes (the prompt prefix stays cached). ``call_tool(name, arguments)`` forwards to
  the server that owns the tool and returns its result as it came.
- ``--expose dynamic``: the tools a session's searches find are added to that session's own
  ``tools/list`` (after the gateway's three, in the order found, never reordered) and
  ``notifications/tools/list_changed`` is sent; past ``TOOLSIFT_DYNAMIC_CAP`` found tools the
  least recently used one goes, announced the same way. A session is a connection of the
  handshake protocol (stdio, or HTTP with an ``Mcp-Session-Id``); a stateless 2026-07-28 request
  has none, so it sees the fixed list, and calls found tools through ``call_tool`` or by name.

Either way a ``tools/call`` of a found tool's own name is forwarded like ``call_tool``, and every
call goes through ``ServiceState.call``: the caller's scope (tenant key, the operator's tags and
access) decides before anything reaches the upstream server.

The upstream servers' resources and prompts are listed and forwarded too (``toolsift.mcp.relay``),
those of the servers the caller's scope reaches; the gateway has none of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any

from cachetools import TTLCache
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ToolListChangedNotification,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from toolsift.errors import ToolsiftError
from toolsift.router import Caller
from toolsift.router.formats import to_mcp
from toolsift.service.state import ServiceState

CALL_TOOL = "call_tool"
OWN_TOOLS = frozenset({"search_tools", "list_tags", CALL_TOOL})
CALL_DESCRIPTION = (
    "Call a tool that search_tools found, by its exact name, with its arguments (an object matching "
    "the tool's inputSchema). Returns that tool's own result."
)
MAX_SESSIONS = 10_000
RELAYED = frozenset({"resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get"})

ToolName = Annotated[str, Field(min_length=1, max_length=256, description="The tool's exact name, from search_tools")]
Arguments = Annotated[dict[str, Any] | None, Field(description="The tool's arguments, matching its inputSchema")]


class FoundTools:
    """The tools one session found, in the order found; past ``cap`` the least recently used goes."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._used: dict[str, int] = {}  # insertion order = listing order; value = last use
        self._clock = 0

    @property
    def names(self) -> list[str]:
        return list(self._used)

    def add(self, names: list[str]) -> bool:
        """Add (or touch) ``names``; True when the listing changed."""
        before = list(self._used)
        for name in names:
            self.touch(name)
        keep = set(names[: self.cap])
        while len(self._used) > self.cap:
            oldest = min((n for n in self._used if n not in keep), key=self._used.__getitem__, default=None)
            if oldest is None:
                break
            del self._used[oldest]
        return list(self._used) != before

    def touch(self, name: str) -> None:
        self._clock += 1
        self._used[name] = self._clock


class Gateway:
    """The gateway's MCP tools and its middleware, over one ``ServiceState``."""

    def __init__(self, state: ServiceState, caller_of: Any) -> None:
        self.state = state
        self.dynamic = state.settings.expose == "dynamic"
        self._caller_of = caller_of
        self._found: TTLCache[str, FoundTools] = TTLCache(MAX_SESSIONS, state.settings.session_ttl)

    def install(self, server: MCPServer) -> None:
        """Give ``server`` the ``call_tool`` tool and this middleware."""
        server.middleware.append(self)

        @server.tool(name=CALL_TOOL, description=CALL_DESCRIPTION)
        async def call_tool(ctx: Context, name: ToolName, arguments: Arguments = None) -> CallToolResult:
            return await self.call(ctx, name, arguments)

    def session_key(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The handshake connection this request belongs to: ``stdio`` (one per process) or the
        HTTP ``Mcp-Session-Id``; None for a stateless request (no session to list tools for)."""
        if not self.dynamic or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        if ctx.request is None:
            return "stdio"
        session_id = ctx.request.headers.get("mcp-session-id")
        tenant = self.state.tenant_from_headers(ctx.request.headers)  # a session id is never shared across keys
        return f"{tenant.name if tenant else ''}\x1f{session_id}" if session_id else None

    def found(self, key: str) -> FoundTools:
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = FoundTools(self.state.settings.dynamic_cap)
        return found

    async def searched(self, ctx: Context, names: list[str]) -> None:
        """After a search in dynamic mode: list what it found for this session, and say so."""
        key = self.session_key(ctx.request_context)
        if key is not None and self.found(key).add(names):
            await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=ctx.request_id)

    async def call(self, ctx: Context, name: str, arguments: dict[str, Any] | None) -> CallToolResult:
        router = self.state.routers.get()
        try:
            caller = self._caller_of(ctx, router)
        except ToolsiftError as error:
            raise ToolError(str(error)) from None
        key = self.session_key(ctx.request_context)
        if key is not None and name in self.found(key).names:
            self.found(key).touch(name)

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            await ctx.report_progress(progress, total, message)

        return (await self.state.call(router, caller, name, arguments, progress=relay)).result

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: a found tool called by its own name goes to ``call_tool``; a session's
        ``tools/list`` (dynamic mode) ends with the tools it found."""
        params = ctx.params or {}
        if ctx.method in RELAYED and self.state.relay is not None:
            return await self._relayed(ctx, params)
        if ctx.method == "tools/call" and params.get("name") not in OWN_TOOLS and isinstance(params.get("name"), str):
            forwarded = {"name": params["name"], "arguments": params.get("arguments")}
            rewritten = {**params, "name": CALL_TOOL, "arguments": forwarded}
            return await call_next(replace(ctx, params=rewritten))
        result = await call_next(ctx)
        key = self.session_key(ctx) if ctx.method == "tools/list" else None
        if key is not None and isinstance(result, dict) and key in self._found:
            result["tools"] = [*result.get("tools", []), *self._listed(ctx, self._found[key].names)]
        return result

    async def _relayed(self, ctx: ServerRequestContext[Any, Any], params: Mapping[str, Any]) -> HandlerResult:
        """An upstream resource or prompt request, for the servers the caller reaches."""
        relay = self.state.relay
        assert relay is not None
        servers = self.state.servers_for(self._request_caller(ctx))
        if ctx.method == "resources/list":
            return ListResourcesResult(resources=await relay.resources(servers))
        if ctx.method == "resources/templates/list":
            return ListResourceTemplatesResult(resource_templates=await relay.templates(servers))
        if ctx.method == "prompts/list":
            return ListPromptsResult(prompts=await relay.prompts(servers))
        if ctx.method == "resources/read":
            return await relay.read(_text_param(params, "uri"), servers)
        arguments = params.get("arguments")
        if arguments is not None and not (
            isinstance(arguments, dict) and all(isinstance(value, str) for value in arguments.values())
        ):
            raise MCPError(INVALID_PARAMS, "prompts/get: 'arguments' must be an object of strings")
        return await relay.get_prompt(_text_param(params, "name"), arguments, servers)

    def _request_caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller:
        router = self.state.routers.get()
        headers = None if ctx.request is None else ctx.request.headers
        try:
            return self.state.caller(self.state.tenant_from_headers(headers), router)
        except ToolsiftError as error:
            raise MCPError(INVALID_PARAMS, str(error)) from None

    def _listed(self, ctx: ServerRequestContext[Any, Any], names: list[str]) -> list[dict[str, Any]]:
        router = self.state.routers.get()
        caller = self._request_caller(ctx)
        visible = [router.catalog.get(router.catalog.resolve(name)) for name in names]
        return [to_mcp(tool) for tool in visible if tool is not None and caller.scope.contains(tool)]


def _text_param(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value or len(value) > 8192:
        raise MCPError(INVALID_PARAMS, f"'{name}' must be a string of 1 to 8192 characters")
    return value
