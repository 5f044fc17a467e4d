"""Run every method on a dataset and score it: one call, one process, the same data for all."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolsift.bench.datasets import Dataset
from toolsift.bench.methods import (
    BM25Method,
    DenseMethod,
    Method,
    RandomMethod,
    ToolsiftMethod,
)
from toolsift.bench.metrics import interval95, mean, per_query
from toolsift.embeddings import CachingEmbedder, Embedder, EmbeddingCache
from toolsift.index.lexical import cjk_bigrams
from toolsift.router import RankingConfig

DEFAULT_KS = (1, 3, 5, 10)
MRR_DEPTH = 100


@dataclass
class DatasetResult:
    dataset: str
    tools: int
    queries: int
    model: str = ""
    """The embedding model used (``auto`` resolves per dataset)."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    tokens: dict[str, Any] = field(default_factory=dict)
    no_tool_queries: int = 0
    """Queries labelled with no relevant tool: left out of the ranking metrics (``queries`` counts
    the rest); ``toolsift abstention-bench`` measures them."""
    groups: int = 0
    """Groups of the catalog's tools (``--group-by-tag``); 0 when its tools are ungrouped."""
    refused: dict[str, int] = field(default_factory=dict)
    """Per method, queries it refused (toolsift: over the router's length limit); they count as misses."""
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    """toolsift against each other method on the same queries: per-query differences of recall@K,
    their mean and the half-width of its 95% interval (paired)."""

    def value(self, method: str, metric: str, k: int | None, lang: str = "all") -> float:
        return float(self._row(method, metric, k, lang)["value"])

    def interval(self, method: str, metric: str, k: int | None, lang: str = "all") -> float:
        """Half-width of the 95% interval of ``value`` (0 when the results predate intervals)."""
        return float(self._row(method, metric, k, lang).get("ci95", 0.0))

    def _row(self, method: str, metric: str, k: int | None, lang: str) -> dict[str, Any]:
        for row in self.rows:
            if (row["method"], row["metric"], row["k"], row["lang"]) == (method, metric, k, lang):
                return row
        raise KeyError((method, metric, k, lang))

    def comparison(self, baseline: str, k: int, method: str = "toolsift") -> dict[str, Any] | None:
        """The paired recall@K comparison of ``method`` with ``baseline``, if it was measured."""
        for entry in self.comparisons:
            if (entry["method"], entry["baseline"], entry["metric"], entry["k"]) == (method, baseline, "recall", k):
                return entry
        return None

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(row["method"] for row in self.rows))

    @property
    def languages(self) -> list[str]:
        return list(dict.fromkeys(row["lang"] for row in self.rows))


DEFAULT_GROUP_WEIGHT = 0.5


def build_methods(
    dataset: Dataset, embedder: Embedder, cache: EmbeddingCache | None, names: Sequence[str]
) -> list[tuple[Method, float]]:
    """Each requested method, ready to rank, with its build time in seconds."""
    built: list[tuple[Method, float]] = []
    # The CJK-bigram BM25 line only matters where a real share of the queries is CJK text.
    cjk_share = sum(bool(cjk_bigrams(q.text)) for q in dataset.queries) / max(1, len(dataset.queries))
    has_cjk = cjk_share >= 0.05
    for name in names:
        started = time.perf_counter()
        if name == "toolsift":
            method: Method = ToolsiftMethod(dataset.catalog, embedder, cache)
        elif name == "toolsift-whole":
            method = ToolsiftMethod(dataset.catalog, embedder, cache, RankingConfig(split_intents=False), name)
        elif name.startswith("toolsift-groups"):  # toolsift-groups-0.5: group scores at that weight
            weight = float(name.removeprefix("toolsift-groups").removeprefix("-") or DEFAULT_GROUP_WEIGHT)
            method = ToolsiftMethod(dataset.catalog, embedder, cache, RankingConfig(group_weight=weight), name)
        elif name == "dense":
            method = DenseMethod(dataset.catalog, embedder, cache)
        elif name == "bm25":
            method = BM25Method(dataset.catalog)
        elif name == "bm25-cjk":
            if not has_cjk:
                continue
            method = BM25Method(dataset.catalog, cjk=True)
        elif name == "random":
            method = RandomMethod(dataset.catalog)
        else:
            raise ValueError(f"unknown method {name!r}")
        built.append((method, time.perf_counter() - started))
    return built


