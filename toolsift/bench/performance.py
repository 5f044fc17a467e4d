"""Performance at scale: build throughput, route latency (in-process and over HTTP), memory.

Each catalog size runs in its own process (``python -m toolsift.bench.performance SIZE``) so its
peak memory is its own. Every figure that is compared is measured in that same process:
build throughput against the bare model's encode throughput on the same texts, and route latency
against the bare query embedding, interleaved query by query. HTTP latency is measured against
a real ``toolsift serve`` process over the same index.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolsift.catalog import Catalog
from toolsift.embeddings import Embedder
from toolsift.router import Router

ENCODE_SAMPLE = 2000


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "p50": round(cuts[49], 3),
        "p95": round(cuts[94], 3),
        "p99": round(cuts[98], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_ms(function: Callable[[], Any]) -> float:
    started = time.perf_counter()
    function()
    return (time.perf_counter() - started) * 1000


def measure(size: int, queries: int = 200, kind: str = "auto", model: str = "all-MiniLM-L6-v2") -> dict[str, Any]:
    """Every figure for one catalog size, in this process."""
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import embedder_for
    from toolsift.router.threads import single_threaded_queries

    catalog = synthetic_catalog(size)
    embedder = embedder_for(model, catalog)
    asked = synthetic_queries(2 * queries + 10)
    router, row = measure_build(catalog, embedder, kind)
    single_threaded_queries()  # routes timed as toolsift serve runs them (after the build, which may use every core)
    row.update(measure_routing(router, asked[:10], asked[10 : 10 + queries]))
    row.update(measure_multi_step(router, queries // 2))
    row.update(measure_index_search(router, asked[10 : 10 + queries]))
    row.update(measure_http(router, asked[10 + queries :]))
    return {
        "tools": size,
        "kind": router.index.manifest.kind,
        "model": embedder.name,
        "queries": queries,
        **row,
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }


def measure_build(catalog: Catalog, embedder: Embedder, kind: str) -> tuple[Router, dict[str, Any]]:
    """Build throughput against the bare model's encode throughput on the same texts."""
    from toolsift.embeddings import compose_tool_text

    sample = [compose_tool_text(tool) for tool in catalog][:ENCODE_SAMPLE]
    embedder.embed_documents(sample[:64])  # warm-up
    started = time.perf_counter()
    embedder.embed_documents(sample)
    encode_rate = len(sample) / (time.perf_counter() - started)
    router = Router.build(catalog, embedder, kind=kind)  # type: ignore[arg-type]
    assert router.last_build is not None
    build_rate = len(catalog) / router.last_build.seconds
    with tempfile.TemporaryDirectory() as folder:
        index_bytes = (router.save(Path(folder) / "index") / "vectors.faiss").stat().st_size
    return router, {
        "encode_texts_per_s": round(encode_rate, 1),
        "build_tools_per_s": round(build_rate, 1),
        "build_s": round(router.last_build.seconds, 2),
        "build_vs_encode": round(build_rate / encode_rate, 3),
        "index_mib": round(index_bytes / 2**20, 2),
    }


