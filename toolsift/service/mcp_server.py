"""toolsift as an MCP server: ``search_tools`` (the /route of MCP) and ``list_tags``.

    toolsift mcp --index var/index                      # stdio (for Claude Desktop, IDEs, agents)
    toolsift mcp --index var/index --transport http     # streamable HTTP on /mcp

The result carries the chosen tools as MCP tool definitions (``inputSchema`` ...), best first in
``matches``, so a client can list them to its model or forward calls to the servers that own them.

Over HTTP, with tenants or an admin token configured, every request needs a key
(``Authorization: Bearer <key>`` or ``X-API-Key``), as the HTTP API does: a tenant's key scopes
every answer to the tenant's tools; without tenants, the admin token is the key. Over stdio the
client launched toolsift itself and sees the whole catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

import anyio
import orjson
from mcp.server import MCPServer
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from mcp_types.methods import CacheableMethod
from pydantic import Field
from starlette.types import ASGIApp, Receive, Scope, Send

from toolsift._version import __version__
from toolsift.errors import TenantUnauthorized, ToolsiftError
from toolsift.router import MAX_K, MAX_QUERY_CHARS, Access, Caller, RouteQuery, Router, SessionPolicy, TagRules
from toolsift.router.router import MAX_PINNED
from toolsift.service.gateway import Gateway
from toolsift.service.lifespans import serve_index_folder, serve_mcp_servers
from toolsift.service.schemas import SESSION_ID_PATTERN, route_body
from toolsift.service.state import ServiceState
from toolsift.settings import Settings
from toolsift.tenants import Tenants, key_from_headers

INSTRUCTIONS = (
    "toolsift knows a large catalog of tools. Before answering a request that may need a tool, call "
    "search_tools with the user's request; it returns the few tools that fit, with their schemas. "
    "list_tags gives the tags search_tools can filter on."
)
SEARCH_DESCRIPTION = (
    "Find the tools that fit a request, from toolsift's catalog. Returns MCP tool definitions "
    "(tools, in a stable order) and the ranking (matches, best first, with scores and confidence). "
    "When no tool is likely to serve the request, it returns none and abstained: true: answer without a tool."
)
TAGS_DESCRIPTION = (
    "The tags of toolsift's catalog, each with how many tools carry it, and its groups (what each is for): what "
    "search_tools filters on (a group as the tag group:<name>)."
)
GATEWAY_INSTRUCTIONS = " Then call the tool you chose with call_tool(name, arguments), or by its name if it is listed."
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def serve_index_folder_over_mcp(settings: Settings, tenants: Tenants | None = None) -> tuple[MCPServer, ServiceState]:
    """The MCP server of ``toolsift mcp``: the index folder the settings name, loaded now and
    followed while the server runs (the same watcher and reload as the HTTP service)."""
    state = ServiceState.create(None, settings, tenants)
    state.folder_seen = state.folder_version()  # before the load: an edit landing meanwhile is seen
    state.routers.set(Router.load(settings.index_path, ranking=settings.ranking(), backend=settings.backend))
    server = create_mcp_server(state, lifespan=lambda server: serve_index_folder(state))
    return server, state


Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request, in their words")
]
K = Annotated[int, Field(ge=1, le=MAX_K, description="How many tools at most")]
AnyTags = Annotated[
    list[str] | None,
    Field(
        description="Only tools with at least one of these tags, or in a group named as group:<name> (see list_tags)"
    ),
]
ExcludeTags = Annotated[list[str] | None, Field(description="No tool with any of these tags")]
AccessRule = Annotated[Access, Field(description="read_only: only tools that change nothing")]
Pinned = Annotated[
    list[str] | None,
    Field(max_length=MAX_PINNED, description="Tools always returned, first; they do not count toward k"),
]
MinConfidence = Annotated[
    float | None,
    Field(
        ge=0, le=1, allow_inf_nan=False,
        description="Return no tools when the best is less likely than this to serve the request (0: never)",
    ),
]  # fmt: skip
MinScore = Annotated[
    float | None,
    Field(ge=-100, le=100, allow_inf_nan=False, description="Drop tools scoring below this (std. deviations)"),
]
SessionId = Annotated[
    str | None,
    Field(min_length=1, max_length=128, pattern=SESSION_ID_PATTERN, description="Keep earlier results in place"),
]
TurnKey = Annotated[
    str | None,
    Field(
        min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:-]+$",
        description="With session_id: a key for this search; retried with the same key, it gets the same answer",
    ),
]  # fmt: skip
Policy = Annotated[
    SessionPolicy, Field(description="outranking: append only new tools ranked above the session's best")
]


class ToolsiftTools:
    """What the MCP tools answer: through the service's one door (``ServiceState.answer``), for
    the calling tenant over HTTP (its key), or anyone over stdio."""

    def __init__(self, state: ServiceState) -> None:
        self.state = state

    def caller(self, ctx: Context, router: Router) -> Caller:
        """The tenant whose key came with the request over HTTP; over stdio (no headers) the
        client launched toolsift itself. Either way held to the operator's rules."""
        return self.state.caller(self.state.tenant_from_headers(ctx.headers), router)

    def search(self, ctx: Context, query: RouteQuery) -> dict[str, Any]:
        router = self.state.routers.get()
        return route_body(self.state.answer(router, query, self.caller(ctx, router)))

    def tags(self, ctx: Context) -> dict[str, Any]:
        router = self.state.routers.get()
        scope = self.caller(ctx, router).scope
        return {"tags": router.tag_index.visible_tags(scope.ids), "groups": scope.groups}


