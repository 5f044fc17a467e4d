from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from toolsift import Router
from toolsift.service import create_app
from toolsift.settings import Settings


@pytest.fixture
def client(tiny_router: Router) -> Iterator[TestClient]:
    with TestClient(create_app(tiny_router)) as test_client:
        yield test_client


def test_route_returns_tools_matches_and_fingerprint(client: TestClient) -> None:
    response = client.post("/route", json={"query": "send an email", "k": 2})
    assert response.status_code == 200
    body = response.json()
    assert len(body["tools"]) == len(body["matches"]) == 2
    assert [t["name"] for t in body["tools"]] == sorted(m["name"] for m in body["matches"])
    assert body["matches"][0]["rank"] == 1 and body["matches"][0]["score"] >= body["matches"][1]["score"]
    assert body["fingerprint"].startswith("sha256:") and body["eligible"] == 8 and body["format"] == "toolsift"


def test_route_tag_rules_and_formats(client: TestClient) -> None:
    body = client.post(
        "/route",
        json={
            "query": "remove it",
            "k": 3,
            "tags": {"any": ["files", "calendar"], "exclude": ["read"]},
            "format": "openai",
        },
    ).json()
    assert {t["function"]["name"] for t in body["tools"]} == {"delete_file", "create_event"}
    assert all(t["type"] == "function" for t in body["tools"])
    plain_list = client.post("/route", json={"query": "x", "tags": ["weather"], "format": "anthropic"}).json()
    assert {t["name"] for t in plain_list["tools"]} == {"get_weather", "get_forecast"}
    assert all("input_schema" in t for t in plain_list["tools"])
    mcp = client.post("/route", json={"query": "delete", "k": 1, "tags": ["admin"], "format": "mcp"}).json()
    assert mcp["tools"][0]["annotations"] == {"destructiveHint": True}


def test_same_request_gives_identical_bytes(client: TestClient) -> None:
    first = client.post("/route", json={"query": "weather tomorrow", "k": 3})
    second = client.post("/route", json={"query": "weather tomorrow", "k": 3})
    assert first.content == second.content  # the timing lives in headers, not in the body
    assert float(first.headers["x-toolsift-took-ms"]) >= 0
    assert first.headers["server-timing"].startswith("route;dur=")


@pytest.mark.parametrize(
    ("payload", "status", "fragment"),
    [
        ({"query": ""}, 422, "query"),
        ({"query": "x" * 9000}, 422, "query"),
        ({"query": "ok", "k": 0}, 422, "k"),
        ({"query": "ok", "k": 100000}, 422, "k"),
        ({"query": "ok", "format": "xml"}, 422, "format"),
        ({"query": "ok", "surprise": 1}, 422, "surprise"),
        ({"k": 3}, 422, "query"),
        ({"query": "ok", "tags": ["wether"]}, 400, "Did you mean 'weather'"),
        ({"query": "   "}, 422, "query: has no text"),
        ({"query": "\u0000\u0000"}, 422, "query: has no text"),
        ({"query": "ok", "k": "3"}, 422, "k: Input should be a valid integer"),
        ({"query": "ok", "k": True}, 422, "k: Input should be a valid integer"),
        ({"query": "ok", "k": 3.0}, 422, "k: Input should be a valid integer"),
        ({"query": "ok", "split_intents": "yes"}, 422, "split_intents: Input should be a valid boolean"),
        ({"query": "ok", "pinned": "send_email"}, 422, "pinned: Input should be a valid list"),
    ],
)
def test_bad_requests_get_clear_4xx(client: TestClient, payload: dict[str, object], status: int, fragment: str) -> None:
    response = client.post("/route", json=payload)
    assert response.status_code == status
    assert fragment in response.json()["error"]["message"]