def measure_routing(router: Router, warm_up: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    """Route latency against the bare query embedding, interleaved query by query (alternating
    which goes first) so both see the same machine state."""
    for query in warm_up:
        router.route(query, 5)
    route_ms: list[float] = []
    embed_ms: list[float] = []
    for number, query in enumerate(queries):
        # the bare embedding gets its own copy of the text: the router must not find it cached
        def time_embed(text: str = query.upper()) -> None:
            embed_ms.append(timed_ms(lambda: router.embedder.embed_queries([text])))

        def time_route(text: str = query) -> None:
            route_ms.append(timed_ms(lambda: router.route(text, 5)))

        for step in (time_embed, time_route) if number % 2 else (time_route, time_embed):
            step()
    route, embed = percentiles(route_ms), percentiles(embed_ms)
    return {"route_ms": route, "embed_ms": embed, "route_vs_embed_p50": round(route["p50"] / embed["p50"], 3)}


def measure_multi_step(router: Router, count: int) -> dict[str, Any]:
    """Three-step requests, routed with splitting (the default) and as one text, interleaved."""
    from toolsift.bench.synthetic import synthetic_queries

    whole_router = Router(router.index, router.embedder, replace(router.ranking, split_intents=False))
    steps = synthetic_queries(3 * count + 30, seed=2)
    multi = [f"{a}. Then {b}. Finally, {c}." for a, b, c in zip(steps[0::3], steps[1::3], steps[2::3], strict=False)]
    split_ms: list[float] = []
    whole_ms: list[float] = []
    for number, query in enumerate(multi[:count]):

        def time_split(text: str = query) -> None:
            split_ms.append(timed_ms(lambda: router.route(text, 5)))

        def time_whole(text: str = query.upper()) -> None:
            whole_ms.append(timed_ms(lambda: whole_router.route(text, 5)))

        for step in (time_split, time_whole) if number % 2 else (time_whole, time_split):
            step()
    split, whole = percentiles(split_ms), percentiles(whole_ms)
    return {
        "multi_step_route_ms": split,
        "multi_step_whole_ms": whole,
        "multi_step_vs_whole_p50": round(split["p50"] / whole["p50"], 3),
    }


def measure_index_search(router: Router, queries: Sequence[str]) -> dict[str, Any]:
    """The index alone, exact (flat) and approximate (HNSW), on the same vectors and queries."""
    import numpy as np

    from toolsift.index import FaissIndex

    size = len(router.catalog)
    vectors = router.index.vectors.vectors(np.arange(size, dtype=np.int64))
    query_vectors = router.embedder.embed_queries(list(queries))
    flat = FaissIndex.from_vectors(vectors, "flat")
    started = time.perf_counter()
    hnsw = FaissIndex.from_vectors(vectors, "hnsw")
    hnsw_build_s = time.perf_counter() - started
    flat_ms: list[float] = []
    hnsw_ms: list[float] = []
    overlap = 0
    for vector in query_vectors:
        started = time.perf_counter()
        exact = flat.search(vector, 5)[1]
        flat_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        approx = hnsw.search(vector, 5)[1]
        hnsw_ms.append((time.perf_counter() - started) * 1000)
        overlap += len(set(exact.tolist()) & set(approx.tolist()))
    return {
        "flat_search_ms": percentiles(flat_ms),
        "hnsw_search_ms": percentiles(hnsw_ms),
        "hnsw_build_s": round(hnsw_build_s, 2),
        "hnsw_recall_at_5": round(overlap / (5 * len(query_vectors)), 4),
    }


def measure_http(router: Router, queries: Sequence[str]) -> dict[str, Any]:
    """``POST /route`` latency from one client, against ``toolsift serve`` on loopback serving
    this router's index (saved to a temporary folder)."""
    import httpx

    with tempfile.TemporaryDirectory() as folder, serving(router.save(Path(folder) / "index")) as (url, _):
        http_ms = []
        with httpx.Client(base_url=url, timeout=30) as client:
            client.post("/route", json={"query": "warm up", "k": 5}).raise_for_status()
            for query in queries:
                started = time.perf_counter()
                client.post("/route", json={"query": query, "k": 5}).raise_for_status()
                http_ms.append((time.perf_counter() - started) * 1000)
    return {"http_ms": percentiles(http_ms)}


@contextmanager
def serving(index: Path, seconds: float = 300, environment: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """``toolsift serve`` over ``index`` on a free loopback port, until the block ends: its URL and pid."""
    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**(environment or os.environ), "TOOLSIFT_RELOAD_INTERVAL": "0", "TOOLSIFT_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "toolsift", "serve", "--index", str(index), "--port", str(port)]
    server = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + seconds
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"toolsift serve did not start: {server.communicate()[1].decode()[-2000:]}")
            time.sleep(0.1)
        yield url, server.pid
    finally:
        server.terminate()
        server.wait(timeout=60)
        if server.stderr is not None:
            server.stderr.close()


def run_sizes(sizes: Sequence[int], queries: int, kind: str, model: str, echo: Callable[[str], None]) -> dict[str, Any]:
    rows = []
    for size in sizes:
        echo(f"measuring {size:,} tools ({kind}) ...")
        completed = subprocess.run(
            [sys.executable, "-m", "toolsift.bench.performance", str(size), str(queries), kind, model],
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"performance run for {size} tools failed:\n{completed.stderr[-3000:]}")
        row = json.loads(completed.stdout.strip().splitlines()[-1])
        echo(
            f"  build {row['build_tools_per_s']:.0f} tools/s (bare encode {row['encode_texts_per_s']:.0f}/s, "
            f"ratio {row['build_vs_encode']:.2f}); route p50 {row['route_ms']['p50']:.2f} ms "
            f"(bare embed {row['embed_ms']['p50']:.2f} ms, ratio {row['route_vs_embed_p50']:.2f}); "
            f"HTTP p50 {row['http_ms']['p50']:.2f} ms; three-step requests p50 {row['multi_step_route_ms']['p50']:.2f} ms "
            f"split vs {row['multi_step_whole_ms']['p50']:.2f} ms whole (ratio {row['multi_step_vs_whole_p50']:.2f}); "
            f"peak RSS {row['peak_rss_mib']:.0f} MiB"
        )
        rows.append(row)
    return {"schema": "toolsift-perf/1", "sizes": rows}


if __name__ == "__main__":
    size_arg, queries_arg, kind_arg, model_arg = sys.argv[1:5]
    print(json.dumps(measure(int(size_arg), int(queries_arg), kind_arg, model_arg)))
