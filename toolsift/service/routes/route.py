"""``POST /route``: the tools for one request, in the form and delivery mode asked for."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import RouteRequest, RouteResponse, route_body, route_query

router = APIRouter()


@router.post(
    "/route", response_model=RouteResponse, response_model_exclude_none=True, summary="Pick the tools for a query"
)
def route(request: RouteRequest, state: State, tenant: Tenant) -> Response:
    current = state.routers.get()  # one router for the whole request, even if a reload lands meanwhile
    delivered = state.answer(current, route_query(request), state.caller(tenant, current))
    # timing goes in headers, so the body stays byte-identical for identical requests
    took = f"{delivered.result.took_ms:.3f}"
    return JSONBytes(route_body(delivered), headers={"Server-Timing": f"route;dur={took}", "X-Toolsift-Took-Ms": took})
