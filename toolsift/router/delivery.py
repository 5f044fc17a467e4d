"""Turn a route result into what a caller sends to its LLM: the response body of ``/route``.

Delivery modes:

- ``subset`` (default): ``tools`` holds only the routed tools (pinned first, then the matches,
  each group by name), or, with a session, the session's append-only list.
- ``allowed_tools`` (OpenAI only): ``tools`` holds a stable superset (the session's list, or every
  tool the rules allow when there is no session) and ``tool_choice`` masks it down to this turn's
  tools, so the tools array, and with it the cached prefix, stays the same from turn to turn.
- ``tool_reference``, ``tool_search_output`` and ``function_result`` (deferred loading,
  ``toolsift.router.deferred``): the answer to the model's search call, which the agent appends
  to the conversation while its tools array (every tool, deferred) never changes: Anthropic
  ``tool_reference`` blocks for a ``tool_result``, an OpenAI Responses ``tool_search_output``
  item (the tools in their namespaces with ``namespaces``), or a Gemini Interactions
  ``function_result`` step holding the function definitions. With a session, a tool
  referenced on an earlier turn is not referenced again (the model holds it) unless asked.

``deliver`` returns a ``Delivered``: what to send and why. The HTTP service, the MCP server and
the CLI turn it into the ``/route`` response body (``toolsift.service.schemas``). It depends only
on the catalog, the request and the session state, never on timings, so the same request gives
the same bytes in any process.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from toolsift.catalog import Catalog, Tool, fingerprint_sequence
from toolsift.catalog.names import wire_name
from toolsift.errors import InvalidQuery
from toolsift.router.caller import DELIVERY_MODES, Caller, Delivery, RouteQuery
from toolsift.router.deferred import SEARCH_TOOL_NAME, namespaced
from toolsift.router.formats import OutputFormat, format_tool, to_gemini, to_responses
from toolsift.router.router import Router, RouteResult
from toolsift.router.rules import TagRules
from toolsift.router.scope import Scope
from toolsift.router.sessions import Sessions, SessionTurn

DEFERRED_DELIVERIES = ("tool_reference", "tool_search_output", "function_result")
ANSWERS_A_CALL = ("tool_search_output", "function_result")
"""The deliveries that answer one search call by its id (``call_id``)."""
MAX_SUPERSET = 128
"""OpenAI accepts at most 128 tools per request: the most an allowed_tools superset may hold."""


@dataclass(frozen=True)
class Delivered:
    """What a caller sends to its LLM for one routed request."""

    result: RouteResult
    """The routing result: this turn's ranked matches and pinned tools."""
    tools: tuple[Tool, ...]
    """The tools array to send, in order: the subset, the session's list, or the superset."""
    output_format: OutputFormat
    delivery: Delivery
    session: SessionTurn | None = None
    """With a session id: what this turn did to the session's list (its ``session_id`` is the caller's)."""
    tool_choice: dict[str, Any] | str | None = None
    """With ``allowed_tools``: the OpenAI ``tool_choice`` masking ``tools`` to this turn's
    (``"none"`` when this turn selected nothing: the answer abstained)."""
    references: tuple[Tool, ...] = ()
    """With a deferred delivery: the tools to reference on this turn (pinned first, then matches)."""
    call_id: str | None = None
    """With ``tool_search_output`` or ``function_result``: the model's tool search call this answers."""
    namespaces: Catalog | None = None
    """With ``tool_search_output`` and namespaces asked for: the catalog whose groups they are."""

    def _nothing_found(self) -> list[dict[str, Any]] | None:
        """When the answer abstained and references nothing, one text block saying so (the model
        reads that no tool fits, and answers without one)."""
        if self.references or not self.result.abstained:
            return None
        return [{"type": "text", "text": f"No tool found: {self.result.reason}. Answer without a tool."}]

    def tool_reference_content(self) -> list[dict[str, Any]]:
        """Anthropic ``tool_reference`` blocks, for the ``content`` of the search call's ``tool_result``."""
        nothing = self._nothing_found()
        if nothing is not None:
            return nothing
        return [{"type": "tool_reference", "tool_name": wire_name(tool.name)} for tool in self.references]

    def tool_search_output(self) -> dict[str, Any]:
        """The OpenAI Responses ``tool_search_output`` item answering the model's search call."""
        if self.namespaces is not None:
            tools = namespaced(self.references, self.namespaces, defer=False)
        else:
            tools = [to_responses(tool) for tool in self.references]
        return {"type": "tool_search_output", "execution": "client", "call_id": self.call_id, "status": "completed",
                "tools": tools}  # fmt: skip

    def function_result(self) -> dict[str, Any]:
        """The Gemini Interactions ``function_result`` step answering the model's call of the
        search tool: the found functions, loaded from then on."""
        result = self._nothing_found() or [to_gemini(tool) for tool in self.references]
        return {"type": "function_result", "name": SEARCH_TOOL_NAME, "call_id": self.call_id, "result": result}

    def output_item(self) -> dict[str, Any] | None:
        """What answers the model's search call by its id, in this delivery (None in the others)."""
        if self.delivery == "tool_search_output":
            return self.tool_search_output()
        if self.delivery == "function_result":
            return self.function_result()
        return None

    @property
    def fingerprint(self) -> str:
        """sha256 of the tools array exactly as sent, order included."""
        return fingerprint_sequence(self.tools)

    def definitions(self) -> list[dict[str, Any]]:
        return [format_tool(tool, self.output_format) for tool in self.tools]

    @property
    def renamed(self) -> dict[str, str]:
        """Wire name -> catalog name for the sent tools whose names providers would refuse (empty
        in toolsift's own format, which keeps every name)."""
        if self.output_format == "toolsift":
            return {}
        return {wire_name(tool.name): tool.name for tool in self.tools if wire_name(tool.name) != tool.name}


