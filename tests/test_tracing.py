"""OpenTelemetry spans, read back with the SDK's in-memory exporter: their names, parents (a
caller's W3C ``traceparent`` included) and attributes; and tracing off creates no span at all."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from toolsift import Router, tracing
from toolsift.mcp import LiveCatalog
from toolsift.mcp.calls import Forwarder
from toolsift.service import create_app
from toolsift.service.state import ServiceState
from toolsift.settings import Settings
from toolsift.tenants import parse_tenants

ADMIN = "admin-token-0123456789"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)


def by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_tracing_is_off_unless_the_otel_variables_ask() -> None:
    assert not tracing.wanted({})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert tracing.wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing.wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert not tracing.wanted({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing.configure({}) and not tracing.enabled()


def test_a_route_continues_the_callers_trace_with_embed_rank_and_deliver_under_it(
    spans: InMemorySpanExporter, tiny_router: Router
) -> None:
    with TestClient(create_app(tiny_router)) as client:
        body = {"query": "will it rain in Paris tomorrow", "k": 3, "format": "anthropic"}
        answer = client.post("/route", json=body, headers={"traceparent": TRACEPARENT}).json()
    found = by_name(spans)
    server, route = found["POST /route"], found["toolsift.route"]
    assert server.kind == SpanKind.SERVER and server.context.trace_id == int(TRACE_ID, 16)
    assert server.parent is not None and server.parent.span_id == 0x00F067AA0BA902B7 and server.parent.is_remote
    assert server.attributes["http.response.status_code"] == 200  # type: ignore[index]
    assert route.parent.span_id == server.context.span_id  # type: ignore[union-attr]
    for child in ("toolsift.embed", "toolsift.rank", "toolsift.deliver"):
        assert found[child].parent.span_id == route.context.span_id, child  # type: ignore[union-attr]
        assert found[child].context.trace_id == int(TRACE_ID, 16)
    attributes = dict(route.attributes or {})
    assert attributes["toolsift.k"] == 3 and attributes["toolsift.format"] == "anthropic"
    assert attributes["toolsift.catalog.fingerprint"] == answer["catalog_fingerprint"]
    assert attributes["toolsift.abstained"] is False and attributes["toolsift.top.name"] == answer["matches"][0]["name"]
    assert attributes["toolsift.top.score"] == pytest.approx(answer["matches"][0]["score"])
    every_value = [str(v) for span in spans.get_finished_spans() for v in (span.attributes or {}).values()]
    assert not any("rain in Paris" in value for value in every_value)  # the user's words stay out of traces


def test_an_abstaining_route_says_so_and_a_tenant_is_named(spans: InMemorySpanExporter, tiny_router: Router) -> None:
    tenants = parse_tenants({"tenants": {"wx": {"key": "wx-key-0123456789abcdef", "tags": ["weather"]}}})
    with TestClient(create_app(tiny_router, tenants=tenants)) as client:
        body = {"query": "zzz qqq", "min_confidence": 1.0}
        client.post("/route", json=body, headers={"X-API-Key": "wx-key-0123456789abcdef"})
    route = dict(by_name(spans)["toolsift.route"].attributes or {})
    assert route["toolsift.abstained"] is True and route["toolsift.tenant"] == "wx" and route["toolsift.reason"]


def test_admin_edits_reloads_and_feedback_have_their_spans(
    spans: InMemorySpanExporter, tiny_router: Router, tmp_path: Path
) -> None:
    folder = tiny_router.save(tmp_path / "index")
    settings = Settings(index_path=folder, admin_token=ADMIN, feedback="open")
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with TestClient(create_app(settings=settings)) as client:
        added = {"name": "send_fax", "description": "Send a fax to a phone number."}
        assert client.post("/admin/tools", json={"tools": [added]}, headers=headers).status_code == 200
        assert client.post("/admin/reload", headers=headers).status_code == 200
        sent = client.post("/feedback", json={"query": "fax the contract", "tool": "send_fax"}, headers=headers)
        assert sent.status_code == 200, sent.text
        fingerprint = client.get("/tools").json()["catalog_fingerprint"]
    found = by_name(spans)
    edit = dict(found["toolsift.admin.edit"].attributes or {})
    assert edit["toolsift.added"] == 1 and edit["toolsift.catalog.fingerprint"] == fingerprint
    assert found["toolsift.admin.edit"].parent.span_id == found["POST /admin/tools"].context.span_id  # type: ignore[union-attr]
    assert dict(found["toolsift.reload"].attributes or {})["toolsift.catalog.fingerprint"] == fingerprint
    assert dict(found["toolsift.feedback"].attributes or {})["toolsift.tool"] == "send_fax"


def test_a_forwarded_call_has_its_span_with_the_outcome(spans: InMemorySpanExporter, tiny_router: Router) -> None:
    state = ServiceState.create(tiny_router, Settings(), None)
    state.forwarder = Forwarder(LiveCatalog([], build=lambda c, p: None, publish=lambda r: None))  # type: ignore[arg-type, return-value]
    caller = state.caller(None, tiny_router)
    outcome = anyio.run(lambda: state.call(tiny_router, caller, "get_weather", {"city": "Lisbon"}))
    refused = anyio.run(lambda: state.call(tiny_router, caller, "no_such_tool", {}))
    calls = [span for span in spans.get_finished_spans() if span.name == "toolsift.call"]
    assert [dict(span.attributes or {})["toolsift.tool"] for span in calls] == ["get_weather", "no_such_tool"]
    assert [dict(span.attributes or {})["toolsift.outcome"] for span in calls] == [outcome.outcome, refused.outcome]
    assert refused.outcome == "refused" and all(dict(span.attributes or {})["toolsift.error"] for span in calls)


OFF_SCRIPT = """
import sys
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolsift import Router, tracing
from toolsift.catalog import parse_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.service import create_app
from toolsift.settings import Settings

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # an SDK is there: only toolsift's own choice keeps it from tracing
created = []
original = provider.get_tracer
provider.get_tracer = lambda name, *a, **k: created.append(name) or original(name, *a, **k)
router = Router.build(parse_catalog([{"name": "get_weather", "description": "Weather for a city."}]), HashingEmbedder(64))
with TestClient(create_app(router, settings=Settings(admin_token="admin-token-0123456789", feedback="open"))) as c:
    for _ in range(20):
        assert c.post("/route", json={"query": "weather in Oslo", "k": 1}).status_code == 200
    headers = {"Authorization": "Bearer admin-token-0123456789"}
    assert c.post("/admin/tools", json={"tools": [{"name": "b", "description": "B."}]}, headers=headers).status_code == 200
    assert c.post("/feedback", json={"query": "weather", "tool": "get_weather"}, headers=headers).status_code == 200
ours = [span for span in exporter.get_finished_spans() if span.instrumentation_scope.name == "toolsift"]
others = [span for span in exporter.get_finished_spans() if span.instrumentation_scope.name != "toolsift"]
print(len(ours), created.count("toolsift"), tracing.enabled(), bool(others))
"""


def test_tracing_off_creates_no_span(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", OFF_SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # FastAPI's own spans reach the SDK (the exporter works); toolsift made no span, nor asked for a tracer
    assert done.stdout.split() == ["0", "0", "False", "True"]


def test_console_tracing_from_the_environment_prints_spans(tmp_path: Path) -> None:
    script = (
        "from toolsift import tracing\nassert tracing.configure()\nwith tracing.span('route', {'k': 3}):\n    pass\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "ts"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert '"name": "toolsift.route"' in done.stdout and '"toolsift.k": 3' in done.stdout
    assert '"service.name": "ts"' in done.stdout
