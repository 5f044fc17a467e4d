"""toolsift: pick the few tools an LLM should see, fast, in a stable cache-friendly form.

The names below are imported when first used, so ``import toolsift.client`` (or
``toolsift.wire``) loads neither numpy, FAISS nor a model: a client install stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from toolsift._version import __version__

if TYPE_CHECKING:
    from toolsift.catalog import Catalog, Tool, load_catalog
    from toolsift.errors import ToolsiftError
    from toolsift.router import Match, Router, RouteResult, TagRules

__all__ = [
    "Catalog",
    "Match",
    "RouteResult",
    "Router",
    "TagRules",
    "Tool",
    "ToolsiftError",
    "__version__",
    "load_catalog",
]

_HOMES = {
    "Catalog": "toolsift.catalog",
    "Tool": "toolsift.catalog",
    "load_catalog": "toolsift.catalog",
    "ToolsiftError": "toolsift.errors",
    "Match": "toolsift.router",
    "Router": "toolsift.router",
    "RouteResult": "toolsift.router",
    "TagRules": "toolsift.router",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'toolsift' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
