"""Abstention: can a score threshold tell "no tool fits" from "this tool fits"?

Each query with relevant tools is asked twice: once against the whole catalog (answerable: its
relevant tools are there) and once with its relevant tools taken out of reach through the router's
scope (no tool fits, by construction). Queries the dataset labels with no tool (``relevant: []``)
are asked once, against the whole catalog, as real no-tool requests. For each threshold on the top
match's score (``min_score``), the figures are the share of answerable queries that keep a relevant
tool in the top K (recall kept), the share of constructed no-tool queries that return nothing
(abstained) and, where the dataset has them, the same for its labelled no-tool queries (abstained
native). Taking only the relevant tools out leaves their near-duplicates in, so the constructed
side is a hard, pessimistic case. Queries over the router's length limit are left out (the router
refuses them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from toolsift.bench.datasets import Dataset
from toolsift.router import Router, Scope

THRESHOLDS = (0.0, 2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0)


def run_abstention(
    dataset: Dataset, router: Router, k: int = 5, thresholds: Sequence[float] = THRESHOLDS
) -> dict[str, Any]:
    everything = np.arange(len(dataset.catalog), dtype=np.int64)
    answerable: list[tuple[float, bool]] = []  # (top score, a relevant tool in the top k)
    no_tool: list[float] = []
    native: list[float] = []
    for query in dataset.queries:
        if not query.routable:
            continue
        result = router.route(query.text, k)
        top = result.matches[0].score if result.matches else float("-inf")
        if not query.relevant:
            native.append(top)
            continue
        answerable.append((top, bool(set(query.relevant) & set(result.names))))
        hidden = np.asarray(sorted(dataset.catalog.position(name) for name in query.relevant), dtype=np.int64)
        scope = np.setdiff1d(everything, hidden, assume_unique=True)
        blind = router.route(query.text, k, scope=Scope.of(router.catalog, scope))
        no_tool.append(blind.matches[0].score if blind.matches else float("-inf"))
    rows = []
    for threshold in thresholds:
        row = {
            "min_score": threshold,
            "recall_kept": _share(found and top >= threshold for top, found in answerable),
            "abstained": _share(top < threshold for top in no_tool),
        }
        if native:
            row["abstained_native"] = _share(top < threshold for top in native)
        rows.append(row)
    return {
        "dataset": dataset.name,
        "queries": len(answerable),
        "no_tool_queries": len(native),
        "left_out_too_long": sum(not query.routable for query in dataset.queries),
        "k": k,
        "answerable_hit": _share(found for _, found in answerable),
        "rows": rows,
    }


def _share(flags: Iterable[bool]) -> float:
    values = list(flags)
    return float(np.mean(values)) if values else 0.0


def abstention_table(results: Sequence[dict[str, Any]]) -> str:
    thresholds = [row["min_score"] for row in results[0]["rows"]]
    native = any(result.get("no_tool_queries") for result in results)
    lines = [
        "| dataset | queries | " + " | ".join(f"min_score {t:g}" for t in thresholds) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in thresholds) + " |",
    ]
    for result in results:
        cells = [
            f"{row['recall_kept']:.2f} / {row['abstained']:.2f}"
            + (f" / {row['abstained_native']:.2f}" if "abstained_native" in row else "")
            for row in result["rows"]
        ]
        count = f"{result['queries']}" + (
            f" + {result['no_tool_queries']} no-tool" if result.get("no_tool_queries") else ""
        )
        lines.append(f"| {result['dataset']} | {count} | " + " | ".join(cells) + " |")
    legend = "hit rate kept on answerable queries / share of no-tool queries (relevant tools taken out) answered with nothing"
    if native:
        legend += " / the same for the dataset's queries labelled with no tool (where it has them)"
    return "\n".join(lines) + f"\n\nEach cell: {legend}.\n"
