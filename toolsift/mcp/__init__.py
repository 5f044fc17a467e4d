"""MCP as a catalog source: live catalogs read from MCP servers (toolsift itself served as an
MCP server lives in toolsift.service.mcp_server)."""

from toolsift.errors import ReloadFailed
from toolsift.mcp.client import list_server_tools, open_client, to_tool
from toolsift.mcp.live import LiveCatalog, router_builder, snapshot_catalog
from toolsift.mcp.sources import McpServerSpec, load_sources, parse_sources

__all__ = [
    "LiveCatalog",
    "McpServerSpec",
    "ReloadFailed",
    "list_server_tools",
    "load_sources",
    "open_client",
    "parse_sources",
    "router_builder",
    "snapshot_catalog",
    "to_tool",
]
