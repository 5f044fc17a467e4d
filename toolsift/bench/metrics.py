"""Ranking metrics for tool selection, binary relevance.

For a ranked list and the set of relevant tools of one query:

- recall@K: |relevant ∩ top-K| / |relevant|
- hit@K: 1 if any relevant tool is in the top K
- complete@K: 1 if every relevant tool is in the top K
- ndcg@K: DCG of the top K (gain 1 per relevant tool, discount log2(rank + 1)) over the ideal DCG
- mrr: 1 / rank of the first relevant tool within the ranking's depth (0 if none)

Each is averaged over queries, with a 95% confidence interval over them (``interval95``): a
benchmark of 200 queries cannot tell 0.88 from 0.90, and its report should say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

AT_K_METRICS = ("recall", "hit", "complete", "ndcg")


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    return len(wanted.intersection(ranked[:k])) / len(wanted) if wanted else 0.0


def hit_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    return 1.0 if set(relevant).intersection(ranked[:k]) else 0.0


def complete_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    return 1.0 if wanted and wanted.issubset(ranked[:k]) else 0.0


def ndcg_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, name in enumerate(ranked[:k], start=1) if name in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    wanted = set(relevant)
    for rank, name in enumerate(ranked, start=1):
        if name in wanted:
            return 1.0 / rank
    return 0.0


_AT_K = {"recall": recall_at, "hit": hit_at, "complete": complete_at, "ndcg": ndcg_at}


def per_query(
    rankings: Sequence[Sequence[str]], relevant: Sequence[Iterable[str]], ks: Sequence[int]
) -> dict[tuple[str, int | None], list[float]]:
    """Every metric for every query, in query order: ``{("recall", 5): [1.0, 0.0, ...], ...}``."""
    if len(rankings) != len(relevant):
        raise ValueError(f"{len(rankings)} rankings for {len(relevant)} queries")
    golds = [tuple(gold) for gold in relevant]
    values: dict[tuple[str, int | None], list[float]] = {}
    for metric, function in _AT_K.items():
        for k in ks:
            values[(metric, k)] = [function(ranked, gold, k) for ranked, gold in zip(rankings, golds, strict=True)]
    values[("mrr", None)] = [reciprocal_rank(ranked, gold) for ranked, gold in zip(rankings, golds, strict=True)]
    return values


def evaluate(
    rankings: Sequence[Sequence[str]], relevant: Sequence[Iterable[str]], ks: Sequence[int]
) -> dict[tuple[str, int | None], float]:
    """Mean of every metric over the queries: ``{("recall", 5): 0.61, ..., ("mrr", None): 0.5}``."""
    return {key: mean(values) for key, values in per_query(rankings, relevant, ks).items()}


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


Z_95 = 1.959964


def interval95(values: Sequence[float]) -> float:
    """Half-width of the 95% confidence interval of the mean of ``values`` (normal approximation:
    1.96 standard errors). Over per-query differences of two methods on the same queries, it is
    the paired interval of the difference. 0 for fewer than two values."""
    count = len(values)
    if count < 2:
        return 0.0
    centre = mean(values)
    variance = sum((value - centre) ** 2 for value in values) / (count - 1)
    return Z_95 * math.sqrt(variance / count)


def share_interval95(hits: int, count: int) -> tuple[float, float]:
    """95% interval of a share ``hits / count`` (Wilson's score interval: unlike 1.96 standard
    errors it stays within 0..1 and is not empty at 0 or 1 — 29 of 35 is 0.83, between 0.67
    and 0.92). (0, 1) when nothing was counted."""
    if count <= 0:
        return (0.0, 1.0)
    share = hits / count
    spread = Z_95 * Z_95 / count
    centre = (share + spread / 2) / (1 + spread)
    half = Z_95 * math.sqrt(share * (1 - share) / count + spread / (4 * count)) / (1 + spread)
    return (max(0.0, centre - half), min(1.0, centre + half))
