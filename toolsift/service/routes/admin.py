"""``/admin/*``: catalog edits, reloads and status, behind the admin token."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from toolsift.catalog import Catalog, parse_catalog
from toolsift.catalog.security import poisoned
from toolsift.curation.changes import compare
from toolsift.errors import InvalidQuery, NotAGateway, PoisonedTools, ToolNotFound
from toolsift.service.catalog_updates import change_catalog, reload_index_folder
from toolsift.service.dependencies import State, require_admin
from toolsift.service.schemas import AdminChange, AdminStatus, FeedbackReset, FeedbackSummary, ReloadResult, ToolsIn
from toolsift.service.tune_runs import start_tune, tune_status
from toolsift.wire import ApproveRequest, ApproveResult, CatalogChanges, TuneRequest

logger = logging.getLogger("toolsift.service")
router = APIRouter(prefix="/admin", dependencies=[Depends(require_admin)])


@router.post("/tools", summary="Add or replace tools (admin token)", response_model=AdminChange)
async def upsert_tools(change: ToolsIn, state: State) -> dict[str, Any]:
    """Tools with a new name are added at the end; a tool with an existing name replaces it."""
    incoming = parse_catalog(change.tools, source="POST /admin/tools", dialect=change.dialect)

    def apply(catalog: Catalog) -> Catalog:
        replaced = {tool.name: tool for tool in incoming}
        merged = [replaced.pop(tool.name, tool) for tool in catalog]
        updated = catalog.with_tools([*merged, *replaced.values()])
        found = {name: problems for name, problems in poisoned(updated).items() if name in incoming}
        if found and not change.keep_flagged:  # a poisoned definition never reaches a model
            raise PoisonedTools(found)
        return updated

    return await change_catalog(state, apply)


@router.delete("/tools/{name:path}", summary="Remove a tool (admin token)", response_model=AdminChange)
async def delete_tool(name: str, state: State) -> dict[str, Any]:
    """``name`` is the catalog name or the name sent to providers; it may hold ``/`` (as
    ``files/read`` or ``files%2Fread``). An unknown name is a 404."""

    def apply(catalog: Catalog) -> Catalog:
        name_in_catalog = catalog.resolve(name)
        if name_in_catalog not in catalog:
            raise ToolNotFound(name, catalog.names, field="name")
        return catalog.with_tools(tool for tool in catalog if tool.name != name_in_catalog)

    return await change_catalog(state, apply)


@router.get(
    "/changes", summary="What changed since a catalog this server served (admin token)", response_model=CatalogChanges
)
async def changes(
    state: State,
    since: Annotated[
        str | None, Query(max_length=80, description="The fingerprint (or its start) of an earlier version")
    ] = None,
) -> dict[str, Any]:
    """The catalog versions this process served (the last eight); with ``since``: the tools
    added, removed and changed from that version to the serving one, and the labelled requests
    (``TOOLSIFT_LINT_QUERIES``) that now route differently. The earlier router is rebuilt from the
    serving one (unchanged tools keep their vectors), off the route path."""
    history = list(state.routers.history)
    versions: list[dict[str, Any]] = [{"fingerprint": f, "published_at": at, "tools": len(c)} for f, at, c in history]
    if since is None:
        return {"versions": versions}
    found = [catalog for fingerprint, _, catalog in history if fingerprint.startswith(since)]
    if len(found) != 1:
        listed = ", ".join(v["fingerprint"][:19] for v in versions)
        raise InvalidQuery(
            "since", f"names {'no' if not found else 'more than one'} version this server served ({listed})"
        )
    current = state.routers.get()

    def compared() -> dict[str, Any]:
        return compare(current.rebuilt(found[0]), current, state.labelled_queries(current))

    return {"versions": versions, **await state.off_the_route_path(compared)}


@router.get("/feedback", summary="What routing learned from feedback (admin token)", response_model=FeedbackSummary)
def show_feedback(
    state: State,
    tenant: Annotated[str | None, Query(description="The tenant (omit without tenants)")] = None,
    contributor: Annotated[str | None, Query(description="Only this contributor's requests")] = None,
) -> dict[str, Any]:
    """Every retained request, with who sent it (an export: the same JSON, saved)."""
    state.usage.refresh()
    tools = state.usage.book.summary(tenant or "")
    senders = state.usage.book.contributors(tenant or "")
    listed = []
    for name, requests in sorted(tools.items()):
        pairs = [
            (text, who)
            for text, who in zip(requests, senders.get(name, []), strict=False)
            if contributor in (None, who)
        ]
        if pairs:
            listed.append({"tool": name, "requests": [t for t, _ in pairs], "contributors": [w for _, w in pairs]})
    return {"tenant": tenant, "retained": sum(len(tool["requests"]) for tool in listed), "tools": listed}


@router.delete("/feedback", summary="Forget feedback (admin token)", response_model=FeedbackReset)
def reset_feedback(
    state: State,
    tenant: Annotated[str | None, Query(description="Only this tenant's (omit without tenants)")] = None,
    tool: Annotated[str | None, Query(description="Only this tool's")] = None,
    every_tenant: Annotated[bool, Query(description="Every tenant's feedback")] = False,
    contributor: Annotated[str | None, Query(description="Only this contributor's (revoke it)")] = None,
) -> dict[str, Any]:
    pool = None if every_tenant else (tenant or "")
    name = state.routers.get().catalog.resolve(tool) if tool is not None else None
    return {"forgotten": state.usage.reset(pool, name, contributor)}


@router.post("/reload", summary="Reload the catalog (admin token)", response_model=ReloadResult)
async def reload(
    state: State, server: Annotated[str | None, Query(description="Only this MCP server")] = None
) -> dict[str, Any]:
    """With MCP servers: fetch their tools again and re-index what changed. Otherwise: load the
    index folder again (after `toolsift build` wrote a new one). On any failure the previous
    catalog keeps serving and the error says why."""
    if state.live is not None:
        try:
            return {"source": "mcp", **await state.live.reload(server)}  # the live catalog counts its reloads
        except Exception:
            logger.warning("reload failed; the previous catalog keeps serving", exc_info=True)
            raise
    previous = state.routers.get()
    loaded = await reload_index_folder(state)
    return {
        "source": str(state.settings.index_path),
        "changed": loaded.catalog.fingerprint != previous.catalog.fingerprint,
        "tools": len(loaded.catalog),
        "catalog_fingerprint": loaded.catalog.fingerprint,
    }


@router.post(
    "/approve", summary="Approve MCP servers' changed or new tools (admin token)", response_model=ApproveResult
)
async def approve(request: ApproveRequest, state: State) -> dict[str, Any]:
    """Pin the definitions the MCP servers list now (one server's, or only the ``tools`` named):
    a changed tool then serves its new definition, a new tool is served. What waits for approval
    is under ``live.quarantined`` in ``GET /admin/status``."""
    if state.live is None:
        raise NotAGateway("approve tools of")
    return await state.live.approve(request.server, request.tools)


@router.post("/tune", summary="Fine-tune the model on examples and feedback (admin token)", status_code=202)
def tune(body: TuneRequest, state: State) -> dict[str, Any]:
    """Start ``toolsift tune`` on the index folder in a process of its own: it trains, checks the
    tuned model on held-back requests and publishes it only if it is better (every worker follows).
    409 while another tune runs. Follow it with ``GET /admin/tune``."""
    return start_tune(state, body)


@router.get("/tune", summary="How the last tune went, or is going (admin token)")
def tune_progress(state: State) -> dict[str, Any]:
    """``state``: never, running, done (with the report: published model or why not), failed or
    interrupted."""
    return tune_status(state)


@router.get("/status", summary="Catalog sources and reload history (admin token)", response_model=AdminStatus)
def admin_status(state: State) -> dict[str, Any]:
    current = state.routers.get()
    return {
        "tools": len(current.catalog),
        "catalog_fingerprint": current.catalog.fingerprint,
        "sessions": len(state.sessions),
        "live": state.live_status(),
    }
