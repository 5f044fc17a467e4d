"""How the serving catalog changes: admin edits, reloads of the index folder, and the watcher
that lets every worker follow the folder. On any failure the previous router keeps serving."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import anyio

from toolsift import tracing
from toolsift.catalog import Catalog
from toolsift.embeddings import Embedder
from toolsift.errors import CatalogManagedElsewhere, IndexMismatch, UnknownTag
from toolsift.index import Manifest
from toolsift.index.folder_lock import folder_lock, nothing_to_check
from toolsift.router import Router
from toolsift.service.state import ServiceState

logger = logging.getLogger("toolsift.service")


def publish(state: ServiceState, router: Router) -> None:
    """Serve ``router`` from now on, and count the reload."""
    state.routers.set(router)
    state.metrics.reloads.labels("ok").inc()
    warn_about_rules(state, router)
    state.prepare_lint_report()


def warn_about_rules(state: ServiceState, router: Router) -> None:
    """A tag the operator's rules or a tenant name that this catalog lacks (a typo, or tools that
    left) is logged: such a rule matches nothing, and with ``--tags`` every caller sees no tool."""
    rules = state.settings.rules()
    for tag in rules.tags():
        if tag not in router.catalog.rule_tags:
            effect = "it leaves nothing out" if tag in rules.exclude else "no tool passes it"
            if tag in rules.any_of and any(other in router.catalog.rule_tags for other in rules.any_of):
                effect = "the other --tags still let tools through"
            logger.warning(
                "the operator's rules (--tags / --exclude-tags): %s; %s",
                UnknownTag(tag, router.catalog.rule_tags),
                effect,
            )
    if state.tenants is not None:
        for problem in state.tenants.problems(router.catalog):
            logger.warning("tenants file: %s", problem)


def load_index_folder(state: ServiceState, embedder: Embedder) -> Router:
    """The index folder as it is now, with the serving model when the folder was built with it,
    else with the model its manifest names: a rebuild may switch models (``auto`` picks the
    multilingual one once a catalog is mostly in another script), and the service follows."""
    path, ranking = state.settings.index_path, state.settings.ranking()
    try:
        return Router.load(path, embedder, ranking=ranking)
    except IndexMismatch as error:
        if error.what != "embedding model":
            raise
        logger.info("the index folder was built with %s (serving %s): loading that model", error.actual, embedder.name)
        return Router.load(path, ranking=ranking, backend=state.settings.backend)


async def reload_index_folder(state: ServiceState) -> Router:
    """Load the index folder again and serve it; a failure is counted, logged and raised."""
    previous = state.routers.get()
    with tracing.span("reload", {"source": "index folder"}):
        try:
            loaded = await anyio.to_thread.run_sync(load_index_folder, state, previous.embedder)
        except Exception:
            state.metrics.reloads.labels("failed").inc()
            logger.warning("the index folder does not load; still serving the previous one", exc_info=True)
            raise
        publish(state, loaded)
        tracing.annotate({"catalog.fingerprint": loaded.catalog.fingerprint, "tools": len(loaded.catalog)})
    return loaded


async def watch_index_folder(state: ServiceState) -> None:
    """Every worker follows the index folder: when `toolsift build` (or another worker's admin
    edit) swaps in a new one, load it and switch; a folder that fails to load is logged and the
    current index serves on. The version served is the one read before the index was loaded: an
    edit that lands between that load and this watcher's start is loaded on the first check."""
    if state.folder_seen == ("", 0.0):  # a router given, not loaded from the folder here
        state.folder_seen = state.folder_version()
    while True:
        await anyio.sleep(state.settings.reload_interval)
        await check_index_folder(state)
        await anyio.to_thread.run_sync(state.shadow.refresh, state.settings.index_path, state.settings.ranking())


async def follow_announcements(state: ServiceState) -> None:
    """With replicas: load a new index version as soon as one of them announces it."""
    assert state.replicas is not None

    async def announced(version: str) -> None:
        await check_index_folder(state)
        await anyio.to_thread.run_sync(state.shadow.refresh, state.settings.index_path, state.settings.ranking())

    await state.replicas.listen("index", announced)


