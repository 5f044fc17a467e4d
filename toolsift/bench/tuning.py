"""The tuning protocol (``toolsift bench --feedback-split F --split-by tool|query --tune``):
does a model fine-tuned on fed requests route better, above all for tools no one asked for?

``--split-by tool``: a seeded fraction F of the *tools* is known; the requests whose relevant
tools are all known are fed (as feedback, and as training pairs), the requests whose relevant
tools are all unknown are scored, mixed ones are left out. ``--split-by query``: F of the
requests are fed, the rest scored (as ``--feedback-split``). Methods, on the same scored
requests in one run:

- ``toolsift``: the base model, no feedback;
- ``toolsift+feedback``: the base model ranking with the fed requests (``Router.learn``);
- ``toolsift+tuned``: the model ``toolsift tune`` would publish from those pairs (each kind it
  tries, trained on them; with ``--tune-kind all`` every kind is a method of its own), no feedback;
- ``toolsift+tuned+feedback``: that model, ranking with the fed requests too.

Recall@K per method with its interval, paired differences (tuned minus toolsift, tuned+feedback
minus feedback), the training time and pairs per second, and route p50 with each model.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolsift.bench.datasets import Dataset, Query
from toolsift.bench.feedback import _paired, _recalls, feedback_of, split
from toolsift.bench.metrics import interval95, mean
from toolsift.embeddings import CachingEmbedder, Embedder, EmbeddingCache
from toolsift.router import Router, within_query_limit
from toolsift.router.threads import single_threaded_queries
from toolsift.tuning import models
from toolsift.tuning.pairs import Pair
from toolsift.tuning.trainer import Recipe
from toolsift.tuning.tune import TuneOptions, select

SplitBy = Literal["tool", "query"]
LATENCY_QUERIES = 200


@dataclass
class TuningPoint:
    dataset: str
    fraction: float
    split_by: str
    fed: int
    scored: int
    pairs: int
    recall: dict[str, dict[int, float]] = field(default_factory=dict)
    ci95: dict[str, dict[int, float]] = field(default_factory=dict)
    difference: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    """``name`` -> k -> (mean, paired half-width), names ``A - B``."""
    training: dict[str, dict[str, float]] = field(default_factory=dict)
    """kind -> seconds, pairs seen, pairs per second, stopped at the time limit (0/1)."""
    route_p50_ms: dict[str, float] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    """With ``auto``: what ``toolsift tune`` would publish (kind, or none) and each candidate's check."""


def split_by_tool(
    queries: Sequence[Query], tools: Sequence[str], fraction: float, seed: int = 0
) -> tuple[list[Query], list[Query]]:
    """(fed, scored): a seeded ``fraction`` of ``tools`` is known; requests all of whose tools are
    known are fed, those with none known are scored, mixed ones left out."""
    order = sorted(tools)
    random.Random(seed).shuffle(order)
    known = set(order[: int(round(fraction * len(order)))])
    fed = [q for q in queries if all(tool in known for tool in q.relevant)]
    scored = [q for q in queries if not any(tool in known for tool in q.relevant)]
    return fed, scored


def pairs_of(queries: Sequence[Query]) -> list[Pair]:
    return [Pair(q.text, tool) for q in queries if within_query_limit(q.text) for tool in q.relevant]


def run_tuning_curve(
    dataset: Dataset, embedder: Embedder, fractions: Sequence[float], ks: Sequence[int], *,
    split_by: SplitBy = "tool", kinds: Sequence[str] = ("auto",), recipe: Recipe | None = None,
    time_limit: float = 900.0, cache: EmbeddingCache | None = None, seed: int = 0, max_pairs: int | None = None, max_scored: int | None = None,
) -> list[TuningPoint]:  # fmt: skip
    single_threaded_queries()
    recipe = recipe or Recipe()
    shared = CachingEmbedder(embedder)
    base = Router.build(dataset.catalog, shared, cache=cache)
    points = []
    for fraction in fractions:
        if split_by == "tool":
            fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, fraction, seed)
        else:
            fed, scored = split(dataset.with_tools, fraction, seed)
        if max_scored is not None and len(scored) > max_scored:
            scored = random.Random(seed).sample(scored, max_scored)
        pairs = pairs_of(fed)
        if max_pairs is not None and len(pairs) > max_pairs:
            pairs = random.Random(seed).sample(pairs, max_pairs)
        point = TuningPoint(dataset.name, fraction, split_by, len(fed), len(scored), len(pairs))
        routers: dict[str, tuple[Router, str | None]] = {"toolsift": (base, None)}
        learner = Router(base.index, shared, base.ranking)
        learner.learn(feedback_of(fed))
        routers["toolsift+feedback"] = (learner, "")
        with tempfile.TemporaryDirectory(prefix="toolsift-tune-bench.") as workdir:
            for kind in kinds:
                if kind == "full" and models.full_source(embedder.name, None) is None:
                    continue  # the multilingual engine cannot be fine-tuned whole: an adapter only
                label = "toolsift+tuned" if kind == "auto" or len(kinds) == 1 else f"toolsift+tuned:{kind}"
                model = _tuned(kind, base, pairs, recipe, time_limit, Path(workdir), point)
                # auto may publish nothing: the model in use stays
                tuned = base if model is None else Router.build(dataset.catalog, CachingEmbedder(model), cache=cache)
                routers[label] = (tuned, None)
                taught = Router(tuned.index, tuned.embedder, tuned.ranking)
                taught.learn(feedback_of(fed))
                routers[label + "+feedback"] = (taught, "")
            recalls = {name: _recalls(r, pool, scored, ks) for name, (r, pool) in routers.items()}
            timed = {f"{name} route": r for name, (r, pool) in routers.items() if pool is None}
            point.route_p50_ms = _route_p50s(timed, scored)
        for name, per_k in recalls.items():
            point.recall[name] = {k: round(mean(v), 4) for k, v in per_k.items()}
            point.ci95[name] = {k: round(interval95(v), 4) for k, v in per_k.items()}
            against = "toolsift+feedback" if name.endswith("+feedback") and name != "toolsift+feedback" else "toolsift"
            if name != "toolsift":
                point.difference[f"{name} - {against}"] = {k: _paired(per_k[k], recalls[against][k]) for k in ks}
        points.append(point)
    return points


