"""``toolsift perf --curation``: does curation stall routing?

A real ``toolsift serve`` over a synthetic catalog (20,000 tools by default) answers one client's
``/route`` requests (fresh queries, one at a time): idle, then while ``clients`` other clients ask
for curation views without pause — a tool's page (``/tools/<name>``), a page of findings
(``/lint``), the map (``/catalog/map``) — starting cold, so the lint report of the whole catalog is
computed during the measurement; then ``ROUNDS`` rounds of idle and warm curation. The figure: the
route p95 under warm curation over idle, the median of the rounds' ratios.
Then, where Playwright and a Chromium are installed (the dev extras; `make browser`), the page's
first view (overview, first catalog page, first findings page) in a headless browser, at desktop
and phone widths: seconds and bytes, the median of ``VIEWS`` loads each (the aim: under 2 s and
5 MB at 20,000 tools; the tests check what the view shows and its size, not its speed).
All on loopback, bounded in count and time.
"""

from __future__ import annotations

import http.client
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from toolsift.bench.performance import percentiles, serving

CURATION_TIMEOUT = 120.0


VIEWS = 5
"""Loads of the page's first view per width (``first_views``): the median is reported."""
WIDTHS = {"desktop": (1280, 800), "phone": (375, 740)}

ROUNDS = 3
"""Warm rounds, each an idle measurement then one under curation: the figure is the median of
the rounds' ratios, so one noisy idle stretch does not decide it."""


