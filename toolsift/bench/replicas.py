"""``toolsift perf --replicas``: one replica against two sharing a Redis, under the same bounded
loopback load of sessions, as a load balancer spreads it (round robin, no stickiness).

Each client is one conversation: its share of the queries, in order, as turns of its own
session, each turn sent to the next replica. Figures: throughput, p50/p95, and session
continuity (the share of turns that continued their session: turn number one more than the
previous, as one process gives). The host's cores are shared out between the replicas
(``TOOLSIFT_EMBEDDING_THREADS``: 2 for one replica, 1 each for two, on 2 cores).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from toolsift.bench.performance import percentiles, serving

REPLICA_COUNTS = (1, 2)


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A throwaway redis-server on a loopback port (Debian's package: `make services`)."""
    import redis

    if shutil.which("redis-server") is None:
        raise RuntimeError("redis-server is not installed; `make services` installs Debian's redis-server")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", ""]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with redis.Redis.from_url(url) as client:
                    client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def session_load(urls: Sequence[str], queries: Sequence[str], clients: int, tag: str) -> dict[str, Any]:
    """``clients`` conversations over ``queries`` (each once), turns spread round robin."""
    import httpx

    shares = [queries[i::clients] for i in range(clients)]

    def conversation(client: int) -> tuple[list[float], int]:
        latencies, continued, previous = [], 0, 0
        with httpx.Client(timeout=60) as http:
            for number, query in enumerate(shares[client]):
                url = urls[(client + number) % len(urls)]
                body = {"query": query, "k": 5, "session_id": f"{tag}-{client}"}
                started = time.perf_counter()
                response = http.post(url + "/route", json=body)
                latencies.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
                turn = response.json()["session"]["turn"]
                continued += turn == previous + 1
                previous = turn
        return latencies, continued

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(conversation, range(clients)))
    seconds = time.perf_counter() - started
    latencies = [ms for part, _ in results for ms in part]
    cuts = percentiles(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "per_s": round(len(latencies) / seconds, 1),
        "p50_ms": cuts["p50"],
        "p95_ms": cuts["p95"],
        "session_continuity": round(sum(c for _, c in results) / max(1, len(latencies)), 4),
    }


def run_replicas(size: int, requests: int, clients: int, echo: Callable[[str], None]) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import get_embedder
    from toolsift.router import Router

    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Router.build(synthetic_catalog(size), get_embedder("all-MiniLM-L6-v2")).save(Path(temporary) / "index")
        with redis_server(Path(temporary)) as redis_url:
            for count in REPLICA_COUNTS:
                echo(f"measuring {count} replica(s) ...")
                threads = str(max(1, (os.cpu_count() or 1) // count))  # the host's cores, shared out
                environment = {**os.environ, "TOOLSIFT_REDIS_URL": redis_url, "TOOLSIFT_EMBEDDING_THREADS": threads}
                with ExitStack() as stack:
                    urls = [stack.enter_context(serving(folder, environment=environment))[0] for _ in range(count)]
                    session_load(urls, synthetic_queries(4 * count, seed=3), count, f"warm{count}")
                    figures = session_load(urls, synthetic_queries(requests, seed=11), clients, f"load{count}")
                rows.append({"replicas": count, "embedding_threads": int(threads), **figures})
    ratio = rows[-1]["per_s"] / rows[0]["per_s"] if rows[0]["per_s"] else 0.0
    return {"schema": "toolsift-replicas/1", "tools": size, "rows": rows, "throughput_ratio": round(ratio, 2)}


def replicas_table(document: dict[str, Any]) -> str:
    lines = [
        "| replicas | ONNX threads each | clients | requests | req/s | p50 ms | p95 ms | session continuity |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in document["rows"]:
        lines.append(
            f"| {row['replicas']} | {row.get('embedding_threads', '')} | {row['clients']} | {row['requests']} "
            f"| {row['per_s']} | {row['p50_ms']} "
            f"| {row['p95_ms']} | {row['session_continuity']:.1%} |"
        )
    lines.append(f"\nThroughput, {REPLICA_COUNTS[-1]} replicas over 1: **{document['throughput_ratio']}×**")
    return "\n".join(lines) + "\n"