def _tuned(kind: str, base: Router, pairs: Sequence[Pair], recipe: Recipe, time_limit: float, workdir: Path,
           point: TuningPoint) -> Embedder | None:  # fmt: skip
    """The model of ``kind`` trained on ``pairs``; for ``auto``, the one ``toolsift tune`` would
    publish (held-back check and all), None when it would publish none."""
    if kind == "auto":
        options = TuneOptions(kind="auto", time_limit=time_limit, recipe=recipe)
        chosen = select(base, pairs, options, workdir, None)
        for candidate in chosen.candidates:
            point.training[f"auto:{candidate.kind}"] = {
                key: float(candidate.training[key]) for key in ("seconds", "pairs_seen", "pairs_per_second")
            }
        point.selection = {
            "published": chosen.best.kind if chosen.best else None,
            "candidates": {c.kind: c.reason for c in chosen.candidates},
        }
        return None if chosen.best is None else models.load(chosen.best.name, workdir)
    deadline = time.monotonic() + time_limit
    name, stats = models.make(kind, base, pairs, recipe, workdir, None, deadline=deadline)  # type: ignore[arg-type]
    point.training[kind] = {
        "seconds": round(stats.seconds, 1), "pairs_seen": stats.pairs,
        "pairs_per_second": round(stats.pairs_per_second, 2), "stopped_at_time_limit": int(stats.stopped_early),
    }  # fmt: skip
    return models.load(name, workdir)


def _route_p50s(routers: dict[str, Router], scored: Sequence[Query]) -> dict[str, float]:
    """Median time of one uncached route (embedding and ranking) per router, on the same requests,
    the routers taking turns request by request (so a busy moment of the machine falls on all of
    them alike): fresh routers over the same indexes, their query caches empty, the embedders
    without the bench's memo."""
    fresh = {name: Router(r.index, getattr(r.embedder, "inner", r.embedder), r.ranking) for name, r in routers.items()}
    texts = [q.text for q in scored if within_query_limit(q.text)][:LATENCY_QUERIES]
    timings: dict[str, list[float]] = {name: [] for name in fresh}
    for text in texts[:1]:  # warm-up
        for router in fresh.values():
            router.route(text + " warm-up", 5, usage_pool=None)
    for text in texts:
        for name, router in fresh.items():
            started = time.perf_counter()
            router.route(text, 5, usage_pool=None)
            timings[name].append((time.perf_counter() - started) * 1000)
    return {name: round(statistics.median(t), 3) if t else 0.0 for name, t in timings.items()}


def tuning_table(points: Sequence[TuningPoint], k: int = 5) -> str:
    lines = [f"| dataset | split | F | fed | scored | pairs | method | R@{k} | paired difference | train s | pairs/s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for p in points:
        for name in p.recall:
            difference = next((f"{d[k][0]:+.3f} ± {d[k][1]:.3f} (vs {key.split(' - ')[1]})" for key, d in p.difference.items()
                               if key.split(" - ")[0] == name), "")  # fmt: skip
            seconds, speed = _training_cells(p, name)
            cells = [p.dataset, p.split_by, f"{p.fraction:g}", str(p.fed), str(p.scored), str(p.pairs), name,
                     f"{p.recall[name][k]:.3f} ± {p.ci95[name][k]:.3f}", difference, seconds, speed]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _training_cells(point: TuningPoint, method: str) -> tuple[str, str]:
    if "tuned" not in method or method.endswith("+feedback"):
        return "", ""
    kind = method.removeprefix("toolsift+tuned").removeprefix(":")
    if not kind:  # the one kind run: auto, or the kind it names
        kind = "auto" if point.selection else next(iter(point.training), "auto")
    if kind == "auto":
        runs = {name: t for name, t in point.training.items() if name.startswith("auto:")}
        published = point.selection.get("published") or "none"
        return f"{sum(t['seconds'] for t in runs.values()):.1f} (published: {published})", ""
    run = point.training.get(kind, {})
    return f"{run.get('seconds', '')}", f"{run.get('pairs_per_second', '')}"


def tuning_document(points: Sequence[TuningPoint], model: str, command: str) -> dict[str, Any]:
    return {
        "schema": "toolsift-tuning-bench/1",
        "model": model,
        "command": command,
        "points": [
            {
                **asdict(p),
                **{
                    key: {n: {str(k): v for k, v in per.items()} for n, per in getattr(p, key).items()}
                    for key in ("recall", "ci95", "difference")
                },
            }  # fmt: skip
            for p in points
        ],
    }