LISTING_TTL_MS = 3_600_000
"""How long a client may keep toolsift's own ``tools/list``: its tools (``search_tools``,
``list_tags``, ``call_tool``) change only with toolsift's version, whatever the catalog does (the
catalog is searched, never listed). An hour: an upgrade reaches every client within one."""


def cache_hints(state: ServiceState) -> dict[CacheableMethod, CacheHint]:
    """The MCP 2026-07-28 cache hints (``ttlMs``, ``cacheScope``), as stable as each answer
    really is: toolsift's fixed listing for an hour, shared only when no key is asked for (a
    shared cache must not hand it to a caller the server would refuse); a gateway's dynamic
    listing (each session's found tools) and its relayed resources and prompts (each server's,
    as the caller's scope reaches them, changing whenever a server's do) never."""
    keyed = state.tenants is not None or bool(state.settings.admin_token)
    fixed = CacheHint(ttl_ms=LISTING_TTL_MS, scope="private" if keyed else "public")
    never = CacheHint(ttl_ms=0, scope="private")
    dynamic = state.settings.mcp_servers is not None and state.settings.expose == "dynamic"
    hints: dict[CacheableMethod, CacheHint] = {"tools/list": never if dynamic else fixed, "server/discover": fixed}
    for relayed in ("resources/list", "resources/read", "resources/templates/list", "prompts/list"):
        hints[relayed] = never
    return hints


def gateway_over_mcp(settings: Settings, tenants: Tenants | None = None) -> tuple[MCPServer, ServiceState]:
    """The MCP server of ``toolsift mcp --mcp-servers``: the servers' tools (and ``--catalog``'s),
    followed live, searched with ``search_tools`` and called through it (``toolsift.service.gateway``)."""
    state = ServiceState.create(None, settings, tenants)
    server = create_mcp_server(state, lifespan=lambda server: serve_mcp_servers(state))
    return server, state


def mcp_server_for(router: Router, settings: Settings | None = None, tenants: Tenants | None = None) -> MCPServer:
    """An MCP server answering from a router built in-process (tests, embedding in a program)."""
    return create_mcp_server(ServiceState.create(router, settings or Settings(), tenants))


def create_mcp_server(
    state: ServiceState, lifespan: Callable[[MCPServer], AbstractAsyncContextManager[None]] | None = None
) -> MCPServer:
    """An MCP server whose tools answer from ``state``'s live router at call time (so a reloaded
    router is picked up); ``lifespan`` runs beside it (a watcher). With tenants, a call over HTTP
    is answered from the calling tenant's tools only."""
    gatewayed = state.settings.mcp_servers is not None
    instructions = INSTRUCTIONS + (GATEWAY_INSTRUCTIONS if gatewayed else "")
    server: MCPServer = MCPServer(
        "toolsift", instructions=instructions, version=__version__, lifespan=lifespan, cache_hints=cache_hints(state)
    )
    answers = ToolsiftTools(state)
    gateway = Gateway(state, answers.caller) if gatewayed else None

    @server.tool(name="search_tools", description=SEARCH_DESCRIPTION, annotations=READ_ONLY)
    async def search_tools(
        ctx: Context, query: Query, k: K = 5, tags: AnyTags = None, exclude_tags: ExcludeTags = None,
        access: AccessRule = "any", pinned: Pinned = None, min_score: MinScore = None,
        min_confidence: MinConfidence = None, session_id: SessionId = None,
        session_policy: Policy = "all", turn_key: TurnKey = None,
    ) -> dict[str, Any]:  # fmt: skip
        try:
            rules = TagRules.parse(any_of=tags, exclude=exclude_tags, access=access)
            request = RouteQuery(
                query, k, rules, output_format="mcp", min_score=min_score, min_confidence=min_confidence,
                pinned=tuple(pinned or ()), session_id=session_id, session_policy=session_policy, turn_key=turn_key,
            )  # fmt: skip
            found = await anyio.to_thread.run_sync(answers.search, ctx, request)
        except ToolsiftError as error:  # the message says what to fix; let the client's model read it
            raise ToolError(str(error)) from None
        if gateway is not None:
            await gateway.searched(ctx, [tool["name"] for tool in found["tools"]])
        return found

    @server.tool(name="list_tags", description=TAGS_DESCRIPTION, annotations=READ_ONLY)
    def list_tags(ctx: Context) -> dict[str, Any]:
        try:
            return answers.tags(ctx)
        except ToolsiftError as error:
            raise ToolError(str(error)) from None

    if gateway is not None:
        gateway.install(server)  # call_tool, listed last
    return server


def mcp_http_app(server: MCPServer, state: ServiceState) -> ASGIApp:
    """The streamable HTTP app (``/mcp``); behind a key check when tenants or an admin token are set."""
    app = server.streamable_http_app(host=state.settings.host)
    if state.tenants is None and not state.settings.admin_token:
        return app
    return KeyRequired(app, state)


class KeyRequired:
    """Refuses, with a JSON 401, an HTTP request without a tenant key (or, without tenants, the
    admin token): MCP's handshake and listings included, not only the tool calls."""

    def __init__(self, app: ASGIApp, state: ServiceState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = orjson.dumps({"error": {"type": "Unauthorized", "message": str(TenantUnauthorized())}})
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        key = key_from_headers(headers)
        if not key:
            return False
        if self.state.tenants is not None:
            try:
                self.state.tenants.identify(key)
                return True
            except TenantUnauthorized:
                return False
        return self.state.is_admin(key)
