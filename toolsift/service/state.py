"""What one service process holds: the live router, sessions, metrics and the catalog's source.

``create_app`` makes one ``ServiceState`` and puts it on ``app.state.service``; endpoints reach
it through ``toolsift.service.dependencies``. The router is swapped whole (``RouterHolder``), so
each request sees one consistent index even while a reload lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from cachetools import LRUCache

from toolsift import tracing
from toolsift.catalog import Catalog
from toolsift.catalog.queries import load_queries
from toolsift.curation import LintReport, lint_catalog
from toolsift.curation.lint import Finding, static_checks
from toolsift.curation.views import FindingsView
from toolsift.embeddings.batching import set_max_batch
from toolsift.embeddings.onnx_runtime import set_threads
from toolsift.errors import FeedbackRateLimited, FeedbackRefused, NotAGateway, NotReady, ToolCallRefused
from toolsift.extras import missing_extra
from toolsift.router import Caller, Delivered, RouteQuery, Router, Scope, SessionStore, TagRules, answer, tool_to_call
from toolsift.router.sessions import Sessions
from toolsift.router.threads import single_threaded_queries
from toolsift.router.usage import UsageBook
from toolsift.service.observability import Metrics
from toolsift.service.shadow import Shadow
from toolsift.service.usage_feed import UsageFeed
from toolsift.settings import Settings
from toolsift.tenants import Tenants, TenantSpec, key_from_headers

if TYPE_CHECKING:  # imported when used: a service without MCP sources or Redis never loads their clients
    from toolsift.mcp import LiveCatalog
    from toolsift.mcp.calls import CallOutcome, Forwarder, Progress
    from toolsift.mcp.relay import Relay
    from toolsift.service.replicas import Replicas

logger = logging.getLogger("toolsift.service")
CURATION_THREADS = 1
CURATION_NICENESS = 15
CATALOG_HISTORY = 8
"""Catalog versions a process remembers for ``GET /admin/changes`` (the catalogs only, not their
indexes: the older router is rebuilt from the serving one when asked, reusing its vectors)."""
T = TypeVar("T")


class RouterHolder:
    """The live router; swapped whole, so each request sees one consistent index. Every router
    it holds learns from ``book`` (the service's feedback)."""

    def __init__(self, router: Router | None = None, book: UsageBook | None = None) -> None:
        self.book = book or UsageBook()
        self.history: deque[tuple[str, str, Catalog]] = deque(maxlen=CATALOG_HISTORY)
        """The catalogs held, oldest first (fingerprint, when first held, catalog): what
        ``GET /admin/changes`` compares the serving one with."""
        self._router: Router | None = None
        self._lock = threading.Lock()
        if router is not None:
            self.set(router)

    def get(self) -> Router:
        router = self._router
        if router is None:
            raise NotReady()
        return router

    def peek(self) -> Router | None:
        """The live router, or None before one is loaded (for metrics, which must not fail)."""
        return self._router

    def set(self, router: Router) -> None:
        self._ready(router)
        with self._lock:
            self._router = router
            if not self.history or self.history[-1][0] != router.catalog.fingerprint:
                self.history.append(
                    (router.catalog.fingerprint, datetime.now(UTC).isoformat(timespec="seconds"), router.catalog)
                )

    def _ready(self, router: Router) -> None:
        """Before it serves: its example views and its confidence calibration are ready, so no
        request pays for them."""
        router.attach(self.book)
        router.ready()  # the shared pool's calibration recalibrated from its feedback


FolderVersion = tuple[str, float]


@dataclass
class ServiceState:
    """Everything an endpoint may need, in one place."""

    settings: Settings
    tenants: Tenants | None
    given_router: Router | None
    """A router built in-process and passed to ``create_app`` (tests, embedding); None when the
    service loads the index folder or a live catalog."""
    routers: RouterHolder
    sessions: Sessions
    usage: UsageFeed
    replicas: Replicas | None = None
    """The shared store (Redis) when ``TOOLSIFT_REDIS_URL`` is set: sessions, locks, announcements."""
    metrics: Metrics = field(init=False)
    live: LiveCatalog | None = None
    """The running ``LiveCatalog`` while the catalog comes from MCP servers, else None."""
    forwarder: Forwarder | None = None
    """Forwards tool calls to those servers (the gateway), while ``live`` runs."""
    relay: Relay | None = None
    """Lists and forwards those servers' resources and prompts (the gateway), while ``live`` runs."""
    folder_seen: FolderVersion = ("", 0.0)
    """The index folder version this process serves (for the watcher)."""
    edit_lock: anyio.Lock = field(default_factory=anyio.Lock)
    reload_lock: anyio.Lock = field(default_factory=anyio.Lock)
    """One check of the index folder at a time (the watcher's, or an announcement's)."""
    lint_reports: LRUCache[str, LintReport] = field(default_factory=lambda: LRUCache(1))
    """The lint report of the serving catalog, by catalog fingerprint (one kept)."""
    lint_asked: bool = False
    """Whether a curation view has asked for a lint report (from then on each is made ahead)."""
    deferred_payloads: LRUCache[tuple[str, str, str, TagRules, bool], tuple[str, bytes]] = field(
        default_factory=lambda: LRUCache(16)
    )
    """GET /deferred's ETag and body by (catalog fingerprint, tenant, format, rules)."""
    catalog_maps: LRUCache[tuple[str, str], dict[str, Any]] = field(default_factory=lambda: LRUCache(8))
    """GET /catalog/map's projection by (catalog fingerprint, tenant); feedback counts are added per request."""
    map_bodies: LRUCache[tuple[str, str], tuple[tuple[tuple[str, int], ...], bytes]] = field(
        default_factory=lambda: LRUCache(8)
    )
    """GET /catalog/map's body by (catalog fingerprint, tenant), with the feedback counts it shows."""
    findings_views: LRUCache[tuple[int, str], FindingsView] = field(default_factory=lambda: LRUCache(8))
    """The lint report's findings as each tenant may read them, by (report, tenant)."""
    curation_pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(CURATION_THREADS, "toolsift-curation", initializer=lower_priority)
    )
    """The threads curation views (lint, tool pages, the map) run on: never the route's, and at a
    lower CPU priority, so a long lint report leaves the cores to routing first."""
    operator_scopes: LRUCache[str, Scope] = field(default_factory=lambda: LRUCache(2))
    """What the operator's rules let through, by catalog fingerprint."""
    feedback_times: LRUCache[str, deque[float]] = field(default_factory=lambda: LRUCache(100_000))
    """When each contributor last sent feedback (the last minute's), for TOOLSIFT_FEEDBACK_RATE."""
    cache_lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards the caches above (requests run in worker threads)."""

    def __post_init__(self) -> None:
        self.metrics = Metrics(self.snapshot)
        self._lint_lock = threading.Lock()
        self._routing = 0
        """Routes being answered now (``answer``): curation work waits for them (``off_the_route_path``)."""
        self.shadow = Shadow(self.metrics.shadow_routes)
        """A staged tuned model ranking every request too, off the request's path (``service/shadow.py``)."""

    @classmethod
    def create(cls, router: Router | None, settings: Settings, tenants: Tenants | None) -> ServiceState:
        """The state of a serving process (HTTP or MCP); tunes the process for serving first, and
        turns tracing on when the ``OTEL_*`` variables ask for it."""
        tune_for_serving(settings)
        tracing.configure()
        sessions = SessionStore(settings.session_cap, settings.max_sessions, settings.session_ttl)
        usage = UsageFeed(router.usage if router is not None else None)  # what it learned in-process stays
        usage.book.limits = replace(usage.book.limits, quorum=settings.feedback_quorum)
        state = cls(settings, tenants, router, RouterHolder(router, usage.book), sessions, usage)
        if settings.redis_url:
            try:
                from toolsift.service.replicas import RedisSessionStore, Replicas
            except ImportError as error:
                raise missing_extra(error, "TOOLSIFT_REDIS_URL") or error from None

            state.replicas = Replicas(settings.redis_url, settings.redis_prefix, state.metrics.shared_store_errors.inc)
            state.sessions = RedisSessionStore(
                state.replicas, settings.session_cap, settings.max_sessions, settings.session_ttl
            )
        return state

    def snapshot(self) -> dict[str, float]:
        """Values read at each metrics scrape."""
        current = self.routers.peek()
        if current is None:
            return {"sessions": len(self.sessions)}
        return {
            # unauthenticated: with tenants, the catalog's size is not for everyone to read
            **({"tools": len(current.catalog)} if self.tenants is None else {}),
            "sessions": len(self.sessions),
            "query_cache_hits": current.query_cache.hits,
            "query_cache_misses": current.query_cache.misses,
        }

    def lint_report(self) -> LintReport:
        """The serving catalog's lint report, computed once per catalog (one kept)."""
        self.lint_asked = True
        current = self.routers.get()
        fingerprint = current.catalog.fingerprint
        with self._lint_lock:
            report = self.lint_reports.get(fingerprint)
            if report is None:
                static = static_checks_apart(current.catalog) if len(current.catalog) >= LINT_APART else None
                report = lint_catalog(current.catalog, current, self.labelled_queries(current), static=static)
                self.lint_reports[fingerprint] = report  # the previous catalog's goes
            return report

    def findings_view(self, tenant: TenantSpec | None) -> FindingsView:
        """The serving catalog's lint findings as ``tenant`` may read them (made once per report)."""
        report = self.lint_report()
        key = (id(report), tenant.name if tenant is not None else "")
        with self.cache_lock:
            view = self.findings_views.get(key)
        if view is None or view.report is not report:
            view = FindingsView(report, self.caller(tenant, self.routers.get()).scope)
            with self.cache_lock:
                self.findings_views[key] = view
        return view

    def labelled_queries(self, router: Router) -> list[tuple[str, tuple[str, ...]]]:
        """``TOOLSIFT_LINT_QUERIES``, for the lint report's per-tool accuracy (none when unset)."""
        if self.settings.lint_queries is None:
            return []
        return [(q.text, q.relevant) for q in load_queries(self.settings.lint_queries, router.catalog) if q.relevant]

    def prepare_lint_report(self) -> None:
        """Once a curation view has asked for a report, compute each newly published catalog's in
        the background, so the views need not wait again (a large catalog's checks take seconds).
        Until then nothing is computed: a server that only routes never loads the token counter
        (~40 MiB) nor spends those seconds on every publish."""
        if not self.lint_asked:
            return

        def compute() -> None:
            lower_priority()
            try:
                self.lint_report()
            except Exception:  # noqa: BLE001 - the page computes it again on demand and shows the error
                logger.warning("the lint report could not be computed", exc_info=True)

        threading.Thread(target=compute, name="toolsift-lint", daemon=True).start()

    async def off_the_route_path(self, work: Callable[[], T]) -> T:
        """Run curation work (a lint report of seconds on a large catalog, a map) on at most
        ``CURATION_THREADS`` threads of lower CPU priority: a crowd of curation requests waits for
        those, without holding the worker threads that routes run on."""
        return await asyncio.wrap_future(self.curation_pool.submit(self._after_routes, work))

    def _after_routes(self, work: Callable[[], T]) -> T:
        """``work``, once no route is being answered (or ``CURATION_YIELD_SECONDS`` have passed:
        a steady stream of routes delays curation, never starves it)."""
        deadline = time.monotonic() + CURATION_YIELD_SECONDS
        while self._routing and time.monotonic() < deadline:
            time.sleep(0.0005)
        return work()

    def tenant_from_headers(self, headers: Mapping[str, str] | None) -> TenantSpec | None:
        """The tenant whose key a request's headers carry (``X-API-Key`` or ``Authorization:
        Bearer``; ``TenantUnauthorized`` without a valid one); None without tenants or headers
        (stdio: the client launched toolsift itself)."""
        if self.tenants is None or headers is None:
            return None
        return self.tenants.identify(key_from_headers(headers))

    def caller(self, tenant: TenantSpec | None, router: Router) -> Caller:
        """Who is asking, for ``router``'s catalog: the tenant, or anyone without tenants; held to
        the operator's rules (``TOOLSIFT_TAGS``, ``_EXCLUDE_TAGS``, ``_ACCESS``) either way."""
        if self.tenants is None or tenant is None:
            caller = Caller.anyone(router.catalog)
        else:
            caller = self.tenants.caller(tenant, router)
        rules = self.settings.rules()
        return caller if rules.empty else caller.under(rules, self._operator_scope(router, rules))

    def _operator_scope(self, router: Router, rules: TagRules) -> Scope:
        fingerprint = router.catalog.fingerprint
        with self.cache_lock:
            found = self.operator_scopes.get(fingerprint)
        if found is None:
            found = router.scope_for(rules)
            with self.cache_lock:
                self.operator_scopes[fingerprint] = found
        return found

    def is_admin(self, key: str | None) -> bool:
        """Whether ``key`` is the admin token (constant time; False without one)."""
        return _matches(key, self.settings.admin_token)

    def feedback_contributor(self, tenant: TenantSpec | None, key: str | None, address: str) -> str:
        """Who sends a feedback request, from its credential — never from a self-declared id or
        header: ``tenant:<name>``, ``admin``, ``token:feedback``, or (``TOOLSIFT_FEEDBACK=open``)
        ``client:<address>``. ``FeedbackRefused`` says what credential it needs; past
        ``TOOLSIFT_FEEDBACK_RATE`` a minute, ``FeedbackRateLimited``."""
        settings = self.settings
        if settings.feedback == "off":
            raise FeedbackRefused("feedback is off on this service (TOOLSIFT_FEEDBACK=off)")
        if tenant is not None:
            contributor = f"tenant:{tenant.name}"  # its own pool: nobody else's routing
        elif _matches(key, settings.admin_token):
            contributor = "admin"
        elif _matches(key, settings.feedback_token):
            contributor = "token:feedback"
        elif settings.feedback == "open":
            contributor = f"client:{address}"
        elif settings.admin_token or settings.feedback_token:
            raise FeedbackRefused("feedback needs a credential: send 'Authorization: Bearer <TOOLSIFT_FEEDBACK_TOKEN>'")
        else:
            raise FeedbackRefused(
                "feedback is off on a service without credentials (anyone could steer routing): set "
                "TOOLSIFT_FEEDBACK_TOKEN and send it as 'Authorization: Bearer <token>', or TOOLSIFT_FEEDBACK=open on "
                "a trusted network"
            )
        self._rate_check(contributor)
        return contributor

    def _rate_check(self, contributor: str) -> None:
        now = time.monotonic()
        with self.cache_lock:
            recent = self.feedback_times.get(contributor)
            if recent is None:
                recent = self.feedback_times[contributor] = deque()
            while recent and now - recent[0] > 60:
                recent.popleft()
            if len(recent) >= self.settings.feedback_rate:
                raise FeedbackRateLimited(self.settings.feedback_rate)
            recent.append(now)

    def answer(self, router: Router, query: RouteQuery, caller: Caller) -> Delivered:
        """The routed answer every entrance gives (``toolsift.router.door.answer``), after the
        feedback other workers took since this one last looked; the route is timed in the metrics."""
        self.usage.refresh()
        if query.min_confidence is None and self.settings.min_confidence is not None:
            query = replace(query, min_confidence=self.settings.min_confidence)  # the operator's setting
        with self.cache_lock:
            self._routing += 1
        try:
            delivered = answer(router, query, caller, self.sessions)
        finally:
            with self.cache_lock:
                self._routing -= 1
        self.metrics.route_latency.observe(delivered.result.took_ms / 1000)
        self.shadow.observe(query, caller, delivered)
        return delivered

    async def call(
        self,
        router: Router,
        caller: Caller,
        name: str,
        arguments: Any,
        *,
        session_id: str | None = None,
        progress: Progress | None = None,
    ) -> CallOutcome:
        """The tool call every entrance forwards (the MCP gateway's ``call_tool`` and found tools,
        ``POST /call``): only a tool ``caller`` may call (``tool_to_call``: the scope its searches
        rank within), its arguments checked, the answer of the server that owns it. A call that
        fails comes back as an MCP tool error saying why; the server sees nothing of a refused call."""
        if self.forwarder is None:
            raise NotAGateway()
        with tracing.span("call", {"tool": name, "tenant": caller.pool or None, "session": session_id is not None}):
            outcome = await self._call(router, caller, name, arguments, session_id, progress)
            tracing.annotate({"outcome": outcome.outcome, "error": outcome.result.is_error})
            return outcome

    async def _call(
        self,
        router: Router,
        caller: Caller,
        name: str,
        arguments: Any,
        session_id: str | None,
        progress: Progress | None,
    ) -> CallOutcome:
        assert self.forwarder is not None
        try:
            tool = tool_to_call(router, name, caller)
        except ToolCallRefused as refused:
            error = self._held_refusal(name, caller) or refused
            owner = self.live.owner(router.catalog.resolve(name)) if self.live is not None else None
            return self.forwarder.refuse(name, owner or "", error, caller.pool, session_id)  # logs are the operator's
        tracing.annotate({"server": tool.source})
        return await self.forwarder.call(tool, arguments, tenant=caller.pool, session_id=session_id, progress=progress)

    def _held_refusal(self, name: str, caller: Caller) -> ToolCallRefused | None:
        """For a tool waiting for approval as new, a refusal that says so (to a caller no key
        limits: a tenant learns nothing of tools it may not see)."""
        held = self.live.held(name) if self.live is not None and caller.reach is None else None
        if held is None:
            return None
        return ToolCallRefused(
            name, (), f"it is new on server '{held.server}' since that server's tools were approved, and waits for "
            f"an operator's approval (toolsift approve --mcp-servers FILE --tool {name}, or POST /admin/approve)",
        )  # fmt: skip

    def servers_for(self, caller: Caller) -> list[str]:
        """The MCP servers whose resources and prompts ``caller`` may see: those serving at
        least one tool of its scope (its key's tools under the operator's rules)."""
        return self.live.servers_reached(caller.scope) if self.live is not None else []

    def live_status(self) -> dict[str, Any] | None:
        """The live catalog's servers with their tool calls (``/admin/status``); None without one."""
        if self.live is None:
            return None
        status = self.live.status()
        if self.forwarder is not None:
            for name, calls in self.forwarder.status().items():
                status["servers"][name]["calls"] = calls
        return status

    def folder_version(self) -> FolderVersion:
        """Identifies the index folder's current build (the watcher compares it)."""
        path = self.settings.index_path
        manifest = path / "manifest.json"
        return os.path.realpath(path), manifest.stat().st_mtime if manifest.exists() else 0.0


