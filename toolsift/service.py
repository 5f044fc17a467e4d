"""HTTP API: ``POST /route``, ``GET /tools``, ``GET /healthz``. OpenAPI docs at ``/docs``.

``create_app(router)`` serves a router built in-process (tests, embedding in another app);
``create_app(settings=...)`` loads the saved index named by the settings when the app starts.
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import orjson
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from toolsift._version import __version__
from toolsift.catalog import Catalog, fingerprint_tools, load_catalog, parse_catalog
from toolsift.embeddings import Embedder
from toolsift.errors import (
    AdminDisabled,
    CatalogManagedElsewhere,
    IndexMismatch,
    NotReady,
    ToolsiftError,
    Unauthorized,
    UnknownTool,
)
from toolsift.mcp import LiveCatalog, load_sources, router_builder
from toolsift.observability import Metrics, ObservabilityMiddleware
from toolsift.router import (
    MAX_K,
    MAX_QUERY_CHARS,
    Access,
    Delivery,
    Router,
    SessionPolicy,
    SessionStore,
    TagRules,
    deliver,
    format_tool,
)
from toolsift.router.router import MAX_PINNED
from toolsift.settings import Settings
from toolsift.tenants import Tenants, TenantSpec, load_tenants
from toolsift.types import IdArray

logger = logging.getLogger("toolsift.service")
WEB_PAGE = Path(__file__).parent / "web" / "index.html"

Format = Literal["toolsift", "openai", "anthropic", "mcp"]


class JSONBytes(Response):
    """JSON via orjson, keys sorted: the same content always gives the same bytes."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


class TagRulesIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    any: list[str] = Field(default_factory=list, description="A tool needs at least one of these tags")
    all: list[str] = Field(default_factory=list, description="A tool needs every one of these tags")
    exclude: list[str] = Field(default_factory=list, description="A tool must carry none of these tags")


class RouteRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"query": "what's the weather in Paris tomorrow", "k": 3}]},
    )

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The user's request")
    k: int = Field(default=5, ge=1, le=MAX_K, description="How many tools to return at most")
    tags: TagRulesIn | list[str] | None = Field(
        default=None, description="Tag rules applied before ranking; a plain list means 'any of'"
    )
    format: Format = Field(default="toolsift", description="Shape of the returned tool definitions")
    min_score: float | None = Field(
        default=None, ge=-100.0, le=100.0, description="Drop tools whose ranking score (in standard deviations) is below this"
    )
    split_intents: bool | None = Field(
        default=None,
        description="Route each part of a multi-part request too (see README, Ranking); null: the server's "
        "setting (TOOLSIFT_SPLIT_INTENTS, on by default)",
    )
    access: Access = Field(
        default="any",
        description="read_only: only tools annotated readOnlyHint; non_destructive: also those "
        "annotated destructiveHint false; any: no annotation rule",
    )
    pinned: list[Annotated[str, Field(min_length=1, max_length=256)]] = Field(
        default_factory=list, max_length=MAX_PINNED,
        description="Tools always delivered, first, whatever the query; they do not count toward k",
    )
    session_id: str | None = Field(
        default=None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:@-]+$",
        description="Makes the tool list sticky: tools given earlier keep their place, new ones are appended",
    )
    session_policy: SessionPolicy = Field(
        default="all",
        description="all: append every new tool; outranking: only new tools ranked above the session's best "
        "(more turns leave the prompt unchanged, at some recall)",
    )
    delivery: Delivery = Field(
        default="subset",
        description="allowed_tools (with format=openai): a stable superset in tools, masked by tool_choice",
    )

    def rules(self) -> TagRules:
        return TagRules.from_spec(self.tags, self.access)


class MatchOut(BaseModel):
    name: str
    score: float = Field(description="Ranking score, in standard deviations: dense_part + lexical_part")
    rank: int
    similarity: float = Field(description="Cosine similarity between query and tool")
    lexical: float = Field(description="BM25 score over the tool text, scaled to [0, 1] per query")
    dense_part: float = Field(description="The cosine standardised over the catalog for this query")
    lexical_part: float = Field(description="BM25 standardised likewise, times the lexical weight")
    intent: str | None = Field(
        default=None,
        description="For a multi-part request, the part this tool was selected for (the scores are that part's); "
        "null when selected for the whole query",
    )


class ToolsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tools: list[dict[str, Any]] = Field(min_length=1, max_length=1000, description="Tool definitions, any dialect")
    dialect: Literal["auto", "toolsift", "openai", "anthropic", "mcp"] = "auto"


class SessionOut(BaseModel):
    id: str
    turn: int = Field(description="1 on the session's first request")
    prefix_changed: bool = Field(description="False when the previous turn's tools are an exact prefix of these")
    appended: list[str] = Field(description="Tools added at the end on this turn")
    removed: list[str] = Field(description="Tools dropped: gone from the catalog, or by a reset")
    replaced: list[str] = Field(description="Tools whose definition changed in the catalog")
    reset: bool = Field(description="The session cap was reached; the list restarted with this turn's tools")
    held_back: list[str] = Field(description="New matches not appended (session_policy=outranking)")
    size: int


class RouteResponse(BaseModel):
    tools: list[dict[str, Any]] = Field(
        description="Tool definitions to send: pinned then matches, each by name; with a session, "
        "the session's append-only list; with allowed_tools, the stable superset"
    )
    matches: list[MatchOut] = Field(description="This turn's ranked tools, best first, with scores")
    pinned: list[str]
    fingerprint: str = Field(description="sha256 of the tools array exactly as returned, order included")
    selected_fingerprint: str = Field(description="sha256 of this turn's selection as a set")
    catalog_fingerprint: str
    eligible: int = Field(description="Tools left after tag and access rules")
    k: int
    format: Format
    delivery: Delivery
    session: SessionOut | None = None
    tool_choice: dict[str, Any] | None = Field(
        default=None, description="With delivery=allowed_tools: OpenAI tool_choice masking tools to this turn's"
    )


class RouterHolder:
    """The live router; swapped whole, so each request sees one consistent index."""

    def __init__(self, router: Router | None = None) -> None:
        self._router = router
        self._lock = threading.Lock()

    def get(self) -> Router:
        router = self._router
        if router is None:
            raise NotReady()
        return router

    def peek(self) -> Router | None:
        """The live router, or None before one is loaded (for metrics, which must not fail)."""
        return self._router

    def set(self, router: Router) -> None:
        with self._lock:
            self._router = router