def run_curation_load(
    size: int, requests: int, clients: int, model: str, echo: Callable[[str], None]
) -> dict[str, Any]:
    from toolsift.bench.synthetic import synthetic_catalog, synthetic_queries
    from toolsift.embeddings import embedder_for
    from toolsift.router import Router

    catalog = synthetic_catalog(size)
    echo(f"building an index of {size:,} synthetic tools")
    router = Router.build(catalog, embedder_for(model, catalog))
    queries = iter(synthetic_queries((2 + 2 * ROUNDS) * requests + 20, seed=7))

    def fresh() -> list[str]:
        return [next(queries) for _ in range(requests)]

    with tempfile.TemporaryDirectory(prefix="toolsift-curation-") as folder:
        index = router.save(Path(folder) / "index")
        with serving(index) as (url, _pid):
            _routes(url, [next(queries) for _ in range(20)])  # warm up
            echo(f"idle: {requests} routes")
            idle = _routes(url, fresh())
            echo(f"under curation, cold: {requests} routes while {clients} clients ask for curation views")
            with _curating(url, catalog.names, clients) as served:
                busy = _routes(url, fresh())  # cold: the lint report computing
                cold_served = sum(served)
            rounds: list[dict[str, Any]] = []
            for number in range(ROUNDS):
                echo(f"round {number + 1} of {ROUNDS}: {requests} routes idle, then under warm curation")
                calm = _routes(url, fresh())
                with _curating(url, catalog.names, clients, warm=True) as served:
                    started = sum(served)
                    warm = _routes(url, fresh())
                    answered = sum(served) - started
                rounds.append({"idle_ms": calm, "warm_ms": warm, "answered": answered,
                               "ratio": round(warm["p95"] / calm["p95"], 2)})  # fmt: skip
            views = first_views(url, echo)
    middle = sorted(rounds, key=lambda r: r["ratio"])[len(rounds) // 2]
    return {
        "schema": "toolsift-curation-load/2",
        "tools": size,
        "model": router.embedder.name,
        "requests": requests,
        "clients": clients,
        "idle_ms": idle,
        "under_curation_ms": busy,
        "curation_requests": cold_served,
        "p95_ratio": round(busy["p95"] / idle["p95"], 2),
        "rounds": rounds,
        "median_round": rounds.index(middle) + 1,
        "warm_p95_ratio": middle["ratio"],
        "first_view": views,
    }


def first_views(url: str, echo: Callable[[str], None]) -> dict[str, Any]:
    """The page's first view at each of ``WIDTHS`` in headless Chromium, ``VIEWS`` fresh pages
    each: the median seconds until the overview, the first catalog page and the first findings
    page are shown, and the bytes transferred; ``{"skipped": why}`` without a browser."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        return {"skipped": "Playwright is not installed (pip install -e '.[dev]')"}
    if chromium is None:
        return {"skipped": "no Chromium on PATH (make browser)"}
    figures: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            for width, (across, down) in WIDTHS.items():
                echo(f"first view at {width} width: {VIEWS} loads")
                loads = []
                for _ in range(VIEWS):
                    page = browser.new_page(viewport={"width": across, "height": down})
                    sizes: list[int] = []
                    page.on("requestfinished", partial(_count_body, sizes))
                    started = time.perf_counter()
                    page.goto(url + "/")
                    expect(page.locator("#catalog-table tr.tool-row")).to_have_count(25, timeout=30_000)
                    expect(page.locator("#findings")).to_have_attribute("data-severity", "problems", timeout=30_000)
                    loads.append((time.perf_counter() - started, sum(sizes)))
                    page.close()
                figures[width] = {
                    "seconds": round(statistics.median(seconds for seconds, _ in loads), 3),
                    "bytes": int(statistics.median(size for _, size in loads)),
                }
        finally:
            browser.close()
    return figures


def _count_body(sizes: list[int], request: Any) -> None:
    sizes.append(request.sizes()["responseBodySize"])


@contextmanager
def _curating(url: str, names: Sequence[str], clients: int, warm: bool = False) -> Iterator[list[int]]:
    """``clients`` curation clients asking without pause for the block (``warm``: once each
    has had answers, so the lint report is ready); yields their answer counts."""
    stop = threading.Event()
    served = [0] * clients
    workers = [
        threading.Thread(target=_curate, args=(url, names, stop, served, seed), daemon=True) for seed in range(clients)
    ]
    for worker in workers:
        worker.start()
    try:
        deadline = time.monotonic() + CURATION_TIMEOUT
        while warm and sum(served) < 5 * clients and time.monotonic() < deadline:
            time.sleep(0.05)
        yield served
    finally:
        stop.set()
        for worker in workers:
            worker.join(timeout=CURATION_TIMEOUT)


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
    idle, busy = document["idle_ms"], document["under_curation_ms"]
    lines = [
        f"{document['tools']:,} tools, {document['requests']} routes per row, {document['clients']} curation clients:",
        "",
        "| routing | curation requests answered meanwhile | p50 ms | p95 ms | p95 / idle |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| idle | – | {idle['p50']} | {idle['p95']} | 1 |",
        f"| under curation, cold (the lint report computing) | {document['curation_requests']} | {busy['p50']} "
        f"| {busy['p95']} | **{document['p95_ratio']}×** |",
    ]
    for number, row in enumerate(document["rounds"], 1):
        calm, warm = row["idle_ms"], row["warm_ms"]
        lines += [
            f"| round {number}: idle | – | {calm['p50']} | {calm['p95']} | 1 |",
            f"| round {number}: under curation, warm | {row['answered']} | {warm['p50']} | {warm['p95']} "
            f"| {row['ratio']}× |",
        ]
    lines += [
        "",
        f"Warm curation, median of the {len(document['rounds'])} rounds: route p95 **{document['warm_p95_ratio']}×** "
        "idle. Aim: within 2× idle.",
        "",
    ]
    views = document.get("first_view") or {"skipped": "not measured"}
    if "skipped" in views:
        lines += [f"The page's first view: not measured ({views['skipped']}).", ""]
    else:
        shown = ", ".join(f"{width} {v['seconds']} s, {v['bytes'] / 1e6:.2f} MB" for width, v in views.items())
        lines += [
            f"The page's first view (overview, first catalog page, first findings page) in headless Chromium, "
            f"the median of {VIEWS} loads, after the rounds: {shown}. Aim: under 2 s and 5 MB.",
            "",
        ]
    return "\n".join(lines)
