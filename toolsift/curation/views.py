"""What the curation page shows beyond the findings: one tool's page, and a map of the catalog.

- ``tool_page``: a tool's definition in every output format with its token cost in each, its
  findings, its nearest neighbours to the router (cosine of the tool vectors), and how often
  feedback named it.
- ``catalog_map``: every visible tool placed in 2-D by the first two principal components of the
  tool vectors (what the router compares), its token cost, and the confusable pairs to link.
- ``FindingsView``: a report's findings as one caller may read them, indexed once (by tool, by
  filter) so that a page of findings or a tool's page costs a lookup, not a pass over every
  finding of a large catalog while routes wait for the interpreter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import orjson

from toolsift.curation.lint import SEVERITIES, Finding, LintReport, Severity, visible_findings
from toolsift.router import OUTPUT_FORMATS, Router, Scope, format_tool
from toolsift.types import IdArray

NEIGHBOURS = 5


class FindingsView:
    """``report``'s findings that a caller with ``scope`` may read (``visible_findings``: none
    about another tenant's tools), with their counts, indexed by tool and by filter."""

    def __init__(self, report: LintReport, scope: Scope) -> None:
        self.report = report
        self.everything = scope.is_everything
        self.findings = visible_findings(report.findings, scope)
        self.counts = {severity: 0 for severity in SEVERITIES}
        checks: dict[str, int] = {}
        self._by_tool: dict[str, list[Finding]] = {}
        for finding in self.findings:
            self.counts[finding.severity] += 1
            checks[finding.code] = checks.get(finding.code, 0) + 1
            for name in dict.fromkeys(finding.tools):
                self._by_tool.setdefault(name, []).append(finding)
        self.checks = dict(sorted(checks.items()))
        names = None if self.everything else set(scope.names)
        self.tools = report.tools if names is None else len(names)
        self.schema_tokens = {n: c for n, c in report.schema_tokens.items() if names is None or n in names}
        accuracy = report.per_tool_accuracy
        self.per_tool_accuracy = (
            accuracy if accuracy is None or names is None else {n: a for n, a in accuracy.items() if n in names}
        )
        """Of the visible tools only (another tenant's tool names are not for this caller)."""
        self._chosen: dict[tuple[str | None, str | None, str | None], list[Finding]] = {}
        self._json: dict[int, dict[str, Any]] = {}
        self.serialised = {
            "schema_tokens": orjson.Fragment(orjson.dumps(self.schema_tokens, option=orjson.OPT_SORT_KEYS)),
            "per_tool_accuracy": orjson.Fragment(orjson.dumps(self.per_tool_accuracy, option=orjson.OPT_SORT_KEYS)),
        }
        """The large, unchanging parts of a page of findings, serialised once (orjson fragments)."""

    def for_tool(self, name: str) -> list[dict[str, Any]]:
        return self.as_json(self._by_tool.get(name, []))

    def as_json(self, findings: Sequence[Finding]) -> list[dict[str, Any]]:
        """``findings`` (of this view) as JSON objects, each converted once."""
        rows = []
        for finding in findings:
            row = self._json.get(id(finding))
            if row is None:
                row = self._json[id(finding)] = asdict(finding)
            rows.append(row)
        return rows

    def chosen(self, severity: Severity | None, check: str | None, at_least: Severity | None) -> list[Finding]:
        """The findings of ``severity`` (or any), ``check`` (or any), ``at_least`` this severe."""
        key = (severity, check, at_least)
        found = self._chosen.get(key)
        if found is None:
            worst = len(SEVERITIES) if at_least is None else SEVERITIES.index(at_least)
            found = [
                f
                for f in self.findings
                if (severity is None or f.severity == severity)
                and (check is None or f.code == check)
                and SEVERITIES.index(f.severity) <= worst
            ]
            if len(self._chosen) < MAX_FILTERS:  # checks are a short list; a cap all the same
                self._chosen[key] = found
        return found


MAX_FILTERS = 256


def tool_page(
    router: Router,
    name: str,
    scope: Scope,
    findings: FindingsView,
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
        "findings": findings.for_tool(tool.name),
        "neighbours": neighbours(router, tool.name, scope),
        "feedback": {"requests": len(feedback), "recent": list(feedback[-5:])},
        "accuracy": (findings.report.per_tool_accuracy or {}).get(tool.name),
    }


def neighbours(router: Router, name: str, scope: Scope, count: int = NEIGHBOURS) -> list[dict[str, Any]]:
    """The tools whose vectors are closest to ``name``'s, within ``scope`` (the index's own
    search: no copy of the catalog's vectors per page)."""
    position = router.catalog.position(name)
    index = router.index.vectors
    vector = index.vectors(np.asarray([position], dtype=np.int64))[0]
    scores, ids = index.search(vector, count + 1, allowed=scope.ids)
    found = [(float(score), int(i)) for score, i in zip(scores, ids, strict=True) if int(i) != position][:count]
    return [{"name": router.catalog[i].name, "cosine": round(score, 4)} for score, i in found]


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
    """``catalog_map``'s document (made without usage: every feedback count 0) with its feedback
    column set from ``usage`` (the projection, the costly part, does not change with feedback):
    the rows of the tools named in ``usage`` are replaced, the others shared."""
    used = {name: count for name, count in usage.items() if count}
    if not used:
        return document
    rows = list(document["tools"])
    for position, row in enumerate(rows):
        count = used.get(row[0])
        if count:
            rows[position] = [*row[:5], count, *row[6:]]
    return {**document, "tools": rows}


def _positions(router: Router, scope: Scope) -> IdArray:
    return np.arange(len(router.catalog), dtype=np.int64) if scope.ids is None else scope.ids
