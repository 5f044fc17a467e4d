"""Tools, catalogs and the loaders that read them."""

from toolsift.catalog.loader import load_catalog, parse_catalog, parse_tool
from toolsift.catalog.models import Catalog, Tool, ToolAnnotations, fingerprint_sequence, fingerprint_tools

__all__ = [
    "Catalog",
    "Tool",
    "ToolAnnotations",
    "fingerprint_sequence",
    "fingerprint_tools",
    "load_catalog",
    "parse_catalog",
    "parse_tool",
]
