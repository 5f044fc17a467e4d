"""``GET /tools``: the catalog the caller may see, a page at a time."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from toolsift.catalog import fingerprint_tools
from toolsift.catalog.names import wire_name
from toolsift.router import TagRules, format_tool
from toolsift.service.dependencies import State, Tenant
from toolsift.service.schemas import Format

router = APIRouter()


@router.get("/tools", summary="List the catalog's tools")
def tools(
    state: State,
    tenant: Tenant,
    tag: Annotated[list[str] | None, Query(description="Only tools with any of these tags")] = None,
    format: Format = "toolsift",
    offset: Annotated[int, Query(ge=0, le=100_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    current = state.routers.get()
    catalog = current.catalog
    scope = state.scope_of(tenant, current)
    allowed = current.tag_index.allowed(TagRules.parse(any_of=tag or []), scope)
    positions = range(len(catalog)) if allowed is None else allowed.tolist()
    selected = sorted((catalog[int(p)] for p in positions), key=lambda tool: tool.name)
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
