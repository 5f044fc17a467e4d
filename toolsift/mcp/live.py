"""A live catalog: the tools of several MCP servers, kept up to date while toolsift serves.

Each server gets a task that holds a connection open. When the server says its tools changed
(``notifications/tools/list_changed`` on handshake-era connections, a ``subscriptions/listen``
event on 2026-07-28 ones) or when ``reload()`` is called, that server's tools are fetched again
and a new router is built beside the old one, re-embedding only the tools whose text changed.
The new router is published only once it is complete; anything that fails on the way (a server
that is down, answers garbage, or a name clash) leaves the old router serving, and the error is
kept in ``status()``. A server that drops is reconnected with backoff; its last known tools stay
in the catalog meanwhile.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import mcp_types as types
import orjson
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolsift import tracing
from toolsift.catalog import Catalog, Tool
from toolsift.catalog.security import confusable_names, scan_tool
from toolsift.embeddings import Embedder, EmbeddingCache, embedder_for
from toolsift.errors import CatalogError, ReloadFailed, ToolsiftError
from toolsift.mcp.approvals import Approvals, Held
from toolsift.mcp.client import believed, list_server_tools, open_client
from toolsift.mcp.sources import McpServerSpec
from toolsift.router import RankingConfig, Router, Scope

logger = logging.getLogger("toolsift.mcp")

BuildRouter = Callable[[Catalog, Router | None], Router]


def router_builder(
    embedder: Embedder | str, *, ranking: RankingConfig | None = None, cache: EmbeddingCache | None = None
) -> BuildRouter:
    """Builds the first router from scratch, and each later one from the previous (reusing vectors
    and the embedder). ``embedder`` may be a model name (``auto`` picks by the first catalog)."""

    def build(catalog: Catalog, previous: Router | None) -> Router:
        if previous is not None:
            return previous.rebuilt(catalog, cache=cache)
        chosen = embedder_for(embedder, catalog) if isinstance(embedder, str) else embedder
        return Router.build(catalog, chosen, cache=cache, ranking=ranking)

    return build


@dataclass
class ServerState:
    spec: McpServerSpec
    tools: list[Tool] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    connected: bool = False
    protocol: str | None = None
    fetched_at: str | None = None
    last_error: str | None = None
    changes_seen: int = 0
    client: Client | None = None
    attempted: anyio.Event = field(default_factory=anyio.Event)
    lost: anyio.Event = field(default_factory=anyio.Event)
    """Set when a call found the connection closed: the watcher reconnects at once."""
    listed: list[Tool] = field(default_factory=list)
    """What the server lists now, its annotations as claimed (``tools`` is what may serve)."""
    held: list[Held] = field(default_factory=list)
    """Its tools in quarantine (changed or new since approved)."""

    def record(self) -> dict[str, Any]:
        return {
            "transport": self.spec.transport,
            "connected": self.connected,
            "protocol": self.protocol,
            "tools": len(self.tools),
            "fetched_at": self.fetched_at,
            "changes_seen": self.changes_seen,
            "last_error": self.last_error,
            "problems": self.problems[:20],
            "policy": self.spec.policy,
            "quarantined": len(self.held),
        }


class LiveCatalog:
    """Watches MCP servers and publishes a new router whenever their tools change."""

    def __init__(
        self,
        specs: list[McpServerSpec],
        *,
        build: BuildRouter,
        publish: Callable[[Router], None],
        base: Catalog | None = None,
        debounce: float = 0.1,
        retry_delay: float = 1.0,
        ping_interval: float = 15.0,
        on_failure: Callable[[str], None] | None = None,
        approvals: Approvals | None = None,
    ) -> None:
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names):
            raise CatalogError("the same server name is listed twice", fix="Give each server its own name")
        self.servers = {spec.name: ServerState(spec) for spec in specs}
        self.base = base
        self.router: Router | None = None
        self.reloads = 0
        self.last_reload: dict[str, Any] | None = None
        self.last_error: str | None = None
        self.clashes: list[dict[str, Any]] = []
        """Tool names offered by more than one source, as of the last merge: who serves each, who was dropped."""
        self.withheld: list[dict[str, Any]] = []
        """Servers' tools left out of the last merge for a ``security-*`` error: tool, server, findings."""
        self._scans: dict[str, list[str]] = {}
        self._owners: dict[str, str] = {}
        """Which source serves each tool name in the published catalog (it keeps it on a clash)."""
        self._build = build
        self._publish = publish
        self._debounce = debounce
        self._retry_delay = retry_delay
        self._ping_interval = ping_interval
        self._lock = anyio.Lock()
        self._on_failure = on_failure
        self.approvals = approvals
        """Pinned definitions (``toolsift.mcp.approvals``); None: every listed tool serves as listed."""

    # -- lifecycle -------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[LiveCatalog]:
        """Connect to every server, build the first router, keep watching until the block ends."""
        async with anyio.create_task_group() as group:
            for state in self.servers.values():
                group.start_soon(self._watch, state)
            if self.approvals is not None:
                group.start_soon(self._follow_approvals)
            longest = max((s.spec.timeout for s in self.servers.values()), default=0) + 5
            with anyio.move_on_after(longest):
                for state in self.servers.values():
                    await state.attempted.wait()
            try:
                await self.rebuild("start")
            except ReloadFailed:
                if self.router is None:
                    group.cancel_scope.cancel()
                    raise
            try:
                yield self
            finally:
                group.cancel_scope.cancel()

    async def reload(self, server: str | None = None) -> dict[str, Any]:
        """Fetch the tools again (of one server, or all) and publish a new router if they changed."""
        if server is not None and server not in self.servers:
            raise CatalogError(f"no MCP server named '{server}'", fix=f"Use one of {', '.join(self.servers)}")
        states = [self.servers[server]] if server else list(self.servers.values())
        for state in states:
            if state.client is None:
                raise ReloadFailed(f"server '{state.spec.name}' is not connected ({state.last_error or 'starting'})")
            try:
                await self._fetch(state)
            except Exception as error:
                reason = f"server '{state.spec.name}': {_describe(error)}"
                if self._on_failure is not None:
                    self._on_failure(reason)
                raise ReloadFailed(reason) from error
        return await self.rebuild("reload")

    def connection_lost(self, server: str) -> None:
        """A call found ``server``'s connection closed (its process died, say): reconnect now
        rather than at the next ping."""
        state = self.servers.get(server)
        if state is not None and state.client is not None:
            state.lost.set()

    def owner(self, name: str) -> str | None:
        """The server that serves the tool ``name`` in the published catalog (``BASE`` for a tool
        of the base catalog), None for a name it does not have."""
        return self._owners.get(name)

    def held(self, name: str) -> Held | None:
        """The tool ``name`` (as toolsift serves it) if it waits for approval as a new tool."""
        return next(
            (h for state in self.servers.values() for h in state.held if h.tool == name and h.kind == "new"), None
        )

    def servers_reached(self, scope: Scope) -> list[str]:
        """The servers that serve at least one tool of ``scope``, in the order listed: whose
        resources and prompts a caller with that scope may see."""
        if scope.is_everything:
            return list(self.servers)
        owners = {self._owners.get(tool.name) for tool in scope.tools}
        return [name for name in self.servers if name in owners]

    def status(self) -> dict[str, Any]:
        return {
            "servers": {name: state.record() for name, state in self.servers.items()},
            "tools": len(self.router.catalog) if self.router else 0,
            "catalog_fingerprint": self.router.catalog.fingerprint if self.router else None,
            "reloads": self.reloads,
            "last_reload": self.last_reload,
            "last_error": self.last_error,
            "clashes": self.clashes,
            "withheld": self.withheld,
            "quarantined": [held.record() for state in self.servers.values() for held in state.held],
        }

    # -- building --------------------------------------------------------------------------

    def merged_catalog(self) -> Catalog:
        """The base catalog's tools, then each server's, in the order the servers are listed.

        A name offered by several sources is served from one: the source that served it in the
        published catalog, else the first listed. The others' tool of that name is left out and
        the clash recorded (``clashes``, ``/admin/status``), so one server can never take a name
        over, nor stop the other servers' changes from applying."""
        return self._merge()[0]

    def _merge(self) -> tuple[Catalog, dict[str, str]]:
        groups: list[tuple[str, list[Tool]]] = [(BASE, list(self.base or []))]
        groups += [(name, state.tools) for name, state in self.servers.items()]
        offered: dict[str, list[str]] = {}
        for owner, group in groups:
            for tool in group:
                offered.setdefault(tool.name, []).append(owner)
        keep = {
            name: self._owners[name] if self._owners.get(name) in owners else owners[0]
            for name, owners in offered.items()
        }
        tools = [tool for owner, group in groups for tool in group if keep[tool.name] == owner]
        tools = self._screened(tools, keep)
        self.clashes = [
            {"tool": name, "serving": _source(keep[name]), "dropped": [_source(o) for o in owners if o != keep[name]]}
            for name, owners in offered.items()
            if len(owners) > 1
        ]
        for clash in self.clashes:
            logger.warning(
                "tool '%s' is offered by %s too; %s keeps serving it (set a 'prefix' for one server)",
                clash["tool"], " and ".join(clash["dropped"]), clash["serving"],
            )  # fmt: skip
        described = dict(self.base.group_descriptions) if self.base is not None else {}
        described |= {
            state.spec.group: state.spec.description for state in self.servers.values() if state.spec.description
        }
        return Catalog(tools, source="mcp:" + ",".join(self.servers), groups=described), keep

    def _screened(self, tools: list[Tool], owners: dict[str, str]) -> list[Tool]:
        """``tools`` without the servers' tools that carry a ``security-*`` error (a poisoned
        definition never reaches a model); the base catalog's tools are the operator's own."""
        confusable = confusable_names(tool.name for tool in tools)
        self.withheld = []
        kept = []
        for tool in tools:
            owner = owners[tool.name]
            problems = (
                []
                if owner == BASE
                else self._scan(tool) + ([confusable[tool.name][0]] if tool.name in confusable else [])
            )
            if problems:
                self.withheld.append({"tool": tool.name, "server": owner, "findings": problems})
                logger.warning("server '%s': tool '%s' withheld, its definition looks poisoned: %s",
                               owner, tool.name, "; ".join(problems))  # fmt: skip
                continue
            kept.append(tool)
        return kept

    def _scan(self, tool: Tool) -> list[str]:
        key = hashlib.sha256(orjson.dumps(tool.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)).hexdigest()
        found = self._scans.get(key)
        if found is None:
            found = [f"{hit.code}: {hit.what}, in {hit.where}" for hit in scan_tool(tool) if hit.severity == "error"]
            if len(self._scans) > 100_000:
                self._scans.clear()
            self._scans[key] = found
        return found

    async def rebuild(self, reason: str) -> dict[str, Any]:
        with tracing.span("reload", {"source": "mcp servers", "reason": reason}):
            return await self._rebuild(reason)

    async def _rebuild(self, reason: str) -> dict[str, Any]:
        async with self._lock:
            started = time.perf_counter()
            try:
                catalog, owners = self._merge()
                if self.router is not None and catalog.fingerprint == self.router.catalog.fingerprint:
                    return {"changed": False, "reason": reason, "tools": len(catalog)}
                router = await anyio.to_thread.run_sync(self._build, catalog, self.router)
            except Exception as error:
                self.last_error = _describe(error)
                logger.error("rebuild after %s failed; the previous catalog keeps serving: %s", reason, self.last_error)
                if self._on_failure is not None:
                    self._on_failure(self.last_error)
                raise ReloadFailed(self.last_error) from error
            before = set(self.router.catalog.names) if self.router else set()
            after = set(catalog.names)
            stats = router.last_build
            self.router = router
            self._owners = owners
            self._publish(router)
            self.reloads += 1
            self.last_error = None
            self.last_reload = {
                "changed": True,
                "reason": reason,
                "tools": len(catalog),
                "added": sorted(after - before),
                "removed": sorted(before - after),
                "embedded": stats.embedded if stats else None,
                "reused": stats.reused if stats else None,
                "seconds": round(time.perf_counter() - started, 3),
                "at": _now(),
                "catalog_fingerprint": catalog.fingerprint,
            }
            logger.info("catalog %s: %s", reason, self.last_reload)
            return self.last_reload

    # -- watching --------------------------------------------------------------------------

    async def _watch(self, state: ServerState) -> None:
        delay = self._retry_delay
        while True:
            send, receive = anyio.create_memory_object_stream[None](max_buffer_size=100)

            async def on_message(message: Any, send: Any = send) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    send.send_nowait(None)

            with send, receive:
                try:
                    async with open_client(state.spec, on_message) as client:
                        state.lost = anyio.Event()
                        state.client, state.connected, state.protocol = client, True, client.protocol_version
                        await self._fetch(state)
                        state.attempted.set()
                        delay = self._retry_delay
                        if state.fetched_at and self.router is not None:
                            await self._rebuild_quietly("reconnect")
                        async with anyio.create_task_group() as connection:
                            connection.start_soon(self._follow_changes, state, client, receive)
                            connection.start_soon(self._keep_alive, state, client)
                except Exception as error:
                    state.last_error = _describe(error)
                    logger.warning("MCP server '%s': %s; retrying in %.0fs", state.spec.name, state.last_error, delay)
                finally:
                    state.client, state.connected = None, False
                    state.attempted.set()
            await anyio.sleep(delay)
            delay = min(delay * 2, 60.0)

    async def _keep_alive(self, state: ServerState, client: Client) -> None:
        """Ping the server every ``ping_interval`` seconds; a ping unanswered within its timeout,
        or a call that found the connection closed, ends the connection (and the watcher
        reconnects): a server that died is noticed even when nothing is called."""
        while True:
            with anyio.move_on_after(self._ping_interval):
                await state.lost.wait()
                raise ConnectionError("the connection closed during a call")
            with anyio.fail_after(state.spec.timeout):
                await client.send_ping()

    async def _follow_changes(self, state: ServerState, client: Client, legacy: Any) -> None:
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _event in subscription:
                        await self._changed(state)
                return
            except MCPError as error:
                if error.code != types.METHOD_NOT_FOUND:
                    raise
                # a server without subscriptions/listen still serves: keep the connection (for
                # calls), and read its tools again on reload
                logger.info("MCP server '%s' offers no subscriptions/listen; POST /admin/reload reads its tools again",
                            state.spec.name)  # fmt: skip
                await anyio.sleep_forever()
        async for _ in legacy:
            while True:  # coalesce a burst of notifications
                try:
                    legacy.receive_nowait()
                except anyio.WouldBlock:
                    break
            await self._changed(state)

    async def _changed(self, state: ServerState) -> None:
        state.changes_seen += 1
        await anyio.sleep(self._debounce)
        try:
            await self._fetch(state)
        except Exception as error:
            state.last_error = _describe(error)
            logger.warning(
                "MCP server '%s' announced new tools but listing them failed: %s", state.spec.name, state.last_error
            )
            return
        await self._rebuild_quietly("tools/list_changed from " + state.spec.name)

    async def _rebuild_quietly(self, reason: str) -> None:
        with contextlib.suppress(ReloadFailed):  # logged and kept in status(); the old router serves on
            await self.rebuild(reason)

    async def _fetch(self, state: ServerState) -> None:
        if state.client is None:
            raise ReloadFailed(f"server '{state.spec.name}' is not connected")
        with anyio.fail_after(state.spec.timeout):
            listed, problems = await list_server_tools(state.client, state.spec, believe=False)
        state.listed, state.problems = listed, problems
        state.fetched_at = _now()
        self._review(state)
        state.last_error = None

    def _review(self, state: ServerState) -> None:
        """What of the server's listing may serve, under its pins (see ``approvals``)."""
        if state.fetched_at is None:
            return  # never listed yet: an empty listing must not become the server's first use
        spec = state.spec
        tools, state.held = state.listed, []
        if self.approvals is not None:
            listed = [(tool.name.removeprefix(spec.prefix), tool) for tool in state.listed]
            tools, state.held = self.approvals.review(spec.name, listed, accept=spec.policy == "accept")
            for held in state.held:
                logger.warning("server '%s': tool '%s' held for approval (%s, %s)",
                               spec.name, held.tool, held.kind, held.what)  # fmt: skip
            self.approvals.publish_held([held for other in self.servers.values() for held in other.held])
        state.tools = [believed(tool, spec) for tool in tools]

    async def approve(self, server: str | None = None, tools: list[str] | None = None) -> dict[str, Any]:
        """Pin what the servers list now (one server's, or every server's; only ``tools``, by the
        names toolsift serves, when given) and publish the catalog that follows."""
        if self.approvals is None:
            raise CatalogError("this catalog pins nothing", fix="Serve MCP servers with approvals on")
        if server is not None and server not in self.servers:
            raise CatalogError(f"no MCP server named '{server}'", fix=f"Use one of {', '.join(self.servers)}")
        states = [self.servers[server]] if server else list(self.servers.values())
        unknown = sorted(set(tools or ()) - {tool.name for state in states for tool in state.listed})
        if unknown:
            raise CatalogError(
                f"no server lists {', '.join(unknown)}", fix="Approve tools by the names toolsift serves"
            )
        approved: dict[str, list[str]] = {}
        for state in states:
            chosen = [tool for tool in state.listed if tools is None or tool.name in tools]
            if chosen:
                pairs = [(tool.name.removeprefix(state.spec.prefix), tool) for tool in chosen]
                approved[state.spec.name] = self.approvals.pin(state.spec.name, pairs, by="admin")
                self._review(state)
        await self._rebuild_quietly("approval")
        return {"approved": approved}

    async def _follow_approvals(self) -> None:
        """Re-read the approvals file when it changes (``toolsift approve`` in another process)."""
        assert self.approvals is not None
        while True:
            await anyio.sleep(APPROVALS_POLL)
            try:
                changed = self.approvals.reload()
            except CatalogError as error:
                self.last_error = str(error)
                logger.error("%s; the previous pins keep applying", error)
                continue
            if changed:
                for state in self.servers.values():
                    self._review(state)
                await self._rebuild_quietly("approvals changed")


