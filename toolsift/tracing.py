"""OpenTelemetry traces: off unless the standard ``OTEL_*`` variables ask for them, and free when off.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 toolsift serve      # OTLP over HTTP
    OTEL_TRACES_EXPORTER=console toolsift serve                           # spans on stderr

``configure`` (called when a service starts) turns tracing on when ``OTEL_TRACES_EXPORTER`` names
an exporter (``otlp``, ``console``) or an OTLP endpoint is set, unless ``OTEL_SDK_DISABLED`` is
true; the SDK reads the rest (``OTEL_SERVICE_NAME``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_RESOURCE_ATTRIBUTES``, sampling ...) itself. It needs the ``tracing`` extra
(``pip install 'toolsift[tracing]'``); without it, a warning says so and toolsift runs untraced.
A program that set up OpenTelemetry itself hands toolsift its provider with ``use``.

When tracing is off, ``span`` returns one shared no-op context and creates nothing: not a span,
not a context, not an attribute dict. Spans are named ``toolsift.<what>``: ``route`` (with
``embed``, ``rank``, ``deliver`` under it), ``admin.edit``, ``reload``, ``feedback``, ``call``; an
HTTP request's span continues the trace of its W3C ``traceparent`` header.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

logger = logging.getLogger("toolsift.tracing")
INSTRUMENTATION = "toolsift"
_OFF: AbstractContextManager[None] = contextlib.nullcontext()
_tracer: Tracer | None = None

AttributeValue = str | bool | int | float


def enabled() -> bool:
    return _tracer is not None


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure(environ: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on when the environment asks for it (see the module's doc); True when on."""
    if _tracer is not None or not wanted(environ):
        return _tracer is not None
    env = os.environ if environ is None else environ
    try:
        provider = _provider_from(env)
    except ImportError as missing:
        logger.warning(
            "OTEL_* variables ask for traces, but %s is not installed: pip install 'toolsift[tracing]'. "
            "Running without traces",
            missing.name,
        )
        return False
    use(provider)
    logger.info("tracing on: %s", env.get("OTEL_TRACES_EXPORTER") or "otlp")
    return True


def _provider_from(env: Mapping[str, str]) -> TracerProvider:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME") or "toolsift"})
    provider = SdkTracerProvider(resource=resource)
    for name in (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(","):
        exporter: SpanExporter
        if name.strip().lower() == "console":
            exporter = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()  # endpoint, headers, timeout: the OTEL_EXPORTER_OTLP_* variables
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def use(provider: TracerProvider | None) -> None:
    """Trace to ``provider`` (one the host program set up; None: tracing off)."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer(INSTRUMENTATION)


def span(name: str, attributes: Mapping[str, AttributeValue | None] | None = None) -> AbstractContextManager[Any]:
    """A span named ``toolsift.<name>``, current while the block runs (errors recorded on it);
    with tracing off, a shared no-op context."""
    if _tracer is None:
        return _OFF
    return _tracer.start_as_current_span(f"{INSTRUMENTATION}.{name}", attributes=_clean(attributes))


def annotate(attributes: Mapping[str, AttributeValue | None]) -> None:
    """Add ``attributes`` to the current span (nothing when tracing is off)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(_clean(attributes))


@contextlib.contextmanager
def continued(headers: Mapping[str, str], name: str, attributes: Mapping[str, AttributeValue | None]) -> Iterator[Span]:
    """A server span named ``name`` (``POST /route``) continuing the caller's trace (its W3C
    ``traceparent`` / ``tracestate`` headers); only called when tracing is on."""
    from opentelemetry import context, propagate, trace

    assert _tracer is not None
    token = context.attach(propagate.extract(headers))
    try:
        kind = trace.SpanKind.SERVER
        with _tracer.start_as_current_span(name, kind=kind, attributes=_clean(attributes)) as server_span:
            yield server_span
    finally:
        context.detach(token)


_CONVENTIONS = ("http.", "url.")
"""Attribute namespaces of OpenTelemetry's semantic conventions, kept as they are."""


def _clean(attributes: Mapping[str, AttributeValue | None] | None) -> dict[str, AttributeValue]:
    """The set attributes, toolsift's own under ``toolsift.`` (``toolsift.catalog.fingerprint``)."""
    return {
        key if key.startswith(_CONVENTIONS) else f"toolsift.{key}": value
        for key, value in (attributes or {}).items()
        if value is not None
    }
