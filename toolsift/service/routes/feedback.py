"""``POST /feedback``: the tool a request was actually answered with; routing learns from it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from toolsift import tracing
from toolsift.router.usage import Feedback
from toolsift.service.dependencies import State, Tenant
from toolsift.service.schemas import FeedbackAccepted, FeedbackRequest
from toolsift.tenants import key_from_headers

router = APIRouter()


@router.post("/feedback", response_model=FeedbackAccepted, summary="Say which tool answered a request")
def feedback(body: FeedbackRequest, request: Request, state: State, tenant: Tenant) -> dict[str, Any]:
    """Kept durably (with an index folder) and used by the next route of the same tenant: the
    request becomes one more view of the tool. Feedback is a write: it needs a credential (a
    tenant key, ``TOOLSIFT_FEEDBACK_TOKEN`` or the admin token; 403 otherwise, see
    ``TOOLSIFT_FEEDBACK``), which names the contributor (capped per tool, rate-limited: 429). An
    unknown tool (or one the caller's tenant cannot see) is a 400."""
    current = state.routers.get()
    caller = state.caller(tenant, current)
    contributor = state.feedback_contributor(tenant, key_from_headers(request.headers), _client(request))
    with tracing.span("feedback", {"tool": body.tool, "tenant": caller.pool or None}):
        item = current.checked_feedback(Feedback(body.query, body.tool, caller.pool, contributor), caller.scope)
        state.usage.record([item])
    state.metrics.feedback.inc()
    return {
        "accepted": True,
        "tool": item.tool,
        "examples": len(state.usage.book.summary(caller.pool).get(item.tool, [])),
    }


def _client(request: Request) -> str:
    return request.client.host if request.client is not None else "unknown"
