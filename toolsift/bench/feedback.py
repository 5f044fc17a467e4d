"""The feedback protocol (``toolsift bench --feedback-split F``): learning from use, measured.

For each fraction F (seeded): F of a dataset's queries are fed as feedback (query -> each of its
relevant tools, each query its own contributor, as distinct users would send it) and only the
rest is scored, by three variants on the same held-out queries:

- ``toolsift``: no feedback (the router as it was before any use);
- ``toolsift+feedback``: the same router learning from the fed queries (``Router.learn``);
- ``toolsift+examples``: no feedback, but up to ``EXAMPLES_PER_TOOL`` fed queries per tool
  written into the catalog as ``examples`` (what a curator could do by hand).

Recall@K per variant with its 95% interval, and each variant minus ``toolsift`` with its paired
interval. Route latency is timed for both routing variants on the same queries in one run: the
query's embedding (what feedback does not change) plus its ranking (what it does).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from toolsift.bench.datasets import Dataset, Query
from toolsift.bench.metrics import interval95, mean, per_query
from toolsift.catalog import Catalog
from toolsift.embeddings import CachingEmbedder, Embedder, EmbeddingCache
from toolsift.router import Router, within_query_limit
from toolsift.router.threads import single_threaded_queries
from toolsift.router.usage import Feedback

EXAMPLES_PER_TOOL = 3
CHUNK = 512
LATENCY_QUERIES = 300
VARIANTS = ("toolsift", "toolsift+feedback", "toolsift+examples")


@dataclass
class FeedbackPoint:
    """One fraction F of one dataset."""

    dataset: str
    fraction: float
    fed: int
    scored: int
    recall: dict[str, dict[int, float]] = field(default_factory=dict)
    """variant -> k -> mean Recall@K over the scored queries."""
    ci95: dict[str, dict[int, float]] = field(default_factory=dict)
    difference: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    """variant -> k -> (mean of variant minus toolsift, paired 95% half-width)."""
    route_p50_ms: dict[str, float] = field(default_factory=dict)


def split(queries: Sequence[Query], fraction: float, seed: int = 0) -> tuple[list[Query], list[Query]]:
    """(fed, scored): a seeded shuffle, the first ``fraction`` of it fed, the rest scored."""
    order = list(queries)
    random.Random(seed).shuffle(order)
    cut = int(round(fraction * len(order)))
    return order[:cut], order[cut:]


def feedback_of(queries: Sequence[Query]) -> list[Feedback]:
    return [
        Feedback(query.text, tool, contributor=f"bench:{query.id}")
        for query in queries
        if within_query_limit(query.text)
        for tool in query.relevant
    ]


def with_examples(catalog: Catalog, fed: Sequence[Query], per_tool: int = EXAMPLES_PER_TOOL) -> Catalog:
    """``catalog`` with up to ``per_tool`` fed queries per tool added to its ``examples``."""
    chosen: dict[str, list[str]] = {}
    for query in fed:
        for tool in query.relevant:
            texts = chosen.setdefault(tool, [])
            if len(texts) < per_tool and query.text not in texts and within_query_limit(query.text):
                texts.append(query.text)
    tools = [
        tool.model_copy(update={"examples": tool.examples + tuple(chosen[tool.name])}) if tool.name in chosen else tool
        for tool in catalog
    ]
    return catalog.with_tools(tools)


def run_feedback_curve(
    dataset: Dataset,
    embedder: Embedder,
    fractions: Sequence[float],
    ks: Sequence[int],
    cache: EmbeddingCache | None = None,
    seed: int = 0,
) -> list[FeedbackPoint]:
    single_threaded_queries()  # as toolsift serve does: the route timings are what is served
    shared = CachingEmbedder(embedder)
    router = Router.build(dataset.catalog, shared, cache=cache)
    points = []
    for fraction in fractions:
        fed, scored = split(dataset.with_tools, fraction, seed)
        learner = Router(router.index, shared, router.ranking)
        learner.learn(feedback_of(fed))
        curated = Router.build(with_examples(dataset.catalog, fed), shared, cache=cache)
        routes = {"toolsift": (learner, None), "toolsift+feedback": (learner, ""), "toolsift+examples": (curated, None)}
        point = FeedbackPoint(dataset.name, fraction, len(fed), len(scored))
        recalls = {name: _recalls(r, pool, scored, ks) for name, (r, pool) in routes.items()}
        for name, per_k in recalls.items():
            point.recall[name] = {k: round(mean(values), 4) for k, values in per_k.items()}
            point.ci95[name] = {k: round(interval95(values), 4) for k, values in per_k.items()}
            if name != "toolsift":
                point.difference[name] = {k: _paired(per_k[k], recalls["toolsift"][k]) for k in ks}
        point.route_p50_ms = _route_p50(learner, embedder, scored)
        points.append(point)
    return points


def _recalls(router: Router, pool: str | None, scored: Sequence[Query], ks: Sequence[int]) -> dict[int, list[float]]:
    depth = min(max(ks), len(router.catalog))
    rankings: list[list[str]] = []
    for start in range(0, len(scored), CHUNK):
        chunk = scored[start : start + CHUNK]
        accepted = [query.text for query in chunk if within_query_limit(query.text)]
        routed = router.route_many(accepted, depth, usage_pool=pool, min_confidence=0.0) if accepted else []
        ranked = {r.query: r.names for r in routed}  # ranking quality: min_confidence 0
        rankings += [ranked.get(query.text.strip(), []) for query in chunk]
    values = per_query(rankings, [query.relevant for query in scored], ks)
    return {k: values[("recall", k)] for k in ks}


def _paired(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    differences = [a - b for a, b in zip(ours, theirs, strict=True)]
    return round(mean(differences), 4), round(interval95(differences), 4)


def _route_p50(router: Router, embedder: Embedder, scored: Sequence[Query]) -> dict[str, float]:
    """Median single-query times on the same queries: embedding one query (uncached), and
    ranking it without and with feedback (alternating, its vector cached). A route is the
    embedding plus the ranking; feedback changes only the ranking."""
    texts = [query.text for query in scored if within_query_limit(query.text)][:LATENCY_QUERIES]
    if not texts:
        return {}
    router.route_many(texts, 5)
    timings: dict[str, list[float]] = {"embed": [], "toolsift": [], "toolsift+feedback": []}
    for text in texts:
        started = time.perf_counter()
        embedder.embed_queries([text])
        timings["embed"].append((time.perf_counter() - started) * 1000)
        for name, pool in (("toolsift", None), ("toolsift+feedback", "")):
            started = time.perf_counter()
            router.route(text, 5, usage_pool=pool)
            timings[name].append((time.perf_counter() - started) * 1000)
    medians = {name: statistics.median(values) for name, values in timings.items()}
    return {
        "embed": round(medians["embed"], 3),
        "rank": round(medians["toolsift"], 3),
        "rank_feedback": round(medians["toolsift+feedback"], 3),
        "route": round(medians["embed"] + medians["toolsift"], 3),
        "route_feedback": round(medians["embed"] + medians["toolsift+feedback"], 3),
    }


def curve_table(points: Sequence[FeedbackPoint], k: int = 5) -> str:
    """A Markdown learning curve: Recall@k per fraction, with intervals and paired differences."""
    lines = [
        f"| dataset | F | fed | scored | toolsift R@{k} | +feedback | minus toolsift | +examples | minus toolsift "
        "| route p50 ms (no fb / fb) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in points:
        cells = [p.dataset, f"{p.fraction:g}", str(p.fed), str(p.scored), _value(p, "toolsift", k)]
        for name in ("toolsift+feedback", "toolsift+examples"):
            cells += [_value(p, name, k), _signed(*p.difference[name][k])]
        timing = p.route_p50_ms
        cells.append(f"{timing.get('route', 0):.2f} / {timing.get('route_feedback', 0):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _value(point: FeedbackPoint, name: str, k: int) -> str:
    return f"{point.recall[name][k]:.3f} ± {point.ci95[name][k]:.3f}"


def _signed(difference: float, interval: float) -> str:
    return f"{difference:+.3f} ± {interval:.3f}"


def points_document(points: Sequence[FeedbackPoint], model: str, command: str) -> dict[str, Any]:
    """The JSON written by ``--json`` (cut-offs as string keys)."""
    return {
        "schema": "toolsift-feedback-bench/1",
        "model": model,
        "command": command,
        "points": [{**asdict(point), **_string_keys(point)} for point in points],
    }


def _string_keys(point: FeedbackPoint) -> dict[str, Any]:
    return {
        name: {variant: {str(k): v for k, v in values.items()} for variant, values in getattr(point, name).items()}
        for name in ("recall", "ci95", "difference")
    }
