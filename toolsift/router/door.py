"""The one door of a routed request. Every entrance — the HTTP API, the MCP server, the CLI —
calls ``answer``, so the same request from the same caller gets the same answer, byte for byte,
whichever way it came.

    caller = Caller.anyone(router.catalog)        # no tenants: sees every tool
    query = RouteQuery("will it rain in Lisbon?", k=3, output_format="anthropic")
    delivered = answer(router, query, caller, sessions)
"""

from __future__ import annotations

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
    result = router.route(
        query.query,
        query.k,
        query.rules,
        min_score=query.min_score,
        pinned=query.pinned,
        scope=caller.scope,
        split_intents=query.split_intents,
        usage_pool=caller.pool,
    )
    return deliver(router, result, query, caller, sessions)
