"""Tool names as providers take them.

A catalog keeps its tools' own names (MCP servers use dots, datasets use spaces, slashes and
colons). OpenAI and Anthropic take a tool name only if it matches ``^[a-zA-Z0-9_-]{1,64}$``, and
MCP clients enforce the same rule; the MCP specification's own (letters, digits, ``_ - .``, up to
128 characters) is wider. So every name toolsift sends in the openai, anthropic or mcp form is a
*wire name*: the name itself when it already fits, else a readable ASCII form with a short hash of
the real name, unique within a catalog (checked when the catalog is built). Responses carry the
mapping back (``names``: wire name -> catalog name) and requests accept either.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
PROVIDER_NAME_RULE = "^[a-zA-Z0-9_-]{1,64}$"
"""The name rule of OpenAI function tools and Anthropic tools (and what MCP clients enforce)."""
_OTHER = re.compile(r"[^A-Za-z0-9_-]+")
_HASH_CHARS = 8


def fits_providers(name: str) -> bool:
    return PROVIDER_NAME.fullmatch(name) is not None


@lru_cache(maxsize=65_536)
def wire_name(name: str) -> str:
    """``name`` if providers take it; else its letters and digits in ASCII (accents dropped),
    other runs as ``_``, cut to fit, then ``_`` and 8 hex digits of its sha256:
    ``get the weather`` -> ``get_the_weather_<hash>``. Deterministic, so every process agrees."""
    if fits_providers(name):
        return name
    ascii_form = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    base = _OTHER.sub("_", ascii_form).strip("_")[: 64 - _HASH_CHARS - 1] or "tool"
    return f"{base}_{hashlib.sha256(name.encode()).hexdigest()[:_HASH_CHARS]}"
