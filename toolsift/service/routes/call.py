"""``POST /call``: run a tool the caller found, on the MCP server that owns it (the HTTP twin of the
MCP gateway's ``call_tool``; ``toolsift serve --mcp-servers`` only)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from toolsift.service.dependencies import State, Tenant
from toolsift.service.responses import JSONBytes
from toolsift.service.schemas import CallRequest, CallResult

router = APIRouter()


@router.post(
    "/call",
    response_model=CallResult,
    summary="Call a tool on the MCP server that owns it",
    description=(
        "The answer is the server's MCP result as it came (content blocks, structuredContent, isError). A call "
        "that is refused (a tool this key may not call, or the operator's rules leave out), has arguments that "
        "do not match the tool's inputSchema, or fails upstream (down, too slow, garbage) is an MCP tool error "
        "(isError, a text that says why), status 200, as the MCP gateway answers; the X-Toolsift-Call-Outcome "
        "header says which. A service without --mcp-servers answers 409."
    ),
)
async def call(request: CallRequest, state: State, tenant: Tenant) -> Response:
    current = state.routers.get()
    outcome = await state.call(
        current, state.caller(tenant, current), request.tool, request.arguments, session_id=request.session_id
    )
    body = outcome.result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return JSONBytes(body, headers={"X-Toolsift-Call-Outcome": outcome.outcome})
