"""Text helpers shared by the tool text (embeddings) and the BM25 tokenizer (index)."""

from __future__ import annotations

import re

CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
"""Where a camelCase or PascalCase identifier changes word: ``getUserID`` -> get | User | ID."""


def split_camel(word: str) -> list[str]:
    """``getUserIDs`` -> ``["get", "User", "IDs"]``; a word without a case change stays whole."""
    return [part for part in CAMEL_BOUNDARY.split(word) if part]
