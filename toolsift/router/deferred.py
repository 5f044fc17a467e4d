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
  ``tool_search_output`` item carrying the matched function definitions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from toolsift.catalog import Tool
from toolsift.router.formats import to_anthropic, to_responses
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
    return {
        "type": "tool_search",
        "execution": "client",
        "description": SEARCH_DESCRIPTION,
        "parameters": SEARCH_PARAMETERS,
    }


def deferred_tool(tool: Tool, output_format: DeferredFormat) -> dict[str, Any]:
    """``tool``'s definition with ``defer_loading: true``."""
    definition = to_anthropic(tool) if output_format == "anthropic" else to_responses(tool)
    return {**definition, "defer_loading": True}


def deferred_tools(tools: Sequence[Tool], output_format: DeferredFormat) -> dict[str, Any]:
    """What the agent sends on every turn: the search tool, then every tool (sorted by name) with
    ``defer_loading: true``; and a fingerprint of exactly those bytes."""
    definitions = [search_tool(output_format)]
    definitions += [deferred_tool(tool, output_format) for tool in sorted(tools, key=lambda tool: tool.name)]
    canonical = orjson.dumps(definitions, option=orjson.OPT_SORT_KEYS)
    return {
        "format": output_format,
        "tools": definitions,
        "count": len(definitions) - 1,
        "fingerprint": "sha256:" + hashlib.sha256(canonical).hexdigest(),
    }