def allowed_tools_choice(names: list[str]) -> dict[str, Any]:
    """OpenAI Chat Completions ``tool_choice`` restricting the model to ``names``."""
    return {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [{"type": "function", "function": {"name": name}} for name in names],
        },
    }


def superset_for(
    router: Router, rules: TagRules, pinned: tuple[Tool, ...], scope: Scope | None = None
) -> tuple[Tool, ...]:
    """Every tool the rules allow, plus the pinned ones, by name: a superset that only a catalog
    change alters."""
    allowed = router.tag_index.allowed(rules, scope.ids if scope is not None else None)
    catalog = router.catalog
    chosen = {tool.name: tool for tool in pinned}
    positions = range(len(catalog)) if allowed is None else allowed.tolist()
    if len(positions) + len(chosen) > MAX_SUPERSET:
        raise InvalidQuery(
            "delivery",
            f"allowed_tools needs a superset of at most {MAX_SUPERSET} tools, and these rules allow "
            f"{len(positions)}. Send a session_id (the superset is then the session's tools) or "
            "narrow the tag rules",
        )
    for position in positions:
        tool = catalog[int(position)]
        chosen.setdefault(tool.name, tool)
    return tuple(sorted(chosen.values(), key=lambda tool: tool.name))


def deliver(
    router: Router,
    result: RouteResult,
    query: RouteQuery | None = None,
    caller: Caller | None = None,
    sessions: Sessions | None = None,
) -> Delivered:
    """What to send for ``result`` (routed for ``query`` on behalf of ``caller``): the tools array
    in the requested delivery mode. Every tool it holds is one the query's rules and the caller's
    scope allow: a session tool they forbid is withheld."""
    query = query or RouteQuery(result.query, result.k)
    caller = caller or Caller.anyone(router.catalog)
    _check(query)
    selected = result.tools
    tools: tuple[Tool, ...] = selected
    turn: SessionTurn | None = None
    if query.session_id is not None:
        if sessions is None:
            raise InvalidQuery("session_id", "sessions are not enabled on this router")
        rules, scope = query.rules, caller.scope

        def permitted(tool: Tool) -> bool:
            return rules.permits(tool) and scope.contains(tool)

        turn = sessions.advance(
            caller.session_key(query.session_id),
            selected,
            router.catalog,
            ranked=result.names,
            policy=query.session_policy,
            permitted=permitted,
            turn_key=query.turn_key,
        )
        turn = replace(turn, session_id=query.session_id)
        tools = turn.tools
    elif query.delivery == "allowed_tools":
        tools = superset_for(router, query.rules, result.pinned, caller.scope)
    choice: dict[str, Any] | str | None = None
    if query.delivery == "allowed_tools":  # nothing selected (an abstaining answer): no tool may be called
        choice = allowed_tools_choice([wire_name(tool.name) for tool in selected]) if selected else "none"
    references: tuple[Tool, ...] = ()
    if query.delivery in DEFERRED_DELIVERIES:
        held = turn is not None and not query.repeat_references
        new = set(turn.appended) if held and turn is not None else None  # the model holds the rest
        references = tuple(tool for tool in selected if new is None or tool.name in new)
    namespaces = router.catalog if query.namespaces else None
    return Delivered(
        result, tools, query.output_format, query.delivery, turn, choice, references, query.call_id, namespaces
    )


def _check(query: RouteQuery) -> None:
    """The delivery options that only make sense together."""
    if query.delivery not in DELIVERY_MODES:
        raise InvalidQuery("delivery", f"must be one of {', '.join(DELIVERY_MODES)}, got {query.delivery!r}")
    if query.delivery == "allowed_tools" and query.output_format != "openai":
        raise InvalidQuery(
            "delivery",
            "allowed_tools is an OpenAI feature; send format=openai with it, or use delivery=subset",
        )
    if query.delivery in ANSWERS_A_CALL and not query.call_id:
        raise InvalidQuery("call_id", f"{query.delivery} answers one tool search call: send that call's id as call_id")
    if query.namespaces and query.delivery != "tool_search_output":
        raise InvalidQuery(
            "namespaces", "namespaces are OpenAI's: send them with delivery=tool_search_output, or leave them out"
        )
