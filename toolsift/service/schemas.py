"""From the router's values to the wire shapes of ``toolsift.wire``: the ``/route`` body (which
the MCP server and the CLI's ``--json`` give too) and a ``RouteRequest`` as a ``RouteQuery``.

The shapes themselves live in ``toolsift.wire`` (pydantic only, shared with the client); they
are re-exported here for the service's modules.
"""

from __future__ import annotations

from typing import Any

from toolsift.router import Delivered, Match, RouteQuery, TagRules
from toolsift.router.sessions import SessionTurn
from toolsift.wire import (
    SESSION_ID_PATTERN,
    AdminChange,
    AdminStatus,
    CallRequest,
    CallResult,
    CatalogMap,
    DeferredTools,
    ErrorBody,
    ErrorResponse,
    FeedbackAccepted,
    FeedbackRequest,
    FeedbackReset,
    FeedbackSummary,
    FeedbackTool,
    Health,
    LintPage,
    MatchOut,
    OutputFormat,
    ReloadResult,
    RouteRequest,
    RouteResponse,
    SessionOut,
    TagRulesIn,
    ToolDetail,
    ToolPage,
    ToolsIn,
)

Format = OutputFormat

__all__ = [
    "SESSION_ID_PATTERN",
    "AdminChange",
    "AdminStatus",
    "CallRequest",
    "CallResult",
    "CatalogMap",
    "DeferredTools",
    "ErrorBody",
    "ErrorResponse",
    "FeedbackAccepted",
    "FeedbackRequest",
    "FeedbackReset",
    "FeedbackSummary",
    "FeedbackTool",
    "Format",
    "Health",
    "LintPage",
    "MatchOut",
    "ReloadResult",
    "RouteRequest",
    "RouteResponse",
    "SessionOut",
    "TagRulesIn",
    "ToolDetail",
    "ToolPage",
    "ToolsIn",
    "route_body",
    "route_query",
]


def route_query(request: RouteRequest) -> RouteQuery:
    """What a ``POST /route`` body asks for, as the router's ``RouteQuery``."""
    return RouteQuery(
        request.query,
        request.k,
        TagRules.from_spec(request.tags, request.access),
        output_format=request.format,
        delivery=request.delivery,
        min_score=request.min_score,
        min_confidence=request.min_confidence,
        pinned=tuple(request.pinned),
        split_intents=request.split_intents,
        session_id=request.session_id,
        session_policy=request.session_policy,
        call_id=request.call_id,
        repeat_references=request.repeat_references,
        namespaces=request.namespaces,
        turn_key=request.turn_key,
    )


def match_out(match: Match) -> MatchOut:
    return MatchOut.model_construct(
        name=match.name,
        score=match.score,
        rank=match.rank,
        similarity=match.similarity,
        lexical=match.lexical,
        dense_part=match.dense_part,
        lexical_part=match.lexical_part,
        intent=match.intent,
        confidence=match.confidence,
    )


def session_out(turn: SessionTurn) -> SessionOut:
    return SessionOut.model_construct(
        id=turn.session_id,
        turn=turn.turn,
        prefix_changed=turn.prefix_changed,
        appended=list(turn.appended),
        removed=list(turn.removed),
        replaced=list(turn.replaced),
        reset=turn.reset,
        held_back=list(turn.held_back),
        withheld=list(turn.withheld),
        size=len(turn.tools),
    )


def route_response(delivered: Delivered) -> RouteResponse:
    result = delivered.result
    return RouteResponse.model_construct(
        tools=delivered.definitions(),
        matches=[match_out(match) for match in result.matches],
        pinned=sorted(tool.name for tool in result.pinned),
        fingerprint=delivered.fingerprint,
        selected_fingerprint=result.fingerprint,
        catalog_fingerprint=result.catalog_fingerprint,
        eligible=result.eligible,
        k=result.k,
        abstained=result.abstained,
        reason=result.reason or None,
        format=delivered.output_format,
        delivery=delivered.delivery,
        session=session_out(delivered.session) if delivered.session else None,
        tool_choice=delivered.tool_choice,
        names=delivered.renamed or None,
        content=delivered.tool_reference_content() if delivered.delivery == "tool_reference" else None,
        output_item=delivered.output_item(),
    )


def route_body(delivered: Delivered) -> dict[str, Any]:
    """The ``/route`` response body; ``session``, ``tool_choice``, ``names``, ``content``,
    ``output_item`` and ``reason`` only where they apply."""
    response = route_response(delivered)
    optional = ("session", "tool_choice", "names", "content", "output_item", "reason")
    absent = {name for name in optional if getattr(response, name) is None}
    return response.model_dump(exclude=absent)
