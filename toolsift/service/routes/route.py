"""``POST /route``: the tools for one request, in the form and delivery mode asked for."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from toolsift.router import deliver
from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import RouteRequest, RouteResponse, route_body

router = APIRouter()


@router.post(
    "/route", response_model=RouteResponse, response_model_exclude_none=True, summary="Pick the tools for a query"
)
def route(request: RouteRequest, state: State, tenant: Tenant) -> Response:
    current = state.routers.get()  # one router for the whole request, even if a reload lands meanwhile
    scope = state.scope_of(tenant, current)
    state.usage.refresh()  # feedback other workers took since this one last looked
    rules = request.rules()
    result = current.route(
        request.query,
        request.k,
        rules,
        min_score=request.min_score,
        pinned=request.pinned,
        scope=scope,
        split_intents=request.split_intents,
        usage_pool=tenant.name if tenant is not None else "",
    )
    delivered = deliver(
        current,
        result,
        output_format=request.format,
        delivery=request.delivery,
        rules=rules,
        session_id=request.session_id,
        sessions=state.sessions,
        session_policy=request.session_policy,
        scope=scope,
        session_namespace=tenant.name if tenant else "",
        call_id=request.call_id,
        repeat_references=request.repeat_references,
    )
    state.metrics.route_latency.observe(result.took_ms / 1000)
    # timing goes in headers, so the body stays byte-identical for identical requests
    took = f"{result.took_ms:.3f}"
    body = route_body(delivered)
    if tenant is not None and state.tenants is not None:  # the catalog as this tenant sees it
        body["catalog_fingerprint"] = state.tenants.fingerprint(tenant, current)
    return JSONBytes(body, headers={"Server-Timing": f"route;dur={took}", "X-Toolsift-Took-Ms": took})
