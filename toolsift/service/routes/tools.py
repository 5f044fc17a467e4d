"""``GET /tools``: the catalog the caller may see, a page at a time."""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from toolsift.catalog import GROUP_TAG_PREFIX, Tool
from toolsift.catalog.names import wire_name
from toolsift.curation.lint import default_token_counter
from toolsift.curation.views import tool_page
from toolsift.errors import ToolNotFound
from toolsift.router import TagRules, format_tool
from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import Format, ToolDetail, ToolPage
from toolsift.service.state import ServiceState
from toolsift.tenants import TenantSpec, key_from_headers

router = APIRouter()
TOKEN_COUNTER = functools.cache(default_token_counter)


def _searchable(tool: Tool) -> str:
    return f"{tool.name} {tool.name.replace('_', ' ')} {tool.description}".lower()


@router.get(
    "/tools/{name:path}",
    summary="One tool: its definition in each format, token costs, findings, neighbours",
    response_model=ToolDetail,
)
async def tool(name: str, request: Request, state: State, tenant: Tenant) -> Response:
    """``name`` is the catalog name or the name sent to providers. A tool the caller's tenant
    cannot see is unknown (404), with suggestions from its own tools only. The latest feedback
    requests (others' words) are shown to the admin and to a tenant (its own); to anyone else,
    their count only."""
    readable = tenant is not None or state.is_admin(key_from_headers(request.headers))

    def rendered() -> Response:
        # built and serialised on a curation thread, never the event loop routes share; its shape
        # (ToolDetail) is checked by the tests, not validated per request
        return JSONBytes(tool_detail(state, tenant, name, readable))

    return await state.off_the_route_path(rendered)


def tool_detail(state: ServiceState, tenant: TenantSpec | None, name: str, readable: bool = True) -> dict[str, Any]:
    current = state.routers.get()
    caller = state.caller(tenant, current)
    resolved = current.catalog.resolve(name)
    if not caller.scope.contains(resolved):
        raise ToolNotFound(name, caller.scope.names, field="name")
    state.usage.refresh()
    requests = state.usage.book.summary(caller.pool).get(resolved, [])
    page = tool_page(current, resolved, caller.scope, state.findings_view(tenant), TOKEN_COUNTER(), requests)
    if not readable:
        page["feedback"]["recent"] = []
    return page


@router.get("/tools", summary="List the catalog's tools", response_model=ToolPage, response_model_exclude_none=True)
def tools(
    state: State,
    tenant: Tenant,
    tag: Annotated[list[str] | None, Query(description="Only tools with any of these tags")] = None,
    group: Annotated[list[str] | None, Query(description="Only tools in any of these groups")] = None,
    q: Annotated[
        str | None, Query(max_length=200, description="Only tools whose name or description contains these words")
    ] = None,
    format: Format = "toolsift",
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    current = state.routers.get()
    catalog = current.catalog
    scope = state.caller(tenant, current).scope
    wanted = [*(tag or []), *(GROUP_TAG_PREFIX + name for name in group or [])]
    allowed = current.tag_index.allowed(TagRules.parse(any_of=wanted), scope.ids)
    positions = range(len(catalog)) if allowed is None else allowed.tolist()
    words = (q or "").lower().split()
    selected = sorted(
        (tool for tool in (catalog[int(p)] for p in positions) if all(w in _searchable(tool) for w in words)),
        key=lambda tool: tool.name,
    )
    page = selected[offset : offset + limit]
    renamed = {wire_name(t.name): t.name for t in page if format != "toolsift" and wire_name(t.name) != t.name}
    return {
        **({"names": renamed} if renamed else {}),
        "total": len(selected),
        "offset": offset,
        "limit": limit,
        "tools": [format_tool(tool, format) for tool in page],
        "tags": current.tag_index.visible_tags(scope.ids),
        "groups": scope.groups,
        "catalog_fingerprint": scope.fingerprint,
    }
