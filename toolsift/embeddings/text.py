"""Compose the text that represents a tool for embedding and lexical search."""

from __future__ import annotations

import re

from toolsift.catalog.models import Tool

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-.:/\s]+")


def split_identifier(identifier: str) -> str:
    """``getCurrentCryptoPrices`` -> ``get current crypto prices``; ``send_email`` -> ``send email``."""
    words: list[str] = []
    for part in _SEPARATORS.split(identifier):
        if part:
            words.extend(_CAMEL_BOUNDARY.split(part))
    return " ".join(word.lower() for word in words if word)


def compose_tool_text(tool: Tool) -> str:
    """Name (split into words), description, tags, parameter names and example requests.

    The name comes first and the description second: small sentence encoders weigh the start of
    the text most, and truncate the end past their token limit.
    """
    parts = [f"{split_identifier(tool.name)}: {tool.description.strip()}"]
    if tool.annotations.title:
        parts.append(tool.annotations.title)
    if tool.tags:
        parts.append("Tags: " + ", ".join(tool.tags) + ".")
    parameters = tool.parameter_names()
    if parameters:
        parts.append("Parameters: " + ", ".join(split_identifier(p) for p in parameters) + ".")
    if tool.examples:
        parts.append("Examples: " + " ".join(tool.examples))
    return " ".join(parts)
