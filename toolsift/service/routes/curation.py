"""``GET /lint`` (a page of findings at a time) and the curation web page at ``/``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, Response

from toolsift.curation import SEVERITIES, LintReport, Severity
from toolsift.curation.lint import visible_findings
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
) -> dict[str, Any]:
    return await state.off_the_route_path(lambda: lint_page(state, tenant, offset, limit, severity, check, at_least))


def lint_page(
    state: ServiceState,
    tenant: TenantSpec | None,
    offset: int,
    limit: int,
    severity: Severity | None,
    check: str | None,
    at_least: Severity | None = None,
) -> dict[str, Any]:
    current = state.routers.get()
    report = lint_report(state)
    scope = state.caller(tenant, current).scope
    visible = None if scope.is_everything else set(scope.names)
    findings = visible_findings(report.findings, scope)  # none about others' tools, no catalog-wide counts
    worst = len(SEVERITIES) if at_least is None else SEVERITIES.index(at_least)
    chosen = [
        f
        for f in findings
        if (severity is None or f.severity == severity)
        and (check is None or f.code == check)
        and SEVERITIES.index(f.severity) <= worst
    ]
    return {
        "catalog": report.catalog if visible is None else "catalog",  # a tenant never sees the server's path
        "tools": report.tools if visible is None else len(visible),
        "counts": {s: sum(f.severity == s for f in findings) for s in SEVERITIES},
        "checks": _count_by_check(findings),
        "total": len(chosen),
        "offset": offset,
        "limit": limit,
        "findings": [asdict(finding) for finding in chosen[offset : offset + limit]],
        "schema_tokens": {n: c for n, c in report.schema_tokens.items() if visible is None or n in visible},
        "per_tool_accuracy": report.per_tool_accuracy,
    }


def lint_report(state: ServiceState) -> LintReport:
    """The serving catalog's report (computed once per catalog, ahead of time when it is published)."""
    return state.lint_report()


def _count_by_check(findings: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
    return dict(sorted(counts.items()))


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
    current = state.routers.get()
    state.usage.refresh()
    pool = tenant.name if tenant is not None else ""
    key = (current.catalog.fingerprint, pool)
    with state.cache_lock:
        document = state.catalog_maps.get(key)
    if document is None:
        document = map_of(current, state.caller(tenant, current).scope, lint_report(state))
        with state.cache_lock:
            state.catalog_maps[key] = document
    usage = {name: len(texts) for name, texts in state.usage.book.summary(pool).items()}
    return JSONBytes(with_feedback(document, usage))


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return Response(FAVICON.read_bytes(), media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page() -> HTMLResponse:
    """The curation page: catalog overview, findings, and a query box with score breakdowns."""
    return HTMLResponse(WEB_PAGE.read_text(encoding="utf-8"))
