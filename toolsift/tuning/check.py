"""The held-back check: a tuned model is published only if it ranks the held-back requests
better than the model in use, by more than the noise (the lower end of the paired 95% interval of
the MRR@10 difference is above zero).

Both models are judged the same way the service ranks: on the catalog without the held-back
requests (a held-back request written into its tool's examples would find itself), learning the
training pairs that came from feedback as feedback, with no confidence threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolsift.catalog import Catalog
from toolsift.router import Router
from toolsift.router.usage import Feedback, view_offsets
from toolsift.tuning.pairs import Pair, by_request

DEPTH = 10
Z_95 = 1.959964


@dataclass(frozen=True)
class Figures:
    mrr_at_10: float
    recall_at_5: float


@dataclass(frozen=True)
class HeldOutCheck:
    requests: int
    current: Figures
    candidate: Figures
    difference: tuple[float, float]
    """MRR@10, candidate minus current: (mean, paired 95% half-width)."""
    recall_difference: tuple[float, float]

    @property
    def accepted(self) -> bool:
        return self.difference[0] - self.difference[1] > 0

    @property
    def reason(self) -> str:
        mean, half = self.difference
        verdict = "better" if self.accepted else "not better beyond the interval" if mean > 0 else "worse"
        return (
            f"{verdict} on {self.requests} held-back requests: MRR@10 {self.current.mrr_at_10:.3f} -> "
            f"{self.candidate.mrr_at_10:.3f} ({mean:+.3f} ± {half:.3f}), R@5 {self.current.recall_at_5:.3f} -> "
            f"{self.candidate.recall_at_5:.3f}"
        )


def without_requests(catalog: Catalog, held: Sequence[Pair]) -> Catalog:
    """``catalog`` with the held-back requests taken out of its tools' examples."""
    gone = {pair.query.strip().casefold() for pair in held}
    tools = [
        tool.model_copy(update={"examples": tuple(e for e in tool.examples if e.strip().casefold() not in gone)})
        if any(e.strip().casefold() in gone for e in tool.examples)
        else tool
        for tool in catalog
    ]
    return catalog.with_tools(tools)


@dataclass(frozen=True)
class UnseenOffset:
    offset: float
    requests: int
    tools: int


def unseen_offset(router: Router, held: Sequence[Pair]) -> UnseenOffset:
    """The feedback views' offset (``usage.view_offsets``) that ``router``'s model shows on the
    held-back requests: requests it never trained on, for tools it never trained on. Measured on
    its own training requests instead, a tuned model understates it (they lie nearer their
    tools' texts than a new request will), and its views then take the requests of tools that
    have none (benchmarks/DECISIONS.md, "Fine-tuning")."""
    catalog = router.catalog
    grouped: dict[int, list[str]] = {}
    for pair in held:
        if pair.tool in catalog:
            grouped.setdefault(catalog.position(pair.tool), []).append(pair.query)
    grouped = {tool: queries for tool, queries in grouped.items() if len(queries) >= 2}
    if not grouped:
        return UnseenOffset(0.0, 0, 0)
    texts = list(dict.fromkeys(query for queries in grouped.values() for query in queries))
    vectors = dict(zip(texts, router.embedder.embed_queries(texts), strict=True))
    ids = np.asarray(sorted(grouped), dtype=np.int64)
    tool_vectors = dict(zip(ids.tolist(), router.index.vectors.vectors(ids), strict=True))
    requests = {tool: np.vstack([vectors[q] for q in queries]) for tool, queries in grouped.items()}
    (_, _, offset), *_ = view_offsets(requests, tool_vectors, [(0, router.embedder.dimension)])
    return UnseenOffset(offset, sum(len(q) for q in grouped.values()), len(grouped))


def taught(router: Router, train: Sequence[Pair]) -> Router:
    """A router over ``router``'s index that learned the feedback pairs of ``train`` (each request
    its own contributor, as distinct users sent them)."""
    learner = Router(router.index, router.embedder, router.ranking)
    feedback = [
        Feedback(p.query, p.tool, contributor=f"tune:{i}") for i, p in enumerate(train) if p.source == "feedback"
    ]
    if feedback:
        learner.learn(feedback)
    return learner


def per_request(router: Router, held: Sequence[Pair]) -> tuple[list[float], list[float]]:
    """(reciprocal rank of the first relevant tool within 10, recall@5) for each held request."""
    answered = by_request(held)
    queries = list(answered)
    depth = min(DEPTH, len(router.catalog))
    ranked = {r.query: r.names for r in router.route_many(queries, depth, usage_pool="", min_confidence=0.0)}
    reciprocal, recall = [], []
    for query in queries:
        names, relevant = ranked.get(query.strip(), []), answered[query]
        first = next((rank for rank, name in enumerate(names, 1) if name in relevant), None)
        reciprocal.append(1.0 / first if first else 0.0)
        recall.append(len(relevant.intersection(names[:5])) / len(relevant))
    return reciprocal, recall


def compare(current: Router, candidate: Router, train: Sequence[Pair], held: Sequence[Pair]) -> HeldOutCheck:
    """Both routers (built on ``without_requests(catalog, held)``) judged on ``held``."""
    old_rr, old_recall = per_request(taught(current, train), held)
    new_rr, new_recall = per_request(taught(candidate, train), held)
    return HeldOutCheck(
        len(old_rr),
        Figures(_mean(old_rr), _mean(old_recall)),
        Figures(_mean(new_rr), _mean(new_recall)),
        _paired(new_rr, old_rr),
        _paired(new_recall, old_recall),
    )


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _paired(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float]:
    differences = [a - b for a, b in zip(ours, theirs, strict=True)]
    count = len(differences)
    if count < 2:
        return (round(differences[0], 4) if differences else 0.0), 0.0
    average = sum(differences) / count
    variance = sum((d - average) ** 2 for d in differences) / (count - 1)
    return round(average, 4), round(Z_95 * math.sqrt(variance / count), 4)
