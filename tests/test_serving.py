"""Production serving, end to end on loopback: several workers over one index folder, hot reload
under concurrent load with zero failed requests, Prometheus metrics, JSON logs, limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from toolsift import Catalog, Router, load_catalog
from toolsift.embeddings import HashingEmbedder
from toolsift.service import create_app
from toolsift.service.observability import JsonFormatter
from toolsift.settings import BUNDLED_CATALOG, Settings

from conftest import free_port, wait_until_serving


@pytest.mark.slow
def test_hot_reload_under_load_with_two_workers(tmp_path: Path) -> None:
    # the bundled catalog with the hashing embedder: what is proven (reloads under load, zero
    # failures, every worker converging) does not depend on the model, and workers start fast
    folder = tmp_path / "index"
    full = Router.build(load_catalog(BUNDLED_CATALOG), HashingEmbedder(64))
    small = Router.build(Catalog(list(full.catalog)[:60], source="small"), HashingEmbedder(64))
    full.save(folder)
    expected = {full.catalog.fingerprint, small.catalog.fingerprint}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_file = tmp_path / "serve.log"
    with open(log_file, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port), "--workers", "2"],
            env={
                **os.environ,
                "HF_HUB_OFFLINE": "1",
                "TOOLSIFT_ADMIN_TOKEN": "admin-secret-0123456789",
                "TOOLSIFT_RELOAD_INTERVAL": "0.5",
            },
            stderr=log,
            stdout=log,
        )
    try:
        wait_until_serving(url, process)
        outcomes: Counter[int] = Counter()
        seen: set[str] = set()
        stop = threading.Event()
        failures: list[str] = []

        def hammer(worker: int) -> None:
            queries = [
                "send an email to Bob",
                "weather in Lisbon tomorrow",
                "convert 100 dollars to euros",
                "open a ticket",
            ]
            with httpx.Client(base_url=url, timeout=30) as client:
                turn = 0
                while not stop.is_set():
                    try:
                        response = client.post("/route", json={"query": queries[(turn + worker) % 4], "k": 3})
                        outcomes[response.status_code] += 1
                        if response.status_code == 200:
                            seen.add(response.json()["catalog_fingerprint"])
                        else:
                            failures.append(response.text)
                    except httpx.HTTPError as error:
                        failures.append(repr(error))
                    turn += 1

        threads = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for swap in range(6):  # rebuild the folder under load, and ask for reloads too
            time.sleep(0.8)
            (small if swap % 2 == 0 else full).save(folder)
            httpx.post(url + "/admin/reload", headers={"Authorization": "Bearer admin-secret-0123456789"}, timeout=60)
        time.sleep(1.5)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        assert failures == [] and set(outcomes) == {200}, (outcomes, failures[:3])
        assert sum(outcomes.values()) > 50 and seen == expected  # both catalogs served, nothing else

        # the last save was the full catalog: every worker ends up on it
        deadline = time.monotonic() + 30
        while True:
            fingerprints = {
                httpx.post(url + "/route", json={"query": "weather", "k": 1}).json()["catalog_fingerprint"]
                for _ in range(12)
            }
            if fingerprints == {full.catalog.fingerprint}:
                break
            assert time.monotonic() < deadline, fingerprints
            time.sleep(0.5)

        metrics = httpx.get(url + "/metrics").text
        assert 'toolsift_http_requests_total{route="/route",status="200"}' in metrics
        assert "toolsift_route_seconds_bucket" in metrics and 'toolsift_reloads_total{outcome="ok"}' in metrics
    finally:
        process.terminate()
        process.wait(timeout=60)
    lines = [line for line in log_file.read_text().splitlines() if line.startswith("{")]
    access = [json.loads(line) for line in lines if '"toolsift.access"' in line]
    assert access and {"ts", "level", "msg", "path", "status", "ms"} <= set(access[0])
    assert any(entry["path"] == "/route" and entry["status"] == 200 for entry in access)


def test_request_limits_give_clear_4xx(tiny_router: Router) -> None:
    with TestClient(create_app(tiny_router, settings=Settings(max_request_bytes=2048))) as client:
        big = client.post(
            "/route", content=b'{"query": "' + b"x" * 5000 + b'"}', headers={"content-type": "application/json"}
        )
        assert big.status_code == 413 and "2048 bytes" in big.json()["error"]["message"]
        assert client.post("/route", json={"query": "x", "k": 257}).status_code == 422
        assert client.post("/route", json={"query": "x" * 1500}).status_code == 200
        missing = client.get("/nowhere")
        assert missing.status_code == 404 and "POST /route" in missing.json()["error"]["message"]
        wrong = client.get("/route")
        assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "MethodNotAllowed"
        metrics = client.get("/metrics").text
        assert 'toolsift_http_requests_total{route="unmatched",status="413"} 1.0' in metrics


def test_json_log_lines_carry_extra_fields() -> None:
    import logging

    record = logging.LogRecord("toolsift.access", logging.INFO, __file__, 1, "POST %s %d", ("/route", 200), None)
    record.status = 200
    record.ms = 12.5
    entry = json.loads(JsonFormatter().format(record))
    assert entry["msg"] == "POST /route 200" and entry["status"] == 200 and entry["ms"] == 12.5
    assert entry["level"] == "info" and entry["logger"] == "toolsift.access" and entry["ts"].endswith("+00:00")


def test_a_chunked_body_over_the_limit_is_a_413(tiny_router: Router) -> None:
    def chunks() -> Iterator[bytes]:  # no content-length: the limit is found while reading
        yield b'{"query": "'
        for _ in range(10):
            yield b"x" * 500
        yield b'"}'

    with TestClient(create_app(tiny_router, settings=Settings(max_request_bytes=2048))) as client:
        response = client.post("/route", content=chunks(), headers={"content-type": "application/json"})
        assert response.status_code == 413 and response.json()["error"]["type"] == "RequestTooLarge"
        assert "2048 bytes" in response.json()["error"]["message"]


def test_docs_routes_have_their_own_metric_labels(tiny_router: Router) -> None:
    with TestClient(create_app(tiny_router, settings=Settings())) as client:
        assert client.get("/docs").status_code == 200 and client.get("/openapi.json").status_code == 200
        metrics = client.get("/metrics").text
        assert 'route="/docs",status="200"' in metrics and 'route="/openapi.json",status="200"' in metrics
        assert 'route="unmatched",status="200"' not in metrics


@pytest.mark.slow
def test_a_request_uvicorn_cannot_read_gets_a_json_error(tmp_path: Path, tiny_router: Router) -> None:
    """A 1 MB header (or a garbled request line) is refused by the HTTP parser before the app runs:
    still JSON in the one error shape, never uvicorn's plain text."""
    folder = tiny_router.save(tmp_path / "index")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(folder), "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_serving(url, process)
        huge = httpx.get(url + "/healthz", headers={"X-Big": "a" * 1_000_000}, timeout=10)
        garbled = raw_exchange(port, b"NOT AN HTTP REQUEST\r\n\r\n")
        for status, content_type, body in ((huge.status_code, huge.headers["content-type"], huge.content), garbled):
            assert status == 400 and content_type == "application/json", (status, content_type, body)
            error = json.loads(body)["error"]
            assert error["type"] == "BadHTTPRequest" and "64 KiB" in error["message"]
        big_but_fine = {"X-Big": "a" * 40_000}  # over h11's default 16 KiB, within toolsift's 64 KiB
        assert httpx.get(url + "/healthz", headers=big_but_fine, timeout=10).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=60)


def raw_exchange(port: int, request: bytes) -> tuple[int, str, bytes]:
    """Send raw bytes; the response's status, content type and body (the server closes the connection)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers.get("content-type", ""), body
