"""toolsift: pick the few tools an LLM should see, fast, in a stable cache-friendly form."""

from toolsift._version import __version__
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