CURATION_YIELD_SECONDS = 0.05
"""The longest a curation view waits for the routes being answered before it runs anyway."""
SWITCH_INTERVAL = 0.001
"""Seconds a thread holding the interpreter lock keeps it while another waits (Python's default:
0.005): a route waiting behind curation work (tool pages) gets it back sooner."""
LINT_APART = 2_000
"""Catalogs this large have their static lint checks computed in another process: seconds of pure
Python would otherwise hold the interpreter lock the routes need (their p95 went ~10x)."""


def static_checks_apart(catalog: Catalog) -> tuple[list[Finding], dict[str, int]]:
    """``static_checks`` in a child process (spawned: no lock of this threaded server is copied)."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(static_checks, catalog).result()


def lower_priority() -> None:
    """Lower the calling thread's CPU priority (Linux schedules threads on their own; elsewhere
    nothing changes)."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), CURATION_NICENESS)


def _matches(key: str | None, secret: str | None) -> bool:
    """``key`` is ``secret``, in constant time (compared as bytes: a header may hold any byte, and
    compare_digest refuses non-ASCII str)."""
    if not key or not secret:
        return False
    return hmac.compare_digest(key.encode("utf-8", "surrogateescape"), secret.encode())


def tune_for_serving(settings: Settings) -> None:
    """How a serving process runs each request's work, set before its router is loaded: per-query
    linear algebra on one thread (``single_threaded_queries``), ONNX Runtime with
    ``TOOLSIFT_EMBEDDING_THREADS`` threads that sleep between runs, and micro-batches of at most
    ``TOOLSIFT_QUERY_BATCH`` queries."""
    single_threaded_queries()
    set_threads(settings.embedding_threads, spinning=False)
    set_max_batch(settings.query_batch)
    sys.setswitchinterval(SWITCH_INTERVAL)
