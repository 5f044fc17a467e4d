"""``toolsift perf --feedback-memory``: does a server's memory follow the retained feedback, or
every request ever sent?

A real ``toolsift serve`` over a synthetic catalog takes ``requests`` feedback requests (each a
new text, spread over ``FED_TOOLS`` tools, with the admin token), with a fresh ``/route`` after every ten so
the new requests are embedded as views; its resident memory (``VmRSS``) and the retained count
are read at checkpoints, then once more after ``DELETE /admin/feedback``. Bounded means: once the
retention caps are full, more requests add no memory. All on loopback, bounded in count.
"""

from __future__ import annotations

import http.client
import os
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from toolsift.bench.performance import serving

ROUTE_EVERY = 10
CHECKPOINTS = 8
FED_TOOLS = 64
"""Feedback names the first this many tools, so the retention caps fill early in the run."""


def run_feedback_memory(size: int, requests: int, model: str, echo: Callable[[str], None]) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import embedder_for
    from toolsift.router import Router

    catalog = synthetic_catalog(size)
    echo(f"building an index of {size:,} synthetic tools")
    router = Router.build(catalog, embedder_for(model, catalog))
    texts = synthetic_queries(requests // ROUTE_EVERY + requests + 1, seed=11)
    token = secrets.token_hex(16)
    environment = {**os.environ, "TOOLSIFT_ADMIN_TOKEN": token, "TOOLSIFT_FEEDBACK_RATE": "100000"}
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="toolsift-feedback-memory-") as folder:
        index = router.save(Path(folder) / "index")
        with serving(index, environment=environment) as (url, pid):
            connection = _connection(url)
            _call(connection, "POST", "/route", {"query": texts[-1], "k": 5}, headers)  # warm up
            rows.append(_checkpoint(connection, pid, 0, headers))
            every = max(1, requests // CHECKPOINTS)
            for number in range(requests):
                body = {
                    "query": f"{texts[number]} (request {number})",
                    "tool": catalog[number % min(FED_TOOLS, len(catalog))].name,
                }
                _call(connection, "POST", "/feedback", body, headers)
                if (number + 1) % ROUTE_EVERY == 0:
                    _call(
                        connection,
                        "POST",
                        "/route",
                        {"query": texts[requests + number // ROUTE_EVERY], "k": 5},
                        headers,
                    )
                if (number + 1) % every == 0 or number + 1 == requests:
                    rows.append(_checkpoint(connection, pid, number + 1, headers))
                    echo(
                        f"{number + 1:,} feedback requests: {rows[-1]['rss_mib']} MiB, {rows[-1]['retained']} retained"
                    )
            _call(connection, "DELETE", "/admin/feedback", None, headers)
            _call(connection, "POST", "/route", {"query": texts[0], "k": 5}, headers)
            after_reset = _checkpoint(connection, pid, requests, headers)
            connection.close()
    full = next(row for row in rows if row["retained"] == rows[-1]["retained"])
    reached = full is not rows[-1]
    return {
        "schema": "toolsift-feedback-memory/1",
        "tools": size,
        "model": router.embedder.name,
        "requests": requests,
        "rows": rows,
        "after_reset": after_reset,
        "retention_full_at": full["sent"] if reached else None,
        "growth_after_full_mib": round(rows[-1]["rss_mib"] - full["rss_mib"], 1) if reached else None,
    }


def _connection(url: str) -> http.client.HTTPConnection:
    address = urlsplit(url)
    return http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port or 80, timeout=120)


def _call(connection: http.client.HTTPConnection, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    connection.request(method, path, orjson.dumps(body) if body is not None else None, headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise RuntimeError(f"{method} {path} answered {response.status}: {data[:300]!r}")
    return orjson.loads(data)


def _checkpoint(connection: http.client.HTTPConnection, pid: int, sent: int, headers: dict[str, str]) -> dict[str, Any]:
    retained = _call(connection, "GET", "/admin/feedback", None, headers)["retained"]
    return {"sent": sent, "retained": retained, "rss_mib": _rss_mib(pid)}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


def feedback_memory_table(document: dict[str, Any]) -> str:
    lines = [
        f"{document['tools']:,} tools, {document['requests']:,} feedback requests (a /route after every "
        f"{ROUTE_EVERY}):",
        "",
        "| feedback requests sent | retained | server RSS MiB |",
        "| ---: | ---: | ---: |",
        *(f"| {row['sent']:,} | {row['retained']:,} | {row['rss_mib']} |" for row in document["rows"]),
        f"| after DELETE /admin/feedback | {document['after_reset']['retained']} | {document['after_reset']['rss_mib']} |",
        "",
        (
            f"Retention full from {document['retention_full_at']:,} requests; memory added after that: "
            f"**{document['growth_after_full_mib']} MiB**."
            if document["retention_full_at"] is not None
            else "The retention caps were not reached in this run: send more requests."
        ),
        "",
    ]
    return "\n".join(lines)
