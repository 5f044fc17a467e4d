"""``GET /deferred``: the constant tools array of deferred loading (see toolsift.router.deferred)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response

from toolsift.router import Access, TagRules
from toolsift.router.deferred import DeferredFormat, deferred_namespaces, deferred_tools
from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import DeferredTools

router = APIRouter()


@router.get(
    "/deferred",
    summary="Every tool the caller may see, deferred, plus the search tool: sent on every turn",
    response_model=DeferredTools,
    responses={304: {"description": "Not modified: If-None-Match holds the current ETag"}},
)
def deferred(
    state: State,
    tenant: Tenant,
    format: Annotated[
        DeferredFormat,
        Query(description="anthropic (Messages API), openai (Responses API) or gemini (Interactions API)"),
    ],
    tag: Annotated[list[str] | None, Query(description="Only tools with any of these tags (repeatable)")] = None,
    exclude_tag: Annotated[list[str] | None, Query(description="No tool with any of these tags (repeatable)")] = None,
    access: Annotated[
        Access, Query(description="read_only / non_destructive: only tools whose annotations allow it")
    ] = "any",
    namespaces: Annotated[
        bool, Query(description="With openai: each group of tools as one namespace (answer with namespaces: true)")
    ] = False,
    if_none_match: Annotated[str | None, Header()] = None,
) -> Response:
    """Byte-stable (sorted by name, keys sorted) with an ETag that changes only when the tools the
    caller may see change; ``If-None-Match`` with it answers 304. The operator's ``tag``,
    ``exclude_tag`` and ``access`` rules narrow the tools (send the same rules with each
    ``/route``). Serialised once per catalog, tenant, format and rules (on 20,000 tools the body is
    megabytes)."""
    current = state.routers.get()
    rules = TagRules.parse(any_of=tag or [], exclude=exclude_tag or [], access=access)
    grouped = deferred_namespaces(current.catalog, format, namespaces)  # namespaces for gemini: 400
    key = (current.catalog.fingerprint, tenant.name if tenant else "", format, rules, namespaces)
    with state.cache_lock:
        found = state.deferred_payloads.get(key)
    if found is None:
        scope = state.caller(tenant, current).scope
        allowed = current.tag_index.allowed(rules, scope.ids)  # an unknown tag: 400, naming the caller's tags
        tools = scope.tools if allowed is None else tuple(current.catalog[int(p)] for p in allowed.tolist())
        payload = deferred_tools(tools, format, namespaces=grouped)
        found = (f'"{payload["fingerprint"]}"', bytes(JSONBytes(payload).body))
        with state.cache_lock:
            state.deferred_payloads[key] = found
    etag, body = found
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if if_none_match is not None and _matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _matches(if_none_match: str, etag: str) -> bool:
    """``If-None-Match`` holds ``*`` or the ETag, weak (``W/"..."``) or strong: a weak comparison,
    as RFC 9110 asks for this header."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return "*" in tags or etag in tags
