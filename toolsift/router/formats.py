"""Tool definitions in the form each provider's API takes. The openai, anthropic and mcp forms
carry each tool's wire name (``toolsift.catalog.names``): one every provider accepts."""

from __future__ import annotations

from typing import Any

from toolsift.catalog import Tool
from toolsift.catalog.names import wire_name
from toolsift.wire import OUTPUT_FORMATS as OUTPUT_FORMATS
from toolsift.wire import OutputFormat as OutputFormat

_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def _schema(tool: Tool) -> dict[str, Any]:
    if not tool.parameters:
        return dict(_EMPTY_OBJECT_SCHEMA)
    if "type" not in tool.parameters:
        return {"type": "object", **tool.parameters}
    return tool.parameters


def to_openai(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": wire_name(tool.name), "description": tool.description, "parameters": _schema(tool)},
    }


def to_responses(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "name": wire_name(tool.name),
        "description": tool.description,
        "parameters": _schema(tool),
        "strict": False,  # strict mode needs every property required and no extra ones: not every catalog's
    }


def to_anthropic(tool: Tool) -> dict[str, Any]:
    return {"name": wire_name(tool.name), "description": tool.description, "input_schema": _schema(tool)}


def to_mcp(tool: Tool) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "name": wire_name(tool.name),
        "description": tool.description,
        "inputSchema": _schema(tool),
    }
    if not tool.annotations.is_empty():
        definition["annotations"] = tool.annotations.to_mcp()
    return definition


def to_gemini(tool: Tool) -> dict[str, Any]:
    """A function of Gemini's Interactions API (``google.genai.interactions.Function``)."""
    return {
        "type": "function",
        "name": wire_name(tool.name),
        "description": tool.description,
        "parameters": _schema(tool),
    }


def to_toolsift(tool: Tool) -> dict[str, Any]:
    return tool.model_dump(mode="json", exclude_defaults=True)


_FORMATTERS = {
    "toolsift": to_toolsift,
    "openai": to_openai,
    "responses": to_responses,
    "anthropic": to_anthropic,
    "mcp": to_mcp,
    "gemini": to_gemini,
}


def format_tool(tool: Tool, output_format: OutputFormat = "toolsift") -> dict[str, Any]:
    try:
        formatter = _FORMATTERS[output_format]
    except KeyError:
        raise ValueError(f"unknown format {output_format!r}; use one of {OUTPUT_FORMATS}") from None
    return formatter(tool)
