"""Deferred loading: the constant half of a prompt that never changes.

Both providers can keep tool definitions out of the rendered prompt prefix until the model asks
for them. The agent sends, on every turn, the same array: every tool the caller may see, each
with ``defer_loading: true``, plus one search tool. When the model calls the search tool, the
agent asks toolsift (``POST /route`` with ``delivery: "tool_reference"`` or
``"tool_search_output"``) and appends the answer to the conversation; the referenced definitions
expand there, so tools, system prompt and earlier messages stay a cache hit on every turn.

- Anthropic: a client tool (``toolsift_search``) whose ``tool_result`` content holds
  ``{"type": "tool_reference", "tool_name": ...}`` blocks.
- OpenAI Responses: a ``{"type": "tool_search", "execution": "client"}`` tool, answered by a
  ``tool_search_output`` item carrying the matched function definitions. With ``namespaces``,
  each group of tools is one ``namespace`` tool (OpenAI's models were trained to search those),
  and the found tools come in their namespaces.
- Gemini Interactions: a ``{"type": "tool_search", "execution": "client", "name":
  "toolsift_search"}`` tool, answered by a ``function_result`` step named after it whose
  ``result`` holds the matched function definitions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from toolsift.catalog import Catalog, Tool
from toolsift.catalog.names import wire_name
from toolsift.errors import InvalidQuery
from toolsift.router.formats import to_anthropic, to_gemini, to_responses
from toolsift.wire import DEFERRED_FORMATS as DEFERRED_FORMATS
from toolsift.wire import SEARCH_TOOL_NAME as SEARCH_TOOL_NAME
from toolsift.wire import DeferredFormat as DeferredFormat

SEARCH_DESCRIPTION = (
    "Find the tools that fit a task among the many available ones, whose definitions are not loaded yet. "
    "Call it before using a tool you have not seen, with the user's request (or the step at hand) as the "
    "query; the tools it finds become available to call right away. Call it again for a different task."
)
SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the tool must do, in plain words (the user's request)"},
        "k": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many tools at most (default 5)"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only tools with at least one of these tags",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def search_tool(output_format: DeferredFormat) -> dict[str, Any]:
    """The search tool's own definition, as the provider takes it."""
    if output_format == "anthropic":
        return {"name": SEARCH_TOOL_NAME, "description": SEARCH_DESCRIPTION, "input_schema": SEARCH_PARAMETERS}
    search = {"type": "tool_search", "execution": "client", "description": SEARCH_DESCRIPTION}
    if output_format == "gemini":  # the function_result answering it is named after it
        search["name"] = SEARCH_TOOL_NAME
    return {**search, "parameters": SEARCH_PARAMETERS}


_DEFINITIONS = {"anthropic": to_anthropic, "openai": to_responses, "gemini": to_gemini}


def deferred_tool(tool: Tool, output_format: DeferredFormat) -> dict[str, Any]:
    """``tool``'s definition with ``defer_loading: true``."""
    return {**_DEFINITIONS[output_format](tool), "defer_loading": True}


def namespaced(tools: Sequence[Tool], catalog: Catalog, *, defer: bool) -> list[dict[str, Any]]:
    """OpenAI Responses definitions of ``tools`` with each group's tools in one ``namespace``
    (groups by name, then the tools in no group; each tool by name). A namespace is described by
    the catalog's ``groups`` section, or by the tools it holds here, never by others."""
    by_group: dict[str | None, list[Tool]] = {}
    for tool in sorted(tools, key=lambda tool: tool.name):
        by_group.setdefault(tool.group, []).append(tool)

    def definition(tool: Tool) -> dict[str, Any]:
        return deferred_tool(tool, "openai") if defer else to_responses(tool)

    found: list[dict[str, Any]] = [
        {"type": "namespace", "name": wire_name(group),
         "description": catalog.describe_group(group, [tool.name for tool in members]),
         "tools": [definition(tool) for tool in members]}
        for group, members in sorted((g, m) for g, m in by_group.items() if g is not None)
    ]  # fmt: skip
    return found + [definition(tool) for tool in by_group.get(None, [])]


def deferred_namespaces(catalog: Catalog, output_format: str, namespaces: bool) -> Catalog | None:
    """The catalog whose groups become namespaces, when they are asked for (OpenAI only)."""
    if not namespaces:
        return None
    if output_format != "openai":
        raise InvalidQuery("namespaces", f"namespaces are OpenAI's; {output_format} has none: leave them out")
    return catalog


def deferred_tools(
    tools: Sequence[Tool], output_format: DeferredFormat, *, namespaces: Catalog | None = None
) -> dict[str, Any]:
    """What the agent sends on every turn: the search tool, then every tool (sorted by name) with
    ``defer_loading: true``; and a fingerprint of exactly those bytes. ``namespaces`` (OpenAI
    only): the catalog whose groups become namespaces."""
    definitions = [search_tool(output_format)]
    if namespaces is not None:
        definitions += namespaced(tools, namespaces, defer=True)
    else:
        definitions += [deferred_tool(tool, output_format) for tool in sorted(tools, key=lambda tool: tool.name)]
    canonical = orjson.dumps(definitions, option=orjson.OPT_SORT_KEYS)
    return {
        "format": output_format,
        "tools": definitions,
        "count": len(tools),
        "fingerprint": "sha256:" + hashlib.sha256(canonical).hexdigest(),
    }
