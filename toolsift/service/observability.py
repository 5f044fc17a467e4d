"""Prometheus metrics, structured (JSON) logs and the request-size limit of the HTTP service."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolsift import tracing

if TYPE_CHECKING:
    from toolsift.mcp.calls import CallRecord

logger = logging.getLogger("toolsift.access")
call_logger = logging.getLogger("toolsift.calls")
CALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0)
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and any ``extra=`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({key: value for key, value in record.__dict__.items() if key not in _STANDARD})
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def logging_config(level: str = "info", fmt: str = "json") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn and toolsift: JSON lines (or plain text) on stderr."""
    formatter = {"()": JsonFormatter} if fmt == "json" else {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    handler = {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"}
    loggers = {
        name: {"handlers": ["default"], "level": level.upper(), "propagate": False}
        for name in ("toolsift", "uvicorn", "uvicorn.error")
    }
    loggers["uvicorn.access"] = {
        "handlers": [],
        "level": "WARNING",
        "propagate": False,
    }  # toolsift.access logs requests
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"default": formatter},
        "handlers": {"default": handler},
        "loggers": loggers,
    }


class Metrics:
    """The service's metrics, in a registry of their own (several apps can live in one process)."""

    def __init__(self, snapshot: Callable[[], dict[str, float]]) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "toolsift_http_requests", "HTTP requests by route and status", ["route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "toolsift_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.route_latency = Histogram(
            "toolsift_route_seconds",
            "Time to route one query (embedding + ranking)",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.reloads = Counter("toolsift_reloads", "Catalog reloads by outcome", ["outcome"], registry=self.registry)
        self.feedback = Counter("toolsift_feedback", "Feedback requests accepted", registry=self.registry)
        self.shared_store_errors = Counter(
            "toolsift_shared_store_errors", "Requests the shared store (Redis) did not answer", registry=self.registry
        )
        self.tool_calls = Counter(
            "toolsift_tool_calls", "Tool calls forwarded by the gateway, by server and outcome", ["server", "outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.tool_call_latency = Histogram(
            "toolsift_tool_call_seconds", "Time of a forwarded tool call, by server", ["server"],
            buckets=CALL_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.shadow_routes = Counter(
            "toolsift_shadow_routes", "Requests the staged shadow model ranked too, by outcome", ["outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.registry.register(_SnapshotCollector(snapshot))

    def observe_call(self, record: CallRecord) -> None:
        """Count a forwarded call and write its log line (one JSON object with format json)."""
        self.tool_calls.labels(record.server, record.outcome).inc()
        self.tool_call_latency.labels(record.server).observe(record.seconds)
        fields = {
            "tool": record.tool, "server": record.server, "tenant": record.tenant, "outcome": record.outcome,
            "ms": round(record.seconds * 1000, 2), "result_bytes": record.result_bytes, "cut": record.cut,
        }  # fmt: skip
        if record.session_id is not None:
            fields["session_id"] = record.session_id
        if record.error is not None:
            fields["error"] = record.error
        call_logger.info("call %s on %s: %s", record.tool, record.server or "-", record.outcome, extra=fields)


class _SnapshotCollector(Collector):
    """Values read at scrape time from the live router and session store."""

    def __init__(self, snapshot: Callable[[], dict[str, float]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        values = self._snapshot()
        if "tools" in values:  # left out where the catalog's size is not public (tenants)
            yield GaugeMetricFamily("toolsift_catalog_tools", "Tools in the serving catalog", value=values["tools"])
        yield GaugeMetricFamily("toolsift_sessions", "Sticky sessions held in memory", value=values.get("sessions", 0))
        yield CounterMetricFamily(
            "toolsift_query_cache_hits",
            "Query embeddings served from the in-memory cache",
            value=values.get("query_cache_hits", 0),
        )
        yield CounterMetricFamily(
            "toolsift_query_cache_misses", "Query embeddings computed", value=values.get("query_cache_misses", 0)
        )


class ObservabilityMiddleware:
    """Counts, times and logs every request (one JSON line each); refuses bodies over ``max_body``
    bytes with a 413 before the app reads them."""

    def __init__(self, app: ASGIApp, metrics: Metrics, max_body: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_big = declared is not None and declared.isdigit() and int(declared) > self.max_body
        received = [0]

        async def limited_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_body:
                    raise _BodyTooLarge(self.max_body)
            return message

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if too_big:
                await _refuse(send, self.max_body)
                status[0] = 413
            elif tracing.enabled():
                await self._traced(scope, limited_receive, recording_send, status)
            else:
                await self.app(scope, limited_receive, recording_send)
        except _BodyTooLarge:
            await _refuse(send, self.max_body)
            status[0] = 413
        finally:
            elapsed = time.perf_counter() - started
            route = _route_label(scope)
            self.metrics.requests.labels(route, str(status[0])).inc()
            self.metrics.latency.labels(route).observe(elapsed)
            logger.info(
                "%s %s %d",
                scope.get("method", ""),
                scope.get("path", ""),
                status[0],
                extra={
                    "method": scope.get("method"),
                    "path": scope.get("path"),
                    "status": status[0],
                    "ms": round(elapsed * 1000, 2),
                    "client": (scope.get("client") or ("", 0))[0],
                },
            )

    async def _traced(self, scope: Scope, receive: Receive, send: Send, status: list[int]) -> None:
        """The request in a server span that continues the caller's ``traceparent``."""
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope.get("headers") or []}
        method = scope.get("method", "")
        attributes = {"http.request.method": method, "url.path": scope.get("path", "")}
        with tracing.continued(headers, method, attributes) as server_span:
            try:
                await self.app(scope, receive, send)
            finally:  # the route is known once the app has matched it
                route = _route_label(scope)
                server_span.update_name(f"{method} {route}")
                server_span.set_attributes({"http.route": route, "http.response.status_code": status[0]})


def too_large_message(limit: int) -> str:
    return f"the request body is over {limit} bytes; send less (one query, not a conversation)"


class _BodyTooLarge(HTTPException):
    """Raised while the body is read: an HTTPException, so the framework's body parsing passes it
    on (it turns other errors into a plain 400) and the error handlers answer 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large_message(limit))


async def _refuse(send: Send, limit: int) -> None:
    body = orjson.dumps({"error": {"type": "RequestTooLarge", "message": too_large_message(limit)}})
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _route_label(scope: Scope) -> str:
    """The route's path template (``/admin/tools/{name}``), so labels stay few; ``unmatched`` for
    a path the app does not serve. The docs routes set no ``route`` in the scope: matched here."""
    path = getattr(scope.get("route"), "path", None)
    if path:
        return str(path)
    app = scope.get("app")
    for route in getattr(app, "routes", ()):
        if isinstance(route, Route) and route.matches(scope)[0] == Match.FULL:
            return str(route.path)
    return "unmatched"