async def snapshot_catalog(specs: list[McpServerSpec], base: Catalog | None = None) -> tuple[Catalog, list[str]]:
    """The tools the servers list right now, merged as a live catalog would, and the problems met
    (tools left out). A server that cannot be reached is an error: a snapshot must be complete."""
    catalog = LiveCatalog(specs, build=_no_build, publish=lambda router: None, base=base)
    problems: list[str] = []
    for state in catalog.servers.values():
        try:
            with anyio.fail_after(state.spec.timeout):
                async with open_client(state.spec) as client:
                    state.tools, found = await list_server_tools(client, state.spec)
        except Exception as error:
            raise ReloadFailed(f"server '{state.spec.name}': {_describe(error)}") from None
        problems += found
    return catalog.merged_catalog(), problems


def _no_build(catalog: Catalog, previous: Router | None) -> Router:
    raise NotImplementedError


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    if isinstance(error, TimeoutError):
        return "timed out"
    return f"{type(error).__name__}: {error}" if not isinstance(error, ToolsiftError) else str(error)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


APPROVALS_POLL = 1.0
"""Seconds between looks at the approvals file."""

BASE = ""
"""The owner name of the base catalog's tools (``--catalog``) among the servers'."""


def _source(owner: str) -> str:
    return "the base catalog" if owner == BASE else f"server '{owner}'"
