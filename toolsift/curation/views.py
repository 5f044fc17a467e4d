"""What the curation page shows beyond the findings: one tool's page, and a map of the catalog.

- ``tool_page``: a tool's definition in every output format with its token cost in each, its
  findings, its nearest neighbours to the router (cosine of the tool vectors), and how often
  feedback named it.
- ``catalog_map``: every visible tool placed in 2-D by the first two principal components of the
  tool vectors (what the router compares), its token cost, and the confusable pairs to link.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import orjson

from toolsift.curation.lint import LintReport, visible_findings
from toolsift.router import OUTPUT_FORMATS, Router, Scope, format_tool
from toolsift.types import IdArray

NEIGHBOURS = 5


def tool_page(
    router: Router,
    name: str,
    scope: Scope,
    report: LintReport,
    count_tokens: Callable[[str], int],
    feedback: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything the page shows about the tool ``name`` (a catalog name, visible in ``scope``)."""
    tool = router.catalog.get(name)
    assert tool is not None
    formats = {fmt: format_tool(tool, fmt) for fmt in OUTPUT_FORMATS}
    return {
        "name": tool.name,
        "tags": list(tool.tags),
        "group": tool.group,
        "examples": list(tool.examples),
        "formats": formats,
        "tokens": {fmt: count_tokens(orjson.dumps(definition).decode()) for fmt, definition in formats.items()},
        # none that names a tool the caller cannot see (another tenant's)
        "findings": [asdict(f) for f in visible_findings(report.findings, scope) if tool.name in f.tools],
        "neighbours": neighbours(router, tool.name, scope),
        "feedback": {"requests": len(feedback), "recent": list(feedback[-5:])},
        "accuracy": (report.per_tool_accuracy or {}).get(tool.name),
    }


def neighbours(router: Router, name: str, scope: Scope, count: int = NEIGHBOURS) -> list[dict[str, Any]]:
    """The tools whose vectors are closest to ``name``'s, within ``scope``."""
    position = router.catalog.position(name)
    ids = _positions(router, scope)
    ids = ids[ids != position]
    if not len(ids):
        return []
    vectors = router.index.vectors.vectors(ids)
    cosines = vectors @ router.index.vectors.vectors(np.asarray([position], dtype=np.int64))[0]
    best = np.argsort(-cosines, kind="stable")[:count]
    return [{"name": router.catalog[int(ids[i])].name, "cosine": round(float(cosines[i]), 4)} for i in best]


def catalog_map(
    router: Router, scope: Scope, report: LintReport, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """2-D coordinates (PCA of the tool vectors) of the visible tools, each with its token cost,
    its recall over labelled queries (when the report has them, else null) and how many feedback
    requests name it; and the confusable pairs among them."""
    ids = _positions(router, scope)
    names = [router.catalog[int(i)].name for i in ids]
    points = _projection(router.index.vectors.vectors(ids)) if len(ids) else np.zeros((0, 2))
    visible = set(names)
    pairs = [list(f.tools) for f in report.findings if f.code == "confusable-pair" and set(f.tools) <= visible]
    pairs += [pair[:2] for f in report.findings if f.code == "confusable-cluster" for pair in f.details["pairs"]
              if set(pair[:2]) <= visible]  # fmt: skip
    accuracy = report.per_tool_accuracy or {}
    recall = next((key for key in next(iter(accuracy.values()), {}) if key.startswith("recall@")), None)
    usage = usage or {}
    return {
        "axes": "first two principal components of the tool vectors, scaled to [-1, 1]",
        "columns": ["name", "x", "y", "tokens", recall or "recall", "feedback", "group"],
        "tools": [
            [
                name,
                round(float(x), 4),
                round(float(y), 4),
                report.schema_tokens.get(name, 0),
                round(accuracy[name][recall], 3) if recall and name in accuracy else None,
                usage.get(name, 0),
                router.catalog[int(position)].group,
            ]
            for name, position, (x, y) in zip(names, ids.tolist(), points, strict=True)
        ],
        "pairs": pairs,
    }


def _projection(vectors: np.ndarray) -> np.ndarray:
    centred = vectors.astype(np.float64) - vectors.mean(axis=0, dtype=np.float64)
    if len(vectors) < 2:
        return np.zeros((len(vectors), 2))
    # The covariance's top eigenvectors (d x d, cheap for any number of tools), not an SVD of n x d.
    _, eigenvectors = np.linalg.eigh(centred.T @ centred)
    projected = centred @ eigenvectors[:, ::-1][:, :2]
    spread = np.abs(projected).max(axis=0)
    scaled: np.ndarray = projected / np.where(spread > 0, spread, 1.0)
    return scaled


def with_feedback(document: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    """``catalog_map``'s document with its feedback column set from ``usage`` (the projection,
    the costly part, does not change with feedback)."""
    rows = [[*row[:5], usage.get(row[0], 0), *row[6:]] for row in document["tools"]]
    return {**document, "tools": rows}


def _positions(router: Router, scope: Scope) -> IdArray:
    return np.arange(len(router.catalog), dtype=np.int64) if scope.ids is None else scope.ids
