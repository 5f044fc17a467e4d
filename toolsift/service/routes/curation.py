"""``GET /lint`` (a page of findings at a time) and the curation web page at ``/``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, Response

from toolsift.curation import LintReport, Severity
from toolsift.curation.views import catalog_map as map_of
from toolsift.curation.views import with_feedback
from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import CatalogMap, LintPage
from toolsift.service.state import ServiceState
from toolsift.tenants import TenantSpec

WEB_PAGE = Path(__file__).parent.parent.parent / "web" / "index.html"
FAVICON = WEB_PAGE.with_name("favicon.svg")
router = APIRouter()


@router.get(
    "/lint",
    summary="Curation findings for the loaded catalog (what `toolsift lint` reports), a page at a time",
    response_model=LintPage,
)
async def lint(
    state: State,
    tenant: Tenant,
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="Findings per page")] = 100,
    severity: Annotated[Severity | None, Query(description="Only findings of this severity")] = None,
    check: Annotated[str | None, Query(max_length=64, description="Only findings of this check (its code)")] = None,
    at_least: Annotated[
        Severity | None, Query(description="Only findings this severe or worse (warning: errors and warnings)")
    ] = None,
) -> Response:
    """Built and serialised on a curation thread (``LintPage`` is its shape, checked by the tests,
    not validated per request: FastAPI would do that on the event loop routes share)."""
    return await state.off_the_route_path(
        lambda: JSONBytes(lint_page(state, tenant, offset, limit, severity, check, at_least))
    )


def lint_page(
    state: ServiceState,
    tenant: TenantSpec | None,
    offset: int,
    limit: int,
    severity: Severity | None,
    check: str | None,
    at_least: Severity | None = None,
) -> dict[str, Any]:
    view = state.findings_view(tenant)  # none about others' tools, no catalog-wide counts
    chosen = view.chosen(severity, check, at_least)
    return {
        "catalog": view.report.catalog if view.everything else "catalog",  # a tenant never sees the server's path
        "tools": view.tools,
        "counts": view.counts,
        "checks": view.checks,
        "total": len(chosen),
        "offset": offset,
        "limit": limit,
        "findings": view.as_json(chosen[offset : offset + limit]),
        **view.serialised,  # schema_tokens, per_tool_accuracy
    }


def lint_report(state: ServiceState) -> LintReport:
    """The serving catalog's report (computed once per catalog, ahead of time when it is published)."""
    return state.lint_report()


@router.get(
    "/catalog/map",
    summary="A 2-D map of the tools (PCA of their vectors), token costs, confusable pairs",
    response_model=CatalogMap,
)
async def catalog_map(state: State, tenant: Tenant) -> Response:
    """The projection is computed once per catalog and tenant (the page asks for it when the map
    is opened); the feedback counts are added to it per request."""
    return await state.off_the_route_path(lambda: map_body(state, tenant))


def map_body(state: ServiceState, tenant: TenantSpec | None) -> Response:
    """The map's body, serialised once per catalog, tenant and set of feedback counts."""
    current = state.routers.get()
    state.usage.refresh()
    pool = tenant.name if tenant is not None else ""
    key = (current.catalog.fingerprint, pool)
    usage = {name: len(texts) for name, texts in state.usage.book.summary(pool).items()}
    counts = tuple(sorted(usage.items()))
    with state.cache_lock:
        body = state.map_bodies.get(key)
    if body is not None and body[0] == counts:
        return Response(body[1], media_type="application/json")
    with state.cache_lock:
        document = state.catalog_maps.get(key)
    if document is None:
        document = map_of(current, state.caller(tenant, current).scope, lint_report(state))
        with state.cache_lock:
            state.catalog_maps[key] = document
    rendered = JSONBytes(with_feedback(document, usage)).body
    with state.cache_lock:
        state.map_bodies[key] = (counts, bytes(rendered))
    return Response(rendered, media_type="application/json")


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return Response(FAVICON.read_bytes(), media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page() -> HTMLResponse:
    """The curation page: catalog overview, findings, and a query box with score breakdowns."""
    return HTMLResponse(WEB_PAGE.read_text(encoding="utf-8"))
