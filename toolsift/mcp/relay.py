"""The upstream servers' resources and prompts, listed and forwarded by the gateway.

A client that asks the gateway for ``resources/list``, ``resources/templates/list`` or
``prompts/list`` gets those of every server the caller reaches (a server one of whose tools is in
the caller's scope), in the order the servers are listed; a prompt's name carries its server's
``prefix`` as a tool's does, a resource keeps its URI (its ``name`` is prefixed). ``resources/read``
and ``prompts/get`` go to the server that listed the URI (or whose URI template matches it) or the
prompt. A server that offers none, is down or does not answer in time is left out of a listing
(logged); a read or get that fails is an MCP error naming the server and what happened.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import orjson
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
)
from pydantic import ValidationError

from toolsift.mcp.live import LiveCatalog, ServerState

logger = logging.getLogger("toolsift.gateway")

MAX_PAGES = 100
MAX_KNOWN = 100_000
"""URIs and prompt names remembered (which server listed them); past this the memory starts over."""
T = TypeVar("T")


class Relay:
    """Lists and forwards the resources and prompts of one ``LiveCatalog``'s servers."""

    def __init__(self, live: LiveCatalog, *, max_result_bytes: int = 1_000_000) -> None:
        self.live = live
        self.max_result_bytes = max_result_bytes
        self._uri_owner: dict[str, str] = {}
        self._templates: dict[str, list[re.Pattern[str]]] = {}
        self._prompt_owner: dict[str, tuple[str, str]] = {}  # listed name -> (server, the server's own name)

    # -- listings --------------------------------------------------------------------------

    async def resources(self, servers: list[str]) -> list[Resource]:
        found = await self._gather(servers, "resources", "list_resources", "resources")
        listed: list[Resource] = []
        for server, items in found:
            for item in items:
                if item.uri not in self._uri_owner or self._uri_owner[item.uri] == server:
                    self._remember(self._uri_owner, item.uri, server)
                    listed.append(item.model_copy(update={"name": self._prefix(server) + item.name}))
        return listed

    async def templates(self, servers: list[str]) -> list[ResourceTemplate]:
        found = await self._gather(servers, "resources", "list_resource_templates", "resource_templates")
        listed: list[ResourceTemplate] = []
        for server, items in found:
            self._templates[server] = [_template_pattern(item.uri_template) for item in items]
            listed += [item.model_copy(update={"name": self._prefix(server) + item.name}) for item in items]
        return listed

    async def prompts(self, servers: list[str]) -> list[Prompt]:
        found = await self._gather(servers, "prompts", "list_prompts", "prompts")
        listed: list[Prompt] = []
        seen: set[str] = set()
        for server, items in found:
            for item in items:
                name = self._prefix(server) + item.name
                if name in seen:  # two servers without prefixes offer it: the first listed serves it
                    continue
                seen.add(name)
                self._remember(self._prompt_owner, name, (server, item.name))
                listed.append(item.model_copy(update={"name": name}))
        return listed

    # -- forwarding ------------------------------------------------------------------------

    async def read(self, uri: str, servers: list[str]) -> ReadResourceResult:
        """The resource ``uri`` as its server answers it; an MCP error when no server the caller
        reaches offers it."""
        server = self._owner_of_uri(uri, servers)
        if server is None:
            await self.resources(servers)
            await self.templates(servers)
            server = self._owner_of_uri(uri, servers)
        if server is None:
            raise MCPError(INVALID_PARAMS, f"no MCP server behind this gateway offers the resource {uri!r}")
        result = await self._forward(server, f"resource {uri!r}", lambda client: client.read_resource(uri))
        size = len(orjson.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)))
        if size > self.max_result_bytes:
            raise MCPError(
                INTERNAL_ERROR,
                f"the resource {uri!r} of server '{server}' is {size} bytes, over the gateway's limit of "
                f"{self.max_result_bytes} (TOOLSIFT_MAX_RESULT_BYTES): raise the limit to read it",
            )
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, servers: list[str]) -> GetPromptResult:
        """The prompt ``name`` (as listed, prefix included) from its server."""
        owner = self._prompt_owner.get(name)
        if owner is None or owner[0] not in servers:
            await self.prompts(servers)
            owner = self._prompt_owner.get(name)
        if owner is None or owner[0] not in servers:
            raise MCPError(INVALID_PARAMS, f"no MCP server behind this gateway offers the prompt {name!r}")
        server, upstream_name = owner
        return await self._forward(
            server, f"prompt {name!r}", lambda client: client.get_prompt(upstream_name, arguments)
        )

    # -- the servers -----------------------------------------------------------------------

    async def _gather(
        self, servers: list[str], capability: str, method: str, field: str
    ) -> list[tuple[str, list[Any]]]:
        """The ``field`` items of every page ``method`` lists, from each of ``servers`` that is
        connected and offers ``capability``, side by side; a server that fails is left out (logged)."""
        found: dict[str, list[Any]] = {}

        async def one(state: ServerState) -> None:
            client = state.client
            if client is None or getattr(client.server_capabilities, capability, None) is None:
                return
            items: list[Any] = []
            cursor: str | None = None
            try:
                with anyio.fail_after(state.spec.timeout):
                    for _ in range(MAX_PAGES):
                        page = await getattr(client, method)(cursor=cursor, cache_mode="refresh")
                        items += getattr(page, field)
                        cursor = page.next_cursor
                        if not cursor:
                            break
            except Exception as error:  # noqa: BLE001 - down, too slow or garbage: the others still list
                logger.warning("MCP server '%s': listing its %s failed: %s", state.spec.name, capability, _why(error))
                return
            found[state.spec.name] = items

        async with anyio.create_task_group() as group:
            for name in servers:
                if name in self.live.servers:
                    group.start_soon(one, self.live.servers[name])
        return [(name, found[name]) for name in servers if name in found]

    async def _forward(self, server: str, what: str, send: Callable[[Client], Awaitable[T]]) -> T:
        state = self.live.servers[server]
        client = state.client
        if client is None:
            raise MCPError(INTERNAL_ERROR, f"server '{server}' is not connected ({state.last_error or 'starting'})")
        try:
            with anyio.fail_after(state.spec.call_timeout):
                return await send(client)
        except TimeoutError:
            raise MCPError(
                INTERNAL_ERROR, f"server '{server}' did not answer for the {what} within {state.spec.call_timeout:g} s"
            ) from None
        except MCPError as error:
            raise MCPError(error.code, f"server '{server}' answered for the {what}: {error.message}") from None
        except ValidationError:
            raise MCPError(INTERNAL_ERROR, f"server '{server}' answered the {what} with something not MCP") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            self.live.connection_lost(server)
            raise MCPError(INTERNAL_ERROR, f"server '{server}': the connection closed; toolsift reconnects") from None

    def _owner_of_uri(self, uri: str, servers: list[str]) -> str | None:
        owner = self._uri_owner.get(uri)
        if owner is not None:
            return owner if owner in servers else None
        for server in servers:
            if any(pattern.fullmatch(uri) for pattern in self._templates.get(server, ())):
                return server
        return None

    def _prefix(self, server: str) -> str:
        return self.live.servers[server].spec.prefix

    @staticmethod
    def _remember(memory: dict[str, Any], key: str, value: Any) -> None:
        if len(memory) >= MAX_KNOWN and key not in memory:
            memory.clear()
        memory[key] = value


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 URI template as a pattern: ``{name}`` matches one path segment, ``{+name}``,
    ``{/name*}`` and the other operators match anything."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = "".join(
        ("[^/?#]*" if part[1:2].isalnum() or part[1:2] == "_" else ".*") if part.startswith("{") else re.escape(part)
        for part in parts
    )
    return re.compile(pattern)


def _why(error: BaseException) -> str:
    return "timed out" if isinstance(error, TimeoutError) else f"{type(error).__name__}: {error}"
