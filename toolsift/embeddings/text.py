"""Compose the text that represents a tool for embedding and lexical search."""

from __future__ import annotations

import re

from toolsift.catalog.models import Tool
from toolsift.text import split_camel

_SEPARATORS = re.compile(r"[_\-.:/\s]+")


def split_identifier(identifier: str) -> str:
    """``getCurrentCryptoPrices`` -> ``get current crypto prices``; ``send_email`` -> ``send email``."""
    words: list[str] = []
    for part in _SEPARATORS.split(identifier):
        if part:
            words.extend(split_camel(part))
    return " ".join(word.lower() for word in words if word)


def compose_tool_text(tool: Tool) -> str:
    """Name (split into words), description, parameter names and example requests.

    The name comes first and the description second: small sentence encoders weigh the start of
    the text most, and truncate the end past their token limit.

    Tags are left out of this text (they go into ``lexical_tool_text``): appended to a sentence
    embedding, a list of category words drags every tool of a group ("scenario:students",
    "huggingface", a team or a source) toward the same point, while BM25 matches a tag only when
    the request says it and discounts tags that many tools share (figures:
    benchmarks/DECISIONS.md).
    """
    parts = [f"{split_identifier(tool.name)}: {tool.description.strip()}"]
    if tool.annotations.title:
        parts.append(tool.annotations.title)
    parameters = tool.parameter_names()
    if parameters:
        parts.append("Parameters: " + ", ".join(split_identifier(p) for p in parameters) + ".")
    if tool.examples:
        parts.append("Examples: " + " ".join(tool.examples))
    return " ".join(parts)


def lexical_tool_text(tool: Tool) -> str:
    """The text BM25 indexes: the name's words, then ``compose_tool_text`` (so the name counts
    twice, a field boost: "send an email" should meet ``send_email`` before the tools that only
    mention e-mail), the parameters' descriptions and allowed values, and the tool's tags, as
    keywords.

    Parameter descriptions name what a request mentions ("the city, e.g. Paris", "celsius,
    fahrenheit"). BM25 weighs each word by its rarity, so they add evidence without drowning the
    description; in the embedded text they dilute it instead (figures: benchmarks/DECISIONS.md)."""
    parts = [split_identifier(tool.name), compose_tool_text(tool)]
    details = tool.parameter_descriptions()
    if details:
        parts.append("Parameter details: " + " ".join(details))
    if tool.tags:
        parts.append(f"Tags: {', '.join(tool.tags)}.")
    return " ".join(parts)
