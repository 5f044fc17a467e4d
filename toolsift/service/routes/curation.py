"""``GET /lint`` and the curation web page at ``/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from toolsift.curation import lint_catalog
from toolsift.service.dependencies import State, Tenant

WEB_PAGE = Path(__file__).parent.parent.parent / "web" / "index.html"
router = APIRouter()


@router.get("/lint", summary="Curation findings for the loaded catalog (what `toolsift lint` reports)")
def lint(state: State, tenant: Tenant) -> dict[str, Any]:
    current = state.routers.get()
    fingerprint = current.catalog.fingerprint
    if fingerprint not in state.lint_reports:
        state.lint_reports.clear()
        state.lint_reports[fingerprint] = lint_catalog(current.catalog, current).to_json()
    report = state.lint_reports[fingerprint]
    scope = state.scope_of(tenant, current)
    if scope is None:
        return report
    visible = {current.catalog[int(p)].name for p in scope.tolist()}
    findings = [f for f in report["findings"] if set(f["tools"]) <= visible]  # nothing about others' tools
    return {
        **report,
        "catalog": "catalog",  # not the server's file path
        "tools": len(visible),
        "findings": findings,
        "counts": {s: sum(f["severity"] == s for f in findings) for s in ("error", "warning", "info")},
        "schema_tokens": {name: cost for name, cost in report["schema_tokens"].items() if name in visible},
    }


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page() -> HTMLResponse:
    """The curation page: catalog overview, findings, and a query box with score breakdowns."""
    return HTMLResponse(WEB_PAGE.read_text(encoding="utf-8"))
