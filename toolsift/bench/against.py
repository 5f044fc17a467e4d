"""``toolsift perf --against REF``: this checkout's server and another commit's, served side by
side over the same index of the bundled catalog, under the same bounded loopback load.

The other commit is checked out in a temporary git worktree and served from it (``PYTHONPATH``)
with this virtualenv. Rounds alternate which server goes first, and every round posts queries no
server has seen (the query cache never answers), at 1, 4 and 16 clients; each figure is the
median over the rounds. Both servers share the host, so only ratios taken in one run mean much.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from toolsift.bench.load import http_load
from toolsift.bench.performance import serving

CLIENTS = (1, 4, 16)
HERE = Path(__file__).resolve().parents[2]
"""The source tree this package was imported from (the checkout being measured)."""


@contextmanager
def worktree(ref: str) -> Iterator[Path]:
    """``ref`` checked out in a temporary git worktree of this checkout, removed afterwards."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary) / "tree"
        add = ["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(folder), ref]
        done = subprocess.run(add, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"git worktree add {ref} failed: {done.stderr.strip()}")
        try:
            yield folder
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(folder)], check=False)


def bundled_queries(count: int, seed: int) -> list[str]:
    """``count`` requests no server has seen: the bundled tools' examples and descriptions, each
    made unique (so every one is embedded, as a real request is)."""
    from toolsift.catalog import load_catalog
    from toolsift.settings import BUNDLED_CATALOG

    catalog = load_catalog(BUNDLED_CATALOG)
    texts = [example for tool in catalog for example in tool.examples] + [tool.description for tool in catalog]
    rng = random.Random(seed)
    return [f"{rng.choice(texts)} ({seed}-{i})" for i in range(count)]


def run_against(ref: str, requests: int, rounds: int, echo: Callable[[str], None]) -> dict[str, Any]:
    from toolsift.catalog import load_catalog
    from toolsift.router import Router
    from toolsift.settings import BUNDLED_CATALOG

    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as temporary, worktree(ref) as other, ExitStack() as stack:
        folder = Router.build(load_catalog(BUNDLED_CATALOG)).save(Path(temporary) / "index")
        urls = {}
        for name, source in (("this", HERE), (ref, other)):
            environment = {**os.environ, "PYTHONPATH": str(source)}
            urls[name] = stack.enter_context(serving(folder, environment=environment))[0]
            http_load(urls[name], bundled_queries(64, seed=1), 4)  # warm: first requests load lazily
        for round_ in range(rounds):
            order = list(urls) if round_ % 2 == 0 else list(reversed(urls))
            for clients in CLIENTS:
                for number, name in enumerate(order):
                    seed = 1000 * (round_ + 1) + 10 * clients + number
                    figures = http_load(urls[name], bundled_queries(requests, seed), clients)
                    samples.setdefault((name, clients), []).append(figures)
            echo(f"round {round_ + 1}/{rounds} done")
    rows = [
        {
            "server": name,
            "clients": clients,
            "requests": requests,
            "rounds": rounds,
            **{key: round(statistics.median(s[key] for s in found), 2) for key in ("per_s", "p50_ms", "p95_ms")},
        }
        for (name, clients), found in samples.items()
    ]
    return {"schema": "toolsift-against/1", "against": ref, "tools": 254, "rows": rows}


def against_table(document: dict[str, Any]) -> str:
    lines = [
        "| server | clients | req/s | p50 ms | p95 ms | p95 / p50 |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows = sorted(document["rows"], key=lambda row: (row["clients"], row["server"] != "this"))
    for row in rows:
        ratio = row["p95_ms"] / row["p50_ms"] if row["p50_ms"] else 0.0
        lines.append(
            f"| {row['server']} | {row['clients']} | {row['per_s']} | {row['p50_ms']} | {row['p95_ms']} | {ratio:.2f} |"
        )
    by = {(row["server"], row["clients"]): row for row in rows}
    for clients in CLIENTS:
        this, other = by.get(("this", clients)), by.get((document["against"], clients))
        if this and other and other["per_s"]:
            lines.append(
                f"\n{clients} clients: throughput this / {document['against']} = **{this['per_s'] / other['per_s']:.2f}×**"
            )
    return "\n".join(lines) + "\n"