def create_app(
    router: Router | None = None, *, settings: Settings | None = None, tenants: Tenants | None = None
) -> FastAPI:
    settings = settings or Settings.from_env()
    if tenants is None and settings.tenants is not None:
        tenants = load_tenants(settings.tenants)
    holder = RouterHolder(router)
    sessions = SessionStore(settings.session_cap, settings.max_sessions, settings.session_ttl)

    ranking = settings.ranking()
    live: list[LiveCatalog] = []  # set while a live catalog (MCP servers) runs

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.mcp_servers is not None:
            catalog = load_catalog(settings.catalog_path) if settings.catalog_path else None
            embedder = router.embedder if router else settings.model
            build = router_builder(embedder, ranking=ranking, cache=settings.open_cache())
            def publish(new: Router) -> None:
                holder.set(new)
                metrics.reloads.labels("ok").inc()

            catalog_of_servers = LiveCatalog(
                load_sources(settings.mcp_servers), build=build, publish=publish, base=catalog,
                on_failure=lambda reason: metrics.reloads.labels("failed").inc(),
            )
            logger.info("reading tools from the MCP servers in %s", settings.mcp_servers)
            async with catalog_of_servers.running():
                live.append(catalog_of_servers)
                yield
                live.clear()
            return
        if router is not None:
            yield
            return
        logger.info("loading index from %s", settings.index_path)
        holder.set(Router.load(settings.index_path, ranking=ranking))
        if settings.reload_interval <= 0:
            yield
            return
        async with anyio.create_task_group() as group:
            group.start_soon(watch_index_folder)
            yield
            group.cancel_scope.cancel()

    def folder_version() -> tuple[str, float]:
        manifest = settings.index_path / "manifest.json"
        return os.path.realpath(settings.index_path), manifest.stat().st_mtime if manifest.exists() else 0.0

    folder_seen: list[tuple[str, float]] = [("", 0.0)]  # the folder version this worker serves
    edit_lock = anyio.Lock()

    async def change_catalog(change: Callable[[Catalog], Catalog]) -> dict[str, Any]:
        """Apply an admin change: build beside the serving router (re-embedding only what changed),
        save it to the index folder (other workers follow), then swap. Any failure: nothing changes."""
        if live:
            raise CatalogManagedElsewhere()
        async with edit_lock:
            current = holder.get()
            catalog = change(current.catalog)
            updated = await anyio.to_thread.run_sync(current.rebuilt, catalog)
            if router is None:  # serving the index folder: persist, atomically
                await anyio.to_thread.run_sync(updated.save, settings.index_path)
                folder_seen[0] = folder_version()
            holder.set(updated)
            metrics.reloads.labels("ok").inc()
        before, after = set(current.catalog.names), set(catalog.names)
        stats = updated.last_build
        return {
            "tools": len(catalog),
            "catalog_fingerprint": catalog.fingerprint,
            "added": sorted(after - before),
            "removed": sorted(before - after),
            "changed": sorted(n for n in before & after if current.catalog.get(n) != catalog.get(n)),
            "embedded": stats.embedded if stats else None,
            "reused": stats.reused if stats else None,
        }

    def load_index_folder(embedder: Embedder) -> Router:
        """The index folder as it is now, with the serving model when the folder was built with it,
        else with the model its manifest names: a rebuild may switch models (``auto`` picks the
        multilingual one once a catalog is mostly in another script), and the service follows."""
        try:
            return Router.load(settings.index_path, embedder, ranking=ranking)
        except IndexMismatch as error:
            if error.what != "embedding model":
                raise
            logger.info("the index folder was built with %s (serving %s): loading that model", error.actual, embedder.name)
            return Router.load(settings.index_path, ranking=ranking)

    async def watch_index_folder() -> None:
        """Every worker follows the index folder: when `toolsift build` swaps in a new one, load it
        and switch; a folder that fails to load is logged and the current index serves on."""
        folder_seen[0] = folder_version()
        while True:
            await anyio.sleep(settings.reload_interval)
            current = folder_version()
            if current == folder_seen[0]:
                continue
            folder_seen[0] = current
            previous = holder.get()
            try:
                loaded = await anyio.to_thread.run_sync(load_index_folder, previous.embedder)
            except Exception:
                metrics.reloads.labels("failed").inc()
                logger.warning("the index folder changed but does not load; still serving the previous one", exc_info=True)
                continue
            holder.set(loaded)
            metrics.reloads.labels("ok").inc()
            logger.info("index folder changed: now serving catalog %s (%d tools)", loaded.catalog.fingerprint, len(loaded.catalog))

    def caller(
        authorization: Annotated[str | None, Header()] = None,
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> TenantSpec | None:
        """The tenant making the request (None when no tenants are configured)."""
        if tenants is None:
            return None
        bearer = authorization.partition(" ")[2].strip() if authorization and authorization.lower().startswith("bearer ") else None
        return tenants.identify(x_api_key or bearer)

    def scope_of(tenant: TenantSpec | None, current: Router) -> IdArray | None:
        return tenants.scope(tenant, current) if tenants is not None and tenant is not None else None

    # annotations here are strings (postponed), resolved in module scope: the dependency goes in the default
    by_caller = Depends(caller)

    def require_admin(authorization: Annotated[str | None, Header()] = None) -> None:
        if not settings.admin_token:
            raise AdminDisabled()
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip(), settings.admin_token):
            raise Unauthorized()

    app = FastAPI(
        title="toolsift",
        version=__version__,
        summary="Pick the few tools an LLM should see, in a stable, cache-friendly form.",
        default_response_class=JSONBytes,
        lifespan=lifespan,
    )
    app.state.routers = holder
    app.state.sessions = sessions

    def snapshot() -> dict[str, float]:
        current = holder.peek()
        if current is None:
            return {"sessions": len(sessions)}
        return {"tools": len(current.catalog), "sessions": len(sessions),
                "query_cache_hits": current.query_cache_hits, "query_cache_misses": current.query_cache_misses}

    metrics = Metrics(snapshot)
    app.state.metrics = metrics
    app.add_middleware(ObservabilityMiddleware, metrics=metrics, max_body=settings.max_request_bytes)

    @app.get("/metrics", include_in_schema=False)
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.exception_handler(ToolsiftError)
    async def toolsift_error(request: Request, error: ToolsiftError) -> Response:
        return JSONBytes(
            {"error": {"type": type(error).__name__, "message": str(error)}},
            status_code=error.status_code,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        kind, message = {
            404: ("NotFound", f"no such route: {request.url.path}. The API is POST /route, GET /tools, "
                  "GET /healthz; docs at /docs"),
            405: ("MethodNotAllowed", f"{request.method} is not allowed on {request.url.path}; see /docs for "
                  "the methods each route takes"),
        }.get(error.status_code, ("HTTPError", str(error.detail)))
        return JSONBytes(
            {"error": {"type": kind, "message": message}},
            status_code=error.status_code, headers=getattr(error, "headers", None),
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, error: RequestValidationError) -> Response:
        problems = [
            {
                "field": ".".join(str(part) for part in item.get("loc", ()) if part != "body"),
                "message": item.get("msg", ""),
            }
            for item in error.errors()
        ]
        message = "; ".join(f"{p['field'] or 'body'}: {p['message']}" for p in problems)
        return JSONBytes(
            {"error": {"type": "InvalidRequest", "message": message, "problems": problems}},
            status_code=422,
        )

    @app.post(
        "/route", response_model=RouteResponse, response_model_exclude_none=True,
        summary="Pick the tools for a query",
    )
    def route(request: RouteRequest, tenant: TenantSpec | None = by_caller) -> Response:
        current = holder.get()  # one router for the whole request, even if a reload lands meanwhile
        scope = scope_of(tenant, current)
        rules = request.rules()
        result = current.route(
            request.query, request.k, rules, min_score=request.min_score, pinned=request.pinned, scope=scope,
            split_intents=request.split_intents,
        )
        body = deliver(
            current, result, output_format=request.format, delivery=request.delivery, rules=rules,
            session_id=request.session_id, sessions=sessions, session_policy=request.session_policy,
            scope=scope, session_namespace=tenant.name if tenant else "",
        )
        metrics.route_latency.observe(result.took_ms / 1000)
        # timing goes in headers, so the body stays byte-identical for identical requests
        took = f"{result.took_ms:.3f}"
        return JSONBytes(body, headers={"Server-Timing": f"route;dur={took}", "X-Toolsift-Took-Ms": took})

    @app.get("/tools", summary="List the catalog's tools")
    def tools(
        tag: Annotated[list[str] | None, Query(description="Only tools with any of these tags")] = None,
        format: Format = "toolsift",
        offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        tenant: TenantSpec | None = by_caller,
    ) -> dict[str, Any]:
        current = holder.get()
        catalog = current.catalog
        scope = scope_of(tenant, current)
        allowed = current.tag_index.allowed(TagRules.parse(any_of=tag or []), scope)
        positions = range(len(catalog)) if allowed is None else allowed.tolist()
        selected = sorted((catalog[int(p)] for p in positions), key=lambda tool: tool.name)
        page = selected[offset:offset + limit]
        visible = catalog.tools if scope is None else [catalog[int(p)] for p in scope.tolist()]
        return {
            "total": len(selected),
            "offset": offset,
            "limit": limit,
            "tools": [format_tool(tool, format) for tool in page],
            "tags": current.tag_index.visible_tags(scope),
            "catalog_fingerprint": catalog.fingerprint if scope is None else fingerprint_tools(visible),
        }

    @app.post("/admin/tools", summary="Add or replace tools (admin token)", dependencies=[Depends(require_admin)])
    async def upsert_tools(change: ToolsIn) -> dict[str, Any]:
        """Tools with a new name are added at the end; a tool with an existing name replaces it."""
        incoming = parse_catalog(change.tools, source="POST /admin/tools", dialect=change.dialect)

        def apply(catalog: Catalog) -> Catalog:
            replaced = {tool.name: tool for tool in incoming}
            merged = [replaced.pop(tool.name, tool) for tool in catalog]
            return Catalog([*merged, *replaced.values()], source=catalog.source)

        return await change_catalog(apply)

    @app.delete("/admin/tools/{name}", summary="Remove a tool (admin token)", dependencies=[Depends(require_admin)])
    async def delete_tool(name: str) -> dict[str, Any]:
        def apply(catalog: Catalog) -> Catalog:
            if name not in catalog:
                raise UnknownTool(name, catalog.names, field="name")
            return Catalog([tool for tool in catalog if tool.name != name], source=catalog.source)

        return await change_catalog(apply)

    @app.post("/admin/reload", summary="Reload the catalog (admin token)", dependencies=[Depends(require_admin)])
    async def reload(server: Annotated[str | None, Query(description="Only this MCP server")] = None) -> dict[str, Any]:
        """With MCP servers: fetch their tools again and re-index what changed. Otherwise: load the
        index folder again (after `toolsift build` wrote a new one). On any failure the previous
        catalog keeps serving and the error says why."""
        try:
            if live:
                return {"source": "mcp", **await live[0].reload(server)}  # publish() counts it
            previous = holder.get()
            loaded = await anyio.to_thread.run_sync(load_index_folder, previous.embedder)
        except Exception:
            if not live:  # a live catalog counts its own failures
                metrics.reloads.labels("failed").inc()
            logger.warning("reload failed; the previous catalog keeps serving", exc_info=True)
            raise
        metrics.reloads.labels("ok").inc()
        holder.set(loaded)
        changed = loaded.catalog.fingerprint != previous.catalog.fingerprint
        return {"source": str(settings.index_path), "changed": changed, "tools": len(loaded.catalog),
                "catalog_fingerprint": loaded.catalog.fingerprint}

    @app.get("/admin/status", summary="Catalog sources and reload history (admin token)",
             dependencies=[Depends(require_admin)])
    def admin_status() -> dict[str, Any]:
        current = holder.get()
        return {
            "tools": len(current.catalog),
            "catalog_fingerprint": current.catalog.fingerprint,
            "sessions": len(sessions),
            "live": live[0].status() if live else None,
        }

    lint_cache: dict[str, dict[str, Any]] = {}

    @app.get("/lint", summary="Curation findings for the loaded catalog (what `toolsift lint` reports)")
    def lint(tenant: TenantSpec | None = by_caller) -> dict[str, Any]:
        from toolsift.curation import lint_catalog

        current = holder.get()
        fingerprint = current.catalog.fingerprint
        if fingerprint not in lint_cache:
            lint_cache.clear()
            lint_cache[fingerprint] = lint_catalog(current.catalog, current).to_json()
        report = lint_cache[fingerprint]
        scope = scope_of(tenant, current)
        if scope is None:
            return report
        visible = {current.catalog[int(p)].name for p in scope.tolist()}
        findings = [f for f in report["findings"] if set(f["tools"]) <= visible]  # nothing about others' tools
        return {
            **report,
            "tools": len(visible),
            "findings": findings,
            "counts": {s: sum(f["severity"] == s for f in findings) for s in ("error", "warning", "info")},
            "schema_tokens": {name: cost for name, cost in report["schema_tokens"].items() if name in visible},
        }

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        """The curation page: catalog overview, findings, and a query box with score breakdowns."""
        return HTMLResponse(WEB_PAGE.read_text(encoding="utf-8"))

    @app.get("/healthz", summary="Liveness and what is loaded")
    def healthz() -> dict[str, Any]:
        current = holder.get()
        if tenants is not None:  # unauthenticated: say nothing about the catalog
            return {"status": "ok", "version": __version__}
        manifest = current.index.manifest
        return {
            "status": "ok",
            "version": __version__,
            "tools": len(current.catalog),
            "model": manifest.model,
            "index_kind": manifest.kind,
            "catalog_fingerprint": manifest.catalog_fingerprint,
        }

    return app