def test_malformed_json_is_a_422(client: TestClient) -> None:
    response = client.post("/route", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["error"]["type"] == "InvalidRequest"
    assert response.json()["error"]["problems"] == [
        {"field": "body", "message": "invalid JSON at character 1 (Expecting property name enclosed in double quotes)"}
    ]
    listed = client.post("/route", content=b"[1, 2]", headers={"content-type": "application/json"})
    assert listed.status_code == 422 and "body: must be a JSON object" in listed.json()["error"]["message"]


def test_a_nan_min_score_says_it_must_be_finite(client: TestClient) -> None:
    body = b'{"query": "ok", "min_score": NaN}'
    response = client.post("/route", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and "min_score: Input should be a finite number" in response.text


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_json_is_a_415(client: TestClient, content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = client.post("/route", content=b'{"query": "ok"}', headers=headers)
    assert response.status_code == 415 and response.json()["error"]["type"] == "UnsupportedMediaType"
    assert "Content-Type: application/json" in response.json()["error"]["message"]


def test_tools_listing_filters_and_pages(client: TestClient) -> None:
    everything = client.get("/tools").json()
    assert everything["total"] == 8 and everything["tags"]["read"] == 4
    weather = client.get("/tools", params={"tag": "weather", "format": "mcp"}).json()
    assert [t["name"] for t in weather["tools"]] == ["get_forecast", "get_weather"]
    assert "inputSchema" in weather["tools"][0]
    page = client.get("/tools", params={"offset": 2, "limit": 2}).json()
    assert [t["name"] for t in page["tools"]] == sorted(t["name"] for t in everything["tools"])[2:4]
    assert client.get("/tools", params={"tag": "nope"}).status_code == 400


def test_healthz_and_openapi(client: TestClient) -> None:
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["tools"] == 8 and health["model"] == "hashing-64"
    spec = client.get("/openapi.json").json()
    assert {"/route", "/tools", "/healthz"} <= set(spec["paths"])
    assert client.get("/docs").status_code == 200


@pytest.mark.model
def test_service_loads_a_saved_index_at_startup(bundled_index: Path) -> None:
    settings = Settings.from_env({}, index_path=bundled_index)
    with TestClient(create_app(settings=settings)) as client:
        assert client.get("/healthz").json()["model"] == "all-MiniLM-L6-v2"
        body = client.post("/route", json={"query": "Will it rain in Seattle this weekend?", "k": 3}).json()
        assert body["matches"][0]["name"] == "get_weather_forecast"
        assert body["eligible"] >= 200


def test_service_refuses_to_start_without_an_index(tmp_path: Path) -> None:
    from toolsift.errors import IndexNotFound

    settings = Settings.from_env({}, index_path=tmp_path / "none")
    with pytest.raises(IndexNotFound, match="toolsift build"), TestClient(create_app(settings=settings)):
        pass


def test_the_service_does_its_per_query_linear_algebra_on_one_thread(tiny_router: Router) -> None:
    """BLAS threads only oversubscribe the cores for products this small (toolsift.router.threads)."""
    from threadpoolctl import threadpool_info

    create_app(tiny_router)
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


def test_routes_from_worker_threads_search_on_one_thread_too(tiny_router: Router) -> None:
    """FAISS's OpenMP limit is per thread; requests run in worker threads, which must search on
    one thread as well (on 10,000 tools, worker-thread routes took 11.5 ms instead of 7.8)."""
    import faiss

    create_app(tiny_router)

    def search_threads() -> int:
        tiny_router.route("send an email", 3)
        return int(faiss.omp_get_max_threads())

    with ThreadPoolExecutor(1) as pool:  # a new thread: it starts from OpenMP's process default
        assert pool.submit(search_threads).result() == 1


def test_curation_requests_never_take_the_threads_routes_run_on(tiny_router: Router) -> None:
    """60 tool pages waiting for a slow lint report (seconds on a large catalog) once held every
    worker thread, and a route waited for them all; now curation runs on two threads of its own."""
    import threading
    import time

    app = create_app(tiny_router)
    release = threading.Event()
    with TestClient(app) as client, ThreadPoolExecutor(64) as pool:
        state = app.state.service
        computed = state.lint_report

        def slow_report() -> Any:
            release.wait(60)
            return computed()

        state.lint_report = slow_report
        try:
            pages = [pool.submit(client.get, "/tools/send_email") for _ in range(60)]
            time.sleep(0.5)  # every page request is in, waiting for the report
            started = time.monotonic()
            routed = pool.submit(client.post, "/route", json={"query": "weather", "k": 1}).result(timeout=30)
            waited = time.monotonic() - started
            assert routed.status_code == 200 and not release.is_set() and not any(p.done() for p in pages)
        finally:
            release.set()
        assert all(page.result(timeout=60).status_code == 200 for page in pages)
    assert waited < 10, waited
