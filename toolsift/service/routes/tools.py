"""``GET /tools``: the catalog the caller may see, a page at a time."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Query

from toolsift.catalog import Tool, fingerprint_tools
from toolsift.catalog.names import wire_name
from toolsift.curation.lint import default_token_counter
from toolsift.curation.views import tool_page
from toolsift.errors import ToolNotFound
from toolsift.router import TagRules, format_tool
from toolsift.service.dependencies import State, Tenant
from toolsift.service.routes.curation import lint_report
from toolsift.service.schemas import Format

router = APIRouter()
TOKEN_COUNTER = functools.cache(default_token_counter)


def _searchable(tool: Tool) -> str:
    return f"{tool.name} {tool.name.replace('_', ' ')} {tool.description}".lower()


@router.get("/tools/{name:path}", summary="One tool: its definition in each format, token costs, findings, neighbours")
def tool(name: str, state: State, tenant: Tenant) -> dict[str, Any]:
    """``name`` is the catalog name or the name sent to providers. A tool the caller's tenant
    cannot see is unknown (404), with suggestions from its own tools only."""
    current = state.routers.get()
    scope = state.scope_of(tenant, current)
    resolved = current.catalog.resolve(name)
    visible = resolved in current.catalog and (
        scope is None or current.catalog.position(resolved) in set(scope.tolist())
    )
    if not visible:
        known = current.catalog.names if scope is None else [current.catalog[int(i)].name for i in scope.tolist()]
        raise ToolNotFound(name, known, field="name")
    state.usage.refresh()
    requests = state.usage.book.summary(tenant.name if tenant is not None else "").get(resolved, [])
    return tool_page(current, resolved, scope, lint_report(state), TOKEN_COUNTER(), requests)


@router.get("/tools", summary="List the catalog's tools")
def tools(
    state: State,
    tenant: Tenant,
    tag: Annotated[list[str] | None, Query(description="Only tools with any of these tags")] = None,
    q: Annotated[
        str | None, Query(max_length=200, description="Only tools whose name or description contains these words")
    ] = None,
    format: Format = "toolsift",
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    current = state.routers.get()
    catalog = current.catalog
    scope = state.scope_of(tenant, current)
    allowed = current.tag_index.allowed(TagRules.parse(any_of=tag or []), scope)
    positions = range(len(catalog)) if allowed is None else allowed.tolist()
    words = (q or "").lower().split()
    selected = sorted(
        (tool for tool in (catalog[int(p)] for p in positions) if all(w in _searchable(tool) for w in words)),
        key=lambda tool: tool.name,
    )
    page = selected[offset : offset + limit]
    visible = catalog.tools if scope is None else [catalog[int(p)] for p in scope.tolist()]
    renamed = {wire_name(t.name): t.name for t in page if format != "toolsift" and wire_name(t.name) != t.name}
    return {
        **({"names": renamed} if renamed else {}),
        "total": len(selected),
        "offset": offset,
        "limit": limit,
        "tools": [format_tool(tool, format) for tool in page],
        "tags": current.tag_index.visible_tags(scope),
        "catalog_fingerprint": catalog.fingerprint if scope is None else fingerprint_tools(visible),
    }
