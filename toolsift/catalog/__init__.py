"""Tools, catalogs and the loaders that read them."""

from toolsift.catalog.loader import load_catalog, parse_catalog, parse_tool
from toolsift.catalog.models import (
    GROUP_TAG_PREFIX,
    Catalog,
    Tool,
    ToolAnnotations,
    fingerprint_sequence,
    fingerprint_tools,
)

__all__ = [
    "GROUP_TAG_PREFIX",
    "Catalog",
    "Tool",
    "ToolAnnotations",
    "fingerprint_sequence",
    "fingerprint_tools",
    "load_catalog",
    "parse_catalog",
    "parse_tool",
]