def run_accuracy(
    dataset: Dataset,
    embedder: Embedder,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    methods: Sequence[str] = ("toolsift", "dense", "bm25", "bm25-cjk", "random"),
    cache: EmbeddingCache | None = None,
    count_tokens: bool = True,
) -> DatasetResult:
    shared = CachingEmbedder(embedder)
    scored = dataset.with_tools
    texts = [query.text for query in scored]
    golds = [query.relevant for query in scored]
    languages = sorted({query.lang for query in scored})
    depth = max(MRR_DEPTH, *ks)
    result = DatasetResult(dataset.name, len(dataset.catalog), len(scored), embedder.name)
    result.no_tool_queries = len(dataset.queries) - len(scored)
    result.groups = len(dataset.catalog.groups())
    if {"toolsift", "dense"} & set(methods):
        # Embed every query once, up front and timed apart, so the methods that share the model
        # are timed on ranking alone and compare fairly with the lexical ones.
        started = time.perf_counter()
        shared.embed_queries(texts)
        seconds = time.perf_counter() - started
        result.timings["query-embedding"] = {
            "build_s": 0.0,
            "rank_s": round(seconds, 3),
            "ms_per_query": round(1000 * seconds / max(1, len(texts)), 3),
        }
    recalls: dict[str, dict[int, list[float]]] = {}
    for method, build_seconds in build_methods(dataset, shared, cache, methods):
        started = time.perf_counter()
        rankings = method.rank(texts, depth)
        rank_seconds = time.perf_counter() - started
        refused = int(getattr(method, "refused", 0))
        if refused:
            result.refused[method.name] = refused
        result.timings[method.name] = {
            "build_s": round(build_seconds, 3),
            "rank_s": round(rank_seconds, 3),
            "ms_per_query": round(1000 * rank_seconds / max(1, len(texts)), 3),
        }
        groups = [("all", list(range(len(texts))))]
        if len(languages) > 1:
            groups += [(lang, [i for i, q in enumerate(scored) if q.lang == lang]) for lang in languages]
        for lang, members in groups:
            values = per_query([rankings[i] for i in members], [golds[i] for i in members], ks)
            if lang == "all":
                recalls[method.name] = {k: values[("recall", k)] for k in ks}
            for (metric, k), scores in values.items():
                result.rows.append(
                    {
                        "dataset": dataset.name,
                        "method": method.name,
                        "lang": lang,
                        "metric": metric,
                        "k": k,
                        "value": round(mean(scores), 4),
                        "ci95": round(interval95(scores), 4),
                        "queries": len(members),
                    }
                )
        if count_tokens and method.name == "toolsift":
            result.tokens = token_savings(dataset, rankings, ks)
    result.comparisons = paired_comparisons(dataset.name, recalls, ks)
    return result


def paired_comparisons(
    dataset: str, recalls: dict[str, dict[int, list[float]]], ks: Sequence[int], method: str = "toolsift"
) -> list[dict[str, Any]]:
    """``method`` against every other method, recall@K per query on the same queries: the mean
    difference and its paired 95% interval. Pairing takes out what both methods share (the same
    hard and easy queries), which is the right interval for "is toolsift ahead of this baseline"."""
    if method not in recalls:
        return []
    comparisons = []
    for baseline, theirs in recalls.items():
        if baseline == method:
            continue
        for k in ks:
            differences = [a - b for a, b in zip(recalls[method][k], theirs[k], strict=True)]
            comparisons.append(
                {
                    "dataset": dataset,
                    "method": method,
                    "baseline": baseline,
                    "metric": "recall",
                    "k": k,
                    "difference": round(mean(differences), 4),
                    "ci95": round(interval95(differences), 4),
                    "queries": len(differences),
                }
            )
    return comparisons


def token_savings(dataset: Dataset, rankings: Sequence[Sequence[str]], ks: Sequence[int]) -> dict[str, Any]:
    from toolsift.router.tokens import ENCODING, SchemaTokens

    counter = SchemaTokens(dataset.catalog)
    per_k = {}
    for k in ks:
        mean = sum(counter.subset(ranked[:k]) for ranked in rankings) / max(1, len(rankings))
        per_k[str(k)] = {
            "mean_subset_tokens": round(mean, 1),
            "saving": round(1 - mean / counter.catalog_total, 4) if counter.catalog_total else 0.0,
        }
    return {"encoding": ENCODING, "catalog_tokens": counter.catalog_total, "per_k": per_k}
