"""Which MCP servers make up a live catalog: a YAML or JSON file, one entry per server.

The file uses the ``mcpServers`` layout most MCP clients share (``servers`` is accepted too)::

    mcpServers:
      files:                         # stdio: toolsift launches the command
        command: npx
        args: ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
        env: {LOG_LEVEL: warn}
      github:                        # streamable HTTP
        url: https://mcp.example.com/mcp
        prefix: "github_"            # renames its tools, to avoid name clashes
        tags: [github]               # added to every tool of this server
        description: Issues, pull requests and code search on GitHub   # what the server's group is for
        call_timeout: 120            # seconds a forwarded call may take (default 60)
        trusted: true                # believe its readOnlyHint / destructiveHint (default: no)
        read_only: [list_issues]     # tools the operator vouches change nothing
        policy: quarantine           # a changed or new tool waits for approval (or: accept)

Every tool also gets the tag ``mcp:<server name>``, so tag rules can pick or drop a server, and
belongs to the group named after its server (``group``: another name), described by
``description`` (OpenAI's deferred loading sends each group as a namespace). A server's own tags
and group (``_meta``) are ignored: what a server's tools may reach is the operator's to say.

A server's own annotations are claims: unless it is ``trusted``, a tool's ``readOnlyHint: true``
or ``destructiveHint: false`` is dropped (``access: read_only`` / ``non_destructive`` then refuse
it) — a destructive tool cannot get past the operator's rules by saying it is harmless. The
operator's ``read_only`` list marks tools read-only whatever the server says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolsift.catalog.loader import read_document
from toolsift.errors import McpServersFileError


class McpServerSpec(BaseModel):
    """How to reach one MCP server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    prefix: str = ""
    tags: tuple[str, ...] = ()
    description: str = Field(default="", max_length=1024)
    """What the server's tools are for: its group's description (the operator's words, not the server's)."""
    group_name: str | None = Field(default=None, alias="group", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """The group of the server's tools (default: the server's name)."""
    timeout: float = Field(default=30.0, gt=0, le=600)
    """Seconds to wait for the server to start and answer tools/list."""
    call_timeout: float = Field(default=60.0, gt=0, le=3600)
    """Seconds a forwarded tool call may take before the caller gets a timeout error."""
    trusted: bool = False
    """Believe the server's ``readOnlyHint`` / ``destructiveHint`` (otherwise they are dropped)."""
    read_only: tuple[str, ...] = ()
    """The server's tools (its own names) the operator vouches change nothing."""
    policy: Literal["quarantine", "accept"] = "quarantine"
    """What a changed or new tool does once the server's tools are pinned: wait for approval
    (``toolsift approve``, ``POST /admin/approve``; its pinned definition serves meanwhile), or be
    pinned as it comes (a server you control)."""
    protocol: Literal["auto", "legacy"] = "auto"
    """``legacy`` skips the 2026-07-28 discovery probe and uses the initialize handshake, for
    servers that mishandle the probe."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (stdio) or 'url' (streamable HTTP), not both or neither")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def group(self) -> str:
        return self.group_name or self.name

    @property
    def server_tag(self) -> str:
        return f"mcp:{self.name}"

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


def parse_sources(document: Any, source: str = "<data>") -> list[McpServerSpec]:
    if not isinstance(document, dict):
        raise McpServersFileError("expected a mapping with 'mcpServers'", source=source)
    servers = document.get("mcpServers", document.get("servers"))
    if not isinstance(servers, dict) or not servers:
        raise McpServersFileError(
            "no servers listed",
            source=source,
            fix="Add an 'mcpServers' mapping: server name -> {command, args} or {url}",
        )
    specs = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise McpServersFileError("expected a mapping", source=source, entry=f"server '{name}'")
        try:
            specs.append(McpServerSpec.model_validate({"name": str(name), **entry}))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or None
            raise McpServersFileError(
                first["msg"],
                source=source,
                entry=f"server '{name}'",
                field=field,
                fix="Each server needs 'command' (+ 'args', 'env', 'cwd') or 'url'; optional: prefix, tags, description, group, "
                "timeout, call_timeout, trusted, read_only, policy",
            ) from None
    return specs


def load_sources(path: str | Path) -> list[McpServerSpec]:
    document, source = read_document(path, "MCP servers file", McpServersFileError)
    return parse_sources(document, source)
