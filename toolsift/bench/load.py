"""Bounded loopback HTTP load: ``clients`` threads, each on one keep-alive connection, posting
its share of the queries to ``/route`` once each.

The clients use the standard library's ``http.client``: on a small host the load generator shares
the cores with the server it measures, and ``http.client`` spends about 0.4 ms of CPU a request
where httpx spends 1.2-2.2 ms (measured on the 2-core benchmark host), so less of the host goes to
the clients and the figures are more the server's own.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import orjson

from toolsift.bench.performance import percentiles


def http_load(url: str, queries: Sequence[str], clients: int, *, k: int = 5) -> dict[str, Any]:
    """Throughput, p50 and p95 of ``queries`` posted to ``url``/route by ``clients`` at once."""
    address = urlsplit(url)
    host, port = address.hostname or "127.0.0.1", address.port or 80

    def client(mine: Sequence[str]) -> list[float]:
        connection = http.client.HTTPConnection(host, port, timeout=60)
        latencies = []
        try:
            for query in mine:
                started = time.perf_counter()
                connection.request(
                    "POST", "/route", orjson.dumps({"query": query, "k": k}), {"content-type": "application/json"}
                )
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    raise RuntimeError(f"/route answered {response.status}: {body[:300]!r}")
                latencies.append((time.perf_counter() - started) * 1000)
        finally:
            connection.close()
        return latencies

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = [ms for part in pool.map(client, [queries[i::clients] for i in range(clients)]) for ms in part]
    seconds = time.perf_counter() - started
    cuts = percentiles(latencies)
    return {"clients": clients, "requests": len(latencies), "per_s": round(len(latencies) / seconds, 1),
            "p50_ms": cuts["p50"], "p95_ms": cuts["p95"]}  # fmt: skip