async def check_index_folder(state: ServiceState) -> None:
    """Load the index folder if its version is not the one served (a failure is logged, counted
    and the current index serves on)."""
    async with state.reload_lock:
        current = state.folder_version()
        if current == state.folder_seen:
            return
        state.folder_seen = current
        try:
            loaded = await reload_index_folder(state)
        except Exception:  # noqa: BLE001 - logged and counted; keep watching
            return
        logger.info(
            "index folder changed: now serving catalog %s (%d tools)", loaded.catalog.fingerprint, len(loaded.catalog)
        )


CatalogChange = Callable[[Catalog], Catalog]


async def change_catalog(state: ServiceState, change: CatalogChange) -> dict[str, Any]:
    """Apply an admin change: build beside the serving router (re-embedding only what changed),
    save it to the index folder (other workers follow), then swap. Any failure: nothing changes.

    With an index folder, the read-change-save runs under the folder's lock, on the folder's
    latest version (another worker's edit may have landed since this one loaded it), so concurrent
    edits through several workers or hosts are applied one after the other and none is lost."""
    if state.live is not None:
        raise CatalogManagedElsewhere()
    with tracing.span("admin.edit"):
        summary = await _change_catalog(state, change)
        tracing.annotate({"catalog.fingerprint": summary["catalog_fingerprint"], "tools": summary["tools"],
                          "added": len(summary["added"]), "removed": len(summary["removed"]),
                          "changed": len(summary["changed"])})  # fmt: skip
        return summary


async def _change_catalog(state: ServiceState, change: CatalogChange) -> dict[str, Any]:
    async with state.edit_lock:
        if state.given_router is not None:  # in memory only: nothing to persist
            current = state.routers.get()
            updated = await anyio.to_thread.run_sync(current.rebuilt, change(current.catalog))
        else:
            current, updated = await anyio.to_thread.run_sync(edit_index_folder, state, change)
            if state.replicas is not None:
                state.replicas.announce("index", updated.catalog.fingerprint)
        publish(state, updated)
    return change_summary(current, updated)


def edit_index_folder(state: ServiceState, change: CatalogChange) -> tuple[Router, Router]:
    """Under the folder's lock (and the replicas' one): the latest saved router, and the changed
    one, saved."""
    with shared_lock(state, "index", "catalog edits") as still_held, folder_lock(state.settings.index_path):
        current = state.routers.get()
        saved = Manifest.read(state.settings.index_path)
        if saved is None or (saved.catalog_fingerprint, saved.model) != (
            current.catalog.fingerprint,
            current.embedder.name,
        ):
            current = load_index_folder(state, current.embedder)  # another edit or build landed meanwhile
        updated = current.rebuilt(change(current.catalog))
        updated.save(state.settings.index_path, before_publish=still_held)
        state.folder_seen = state.folder_version()
    return current, updated


def shared_lock(state: ServiceState, name: str, what: str) -> AbstractContextManager[Callable[[], None]]:
    """The replicas' lock on ``name`` for this index folder, giving the check to call before
    writing (``leases``); nothing to hold or check without a shared store."""
    if state.replicas is None:
        return nullcontext(nothing_to_check)
    return state.replicas.lock(shared_lock_name(name, state.settings.index_path), what)


def shared_lock_name(name: str, index_path: Path) -> str:
    """A name that stays the same for one index folder across saves: the folder's own path (its
    parent resolved), not the hidden build its link points to, which every save replaces."""
    folder = Path(index_path).absolute()
    return f"{name}:{folder.parent.resolve() / folder.name}"


def change_summary(before: Router, after: Router) -> dict[str, Any]:
    """What an edit did: the tools added, removed and changed, and what was embedded."""
    old, new = before.catalog, after.catalog
    names_before, names_after = set(old.names), set(new.names)
    stats = after.last_build
    return {
        "tools": len(new),
        "catalog_fingerprint": new.fingerprint,
        "added": sorted(names_after - names_before),
        "removed": sorted(names_before - names_after),
        "changed": sorted(n for n in names_before & names_after if old.get(n) != new.get(n)),
        "embedded": stats.embedded if stats else None,
        "reused": stats.reused if stats else None,
    }
