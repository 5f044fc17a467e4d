"""Abstention: can a score threshold tell "no tool fits" from "this tool fits"?

The datasets hold no query without a tool, so each query is asked twice: once against the whole
catalog (answerable: its relevant tools are there) and once with its relevant tools taken out of
reach through the router's scope (no tool fits, by construction). For each threshold on the top
match's score (``min_score``), the figures are the share of answerable queries that keep a
relevant tool in the top K (recall kept) and the share of no-tool queries that return nothing
(abstained). Taking only the relevant tools out leaves their near-duplicates in, so the no-tool
side is a hard, pessimistic case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from toolsift.bench.datasets import Dataset
from toolsift.router import Router

THRESHOLDS = (0.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0)


def run_abstention(dataset: Dataset, router: Router, k: int = 5, thresholds: Sequence[float] = THRESHOLDS) -> dict[str, Any]:
    everything = np.arange(len(dataset.catalog), dtype=np.int64)
    answerable: list[tuple[float, bool]] = []  # (top score, a relevant tool in the top k)
    no_tool: list[float] = []
    for query in dataset.queries:
        result = router.route(query.text, k)
        found = bool(set(query.relevant) & set(result.names))
        answerable.append((result.matches[0].score if result.matches else float("-inf"), found))
        hidden = np.asarray(sorted(dataset.catalog.position(name) for name in query.relevant), dtype=np.int64)
        scope = np.setdiff1d(everything, hidden, assume_unique=True)
        blind = router.route(query.text, k, scope=scope)
        no_tool.append(blind.matches[0].score if blind.matches else float("-inf"))
    rows = []
    for threshold in thresholds:
        kept = [found and top >= threshold for top, found in answerable]
        rows.append({
            "min_score": threshold,
            "recall_kept": float(np.mean(kept)),
            "abstained": float(np.mean([top < threshold for top in no_tool])),
        })
    return {
        "dataset": dataset.name,
        "queries": len(dataset.queries),
        "k": k,
        "answerable_hit": float(np.mean([found for _, found in answerable])),
        "rows": rows,
    }


def abstention_table(results: Sequence[dict[str, Any]]) -> str:
    thresholds = [row["min_score"] for row in results[0]["rows"]]
    lines = [
        "| dataset | queries | " + " | ".join(f"min_score {t:g}" for t in thresholds) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in thresholds) + " |",
    ]
    for result in results:
        cells = [f"{row['recall_kept']:.2f} / {row['abstained']:.2f}" for row in result["rows"]]
        lines.append(f"| {result['dataset']} | {result['queries']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\nEach cell: hit rate kept on answerable queries / share of no-tool queries answered with nothing.\n"
