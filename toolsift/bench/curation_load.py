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
    queries = synthetic_queries(2 * requests + 20, seed=7)
    with tempfile.TemporaryDirectory(prefix="toolsift-curation-") as folder:
        index = router.save(Path(folder) / "index")
        with serving(index) as (url, _pid):
            _routes(url, queries[:20])  # warm up
            echo(f"idle: {requests} routes")
            idle = _routes(url, queries[20 : 20 + requests])
            echo(f"under curation: {requests} routes while {clients} clients ask for curation views")
            stop = threading.Event()
            served: list[int] = []
            workers = [
                threading.Thread(target=_curate, args=(url, catalog.names, stop, served, seed), daemon=True)
                for seed in range(clients)
            ]
            for worker in workers:
                worker.start()
            try:
                busy = _routes(url, queries[20 + requests :])
            finally:
                stop.set()
                for worker in workers:
                    worker.join(timeout=CURATION_TIMEOUT)
    return {
        "schema": "toolsift-curation-load/1",
        "tools": size,
        "model": router.embedder.name,
        "requests": requests,
        "clients": clients,
        "idle_ms": idle,
        "under_curation_ms": busy,
        "curation_requests": sum(served),
        "p95_ratio": round(busy["p95"] / idle["p95"], 2),
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
    """One curation client: tool pages mostly, findings and the map now and then, until ``stop``."""
    rng = random.Random(seed)
    connection = _connection(url)
    count = 0
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
            count += 1
    except (OSError, http.client.HTTPException):
        pass  # the server stopped at the end of the run
    finally:
        connection.close()
        served.append(count)


def curation_table(document: dict[str, Any]) -> str:
    idle, busy = document["idle_ms"], document["under_curation_ms"]
    return "\n".join(
        [
            f"{document['tools']:,} tools, {document['requests']} routes each way, {document['clients']} curation "
            f"clients ({document['curation_requests']} curation requests served meanwhile):",
            "",
            "| routing | p50 ms | p95 ms |",
            "| --- | ---: | ---: |",
            f"| idle | {idle['p50']} | {idle['p95']} |",
            f"| under curation | {busy['p50']} | {busy['p95']} |",
            "",
            f"Route p95 under curation over idle: **{document['p95_ratio']}×** (aim: within 2×).",
            "",
        ]
    )
