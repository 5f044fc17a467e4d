"""``toolsift perf --curation``: does curation stall routing?

A real ``toolsift serve`` over a synthetic catalog (20,000 tools by default) answers one client's
``/route`` requests (fresh queries, one at a time) twice: idle, then while ``clients`` other
clients ask for curation views without pause — a tool's page (``/tools/<name>``), a page of
findings (``/lint``), the map (``/catalog/map``) — starting cold, so the lint report of the whole
catalog is computed during the measurement. The figure: the route p95 under curation over idle.
All on loopback, bounded in count and time.
"""

from __future__ import annotations

import http.client
import random
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from toolsift.bench.performance import percentiles, serving

CURATION_TIMEOUT = 120.0


def run_curation_load(
    size: int, requests: int, clients: int, model: str, echo: Callable[[str], None]
) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import embedder_for
    from toolsift.router import Router

    catalog = synthetic_catalog(size)
    echo(f"building an index of {size:,} synthetic tools")
    router = Router.build(catalog, embedder_for(model, catalog))
    queries = synthetic_queries(3 * requests + 20, seed=7)
    with tempfile.TemporaryDirectory(prefix="toolsift-curation-") as folder:
        index = router.save(Path(folder) / "index")
        with serving(index) as (url, _pid):
            _routes(url, queries[:20])  # warm up
            echo(f"idle: {requests} routes")
            idle = _routes(url, queries[20 : 20 + requests])
            echo(f"under curation: {requests} routes while {clients} clients ask for curation views")
            stop = threading.Event()
            served = [0] * clients
            workers = [
                threading.Thread(target=_curate, args=(url, catalog.names, stop, served, seed), daemon=True)
                for seed in range(clients)
            ]
            for worker in workers:
                worker.start()
            try:
                busy = _routes(url, queries[20 + requests : 20 + 2 * requests])  # cold: the lint report computing
                cold_served = sum(served)
                deadline = time.monotonic() + CURATION_TIMEOUT
                while sum(served) < cold_served + 5 * clients and time.monotonic() < deadline:
                    time.sleep(0.2)  # the report is ready: curation requests are answered now
                echo(f"under curation, warm: {requests} routes while curation requests are answered")
                warm_started = sum(served)
                warm = _routes(url, queries[20 + 2 * requests :])
                warm_served = sum(served) - warm_started
            finally:
                stop.set()
                for worker in workers:
                    worker.join(timeout=CURATION_TIMEOUT)
            answered = sum(served)
    return {
        "schema": "toolsift-curation-load/1",
        "tools": size,
        "model": router.embedder.name,
        "requests": requests,
        "clients": clients,
        "idle_ms": idle,
        "under_curation_ms": busy,
        "curation_requests": cold_served,
        "under_warm_curation_ms": warm,
        "warm_curation_requests": warm_served,
        "curation_answered": answered,
        "p95_ratio": round(busy["p95"] / idle["p95"], 2),
        "warm_p95_ratio": round(warm["p95"] / idle["p95"], 2),
    }


def _connection(url: str) -> http.client.HTTPConnection:
    address = urlsplit(url)
    return http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port or 80, timeout=CURATION_TIMEOUT)


def _routes(url: str, queries: Sequence[str]) -> dict[str, float]:
    connection = _connection(url)
    latencies = []
    try:
        for query in queries:
            started = time.perf_counter()
            body = orjson.dumps({"query": query, "k": 5})
            connection.request("POST", "/route", body, {"content-type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"/route answered {response.status}")
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        connection.close()
    return percentiles(latencies)


def _curate(url: str, names: Sequence[str], stop: threading.Event, served: list[int], seed: int) -> None:
    """One curation client: tool pages mostly, findings and the map now and then, until ``stop``;
    ``served[seed]`` counts its answers."""
    rng = random.Random(seed)
    connection = _connection(url)
    try:
        while not stop.is_set():
            roll = rng.random()
            if roll < 0.8:
                path = "/tools/" + quote(rng.choice(names), safe="")
            elif roll < 0.95:
                path = f"/lint?offset={rng.randrange(0, 500)}&limit=50"
            else:
                path = "/catalog/map"
            connection.request("GET", path)
            connection.getresponse().read()
            served[seed] += 1
    except (OSError, http.client.HTTPException):
        pass  # the server stopped at the end of the run
    finally:
        connection.close()


def curation_table(document: dict[str, Any]) -> str:
    idle, busy, warm = document["idle_ms"], document["under_curation_ms"], document["under_warm_curation_ms"]
    return "\n".join(
        [
            f"{document['tools']:,} tools, {document['requests']} routes per row, {document['clients']} curation clients:",
            "",
            "| routing | curation requests answered meanwhile | p50 ms | p95 ms | p95 / idle |",
            "| --- | ---: | ---: | ---: | ---: |",
            f"| idle | – | {idle['p50']} | {idle['p95']} | 1 |",
            f"| under curation, cold (the lint report computing) | {document['curation_requests']} | {busy['p50']} "
            f"| {busy['p95']} | **{document['p95_ratio']}×** |",
            f"| under curation, warm (pages answered) | {document['warm_curation_requests']} | {warm['p50']} "
            f"| {warm['p95']} | **{document['warm_p95_ratio']}×** |",
            "",
            "Aim: within 2× idle.",
            "",
        ]
    )
