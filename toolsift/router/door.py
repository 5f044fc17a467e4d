"""The one door of a routed request. Every entrance — the HTTP API, the MCP server, the CLI —
calls ``answer``, so the same request from the same caller gets the same answer, byte for byte,
whichever way it came.

    caller = Caller.anyone(router.catalog)        # no tenants: sees every tool
    query = RouteQuery("will it rain in Lisbon?", k=3, output_format="anthropic")
    delivered = answer(router, query, caller, sessions)

A call forwarded by the gateway asks the same door which tool it may run (``tool_to_call``).
"""

from __future__ import annotations

from toolsift import tracing
from toolsift.catalog import Tool
from toolsift.errors import ToolCallRefused
from toolsift.router.caller import Caller, RouteQuery
from toolsift.router.delivery import Delivered, deliver
from toolsift.router.router import Router
from toolsift.router.sessions import Sessions


def answer(
    router: Router, query: RouteQuery, caller: Caller | None = None, sessions: Sessions | None = None
) -> Delivered:
    """Route ``query`` within what ``caller`` may see, then deliver it (sessions, formats,
    deferred references): the answer every entrance gives."""
    caller = caller or Caller.anyone(router.catalog)
    with tracing.span("route", _request_attributes(query, caller)):
        result = router.route(
            query.query,
            query.k,
            query.rules,
            min_score=query.min_score,
            min_confidence=query.min_confidence,
            pinned=query.pinned,
            scope=caller.scope,
            split_intents=query.split_intents,
            usage_pool=caller.pool,
        )
        if tracing.enabled():
            best = result.matches[0] if result.matches else None
            tracing.annotate({
                "catalog.fingerprint": result.catalog_fingerprint, "eligible": result.eligible,
                "matches": len(result.matches), "abstained": result.abstained, "reason": result.reason or None,
                "top.name": best.name if best else None, "top.score": best.score if best else None,
                "top.confidence": best.confidence if best else None,
            })  # fmt: skip
        with tracing.span("deliver", {"delivery": query.delivery, "format": query.output_format}):
            return deliver(router, result, query, caller, sessions)


def _request_attributes(query: RouteQuery, caller: Caller) -> dict[str, tracing.AttributeValue | None] | None:
    """What a route span says of the request (never its text: a user's words stay out of traces)."""
    if not tracing.enabled():
        return None
    return {"k": query.k, "tenant": caller.pool or None, "format": query.output_format, "delivery": query.delivery,
            "session": query.session_id is not None, "pinned": len(query.pinned)}  # fmt: skip


def tool_to_call(router: Router, name: str, caller: Caller | None = None) -> Tool:
    """The tool named ``name`` when ``caller`` may call it: the same scope a search of theirs
    ranks within (their key's tools, the operator's tags and access). Otherwise
    ``ToolCallRefused``: a tool their key does not reach is, to them, a tool that does not exist;
    one their key reaches but the operator's rules leave out is refused naming the rule."""
    caller = caller or Caller.anyone(router.catalog)
    name = router.catalog.resolve(name)  # the name a provider was sent works too
    tool = router.catalog.get(name)
    if tool is not None and caller.scope.contains(tool):
        return tool
    if tool is not None and caller.reach is not None and caller.reach.contains(tool):
        reason = caller.rules.violation(tool)
        if reason is not None:
            raise ToolCallRefused(name, (), reason)
    raise ToolCallRefused(name, caller.scope.names)
