"""One lifespan per start-up mode: what the service loads before it answers, and what runs
beside it while it serves.

- a router given to ``create_app`` (tests, embedding in another app): nothing to load;
- an index folder (``toolsift serve``): load it, then watch it for new builds;
- MCP servers (``--mcp-servers``): a live catalog that follows the servers' tools.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
from fastapi import FastAPI

from toolsift.catalog import load_catalog
from toolsift.index.feedback_log import feedback_log_path
from toolsift.router import Router
from toolsift.service.catalog_updates import (
    follow_announcements,
    publish,
    shared_lock,
    warn_about_rules,
    watch_index_folder,
)
from toolsift.service.state import ServiceState

logger = logging.getLogger("toolsift.service")

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def lifespan_for(state: ServiceState) -> Lifespan:
    """The lifespan of the mode ``state``'s settings and router ask for."""
    if state.settings.mcp_servers is not None:
        return lambda app: serve_mcp_servers(state)
    if state.given_router is not None:
        return lambda app: serve_given_router(state)
    return lambda app: serve_index_folder(state)


@asynccontextmanager
async def serve_given_router(state: ServiceState) -> AsyncIterator[None]:
    warn_about_rules(state, state.routers.get())
    yield


@asynccontextmanager
async def serve_index_folder(state: ServiceState) -> AsyncIterator[None]:
    settings = state.settings
    if state.usage.log is None:
        state.usage.open_log(feedback_log_path(settings.index_path), lambda: shared_lock(state, "feedback", "feedback"))
    if state.routers.peek() is None:  # not loaded yet (toolsift mcp loads it before it starts)
        logger.info("loading index from %s", settings.index_path)
        state.folder_seen = state.folder_version()  # before the load: an edit landing meanwhile is seen
        state.routers.set(Router.load(settings.index_path, ranking=settings.ranking(), backend=settings.backend))
    warn_about_rules(state, state.routers.get())
    state.prepare_lint_report()
    await anyio.to_thread.run_sync(state.shadow.refresh, settings.index_path, settings.ranking())
    if settings.reload_interval <= 0:
        yield
        return
    async with anyio.create_task_group() as group:
        group.start_soon(watch_index_folder, state)
        if state.replicas is not None:
            group.start_soon(follow_announcements, state)
        yield
        group.cancel_scope.cancel()


@asynccontextmanager
async def serve_mcp_servers(state: ServiceState) -> AsyncIterator[None]:
    from toolsift.mcp import LiveCatalog, load_sources, router_builder  # the MCP client, only in this mode
    from toolsift.mcp.approvals import Approvals, approvals_path
    from toolsift.mcp.calls import Forwarder
    from toolsift.mcp.relay import Relay

    settings = state.settings
    assert settings.mcp_servers is not None
    base = load_catalog(settings.catalog_path) if settings.catalog_path else None
    embedder = state.given_router.embedder if state.given_router else settings.model
    build = router_builder(embedder, ranking=settings.ranking(), cache=settings.open_cache())
    live = LiveCatalog(
        load_sources(settings.mcp_servers),
        build=build,
        publish=lambda router: publish(state, router),
        base=base,
        on_failure=lambda reason: state.metrics.reloads.labels("failed").inc(),
        approvals=Approvals(approvals_path(settings.mcp_servers, settings.approvals)),
    )
    logger.info("reading tools from the MCP servers in %s", settings.mcp_servers)
    async with live.running():
        state.live = live
        state.forwarder = Forwarder(
            live, max_result_bytes=settings.max_result_bytes, observe=state.metrics.observe_call
        )
        state.relay = Relay(live, max_result_bytes=settings.max_result_bytes)
        try:
            yield
        finally:
            state.live, state.forwarder, state.relay = None, None, None
