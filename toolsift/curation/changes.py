"""What changed between two versions of a catalog: the tools added, removed and changed (and in
what), and the labelled requests that now route differently (``toolsift diff``, the page's "What
changed", ``GET /admin/changes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolsift.catalog import Catalog, Tool
from toolsift.router import Router

FIELDS = ("description", "parameters", "tags", "group", "annotations", "examples")
"""What a change to a tool is said to touch (its name is its identity)."""


def tool_changes(before: Catalog, after: Catalog) -> dict[str, Any]:
    """The tools only ``after`` has, those only ``before`` has, and those in both whose
    definitions differ, with the fields that differ."""
    changed: dict[str, list[str]] = {}
    for tool in after:
        old = before.get(tool.name)
        if old is not None and before.digest(tool.name) != after.digest(tool.name):
            changed[tool.name] = _fields(old, tool) or ["other"]
    return {
        "before": before.fingerprint,
        "after": after.fingerprint,
        "added": sorted(name for name in after.names if name not in before),
        "removed": sorted(name for name in before.names if name not in after),
        "changed": dict(sorted(changed.items())),
    }


def rerouted(
    before: Router, after: Router, queries: Sequence[tuple[str, Sequence[str]]], k: int = 5
) -> list[dict[str, Any]]:
    """The labelled requests whose top ``k`` differ between the two routers: what each gave, and
    whether the tools they name were found before and after."""
    found = []
    texts = [text for text, _ in queries]
    olds = before.route_many(texts, k) if texts else []
    news = after.route_many(texts, k) if texts else []
    for (text, relevant), old, new in zip(queries, olds, news, strict=True):
        if old.names == new.names:
            continue
        wanted = set(relevant)
        found.append({
            "query": text, "relevant": list(relevant), "before": old.names, "after": new.names,
            "hit_before": bool(wanted & set(old.names)), "hit_after": bool(wanted & set(new.names)),
        })  # fmt: skip
    return found


def compare(
    before: Router, after: Router, queries: Sequence[tuple[str, Sequence[str]]] = (), k: int = 5
) -> dict[str, Any]:
    """``tool_changes`` of the two routers' catalogs, and the requests they route differently."""
    changes = tool_changes(before.catalog, after.catalog)
    moved = rerouted(before, after, queries, k)
    return {
        **changes,
        "queries": len(queries),
        "k": k,
        "rerouted": moved,
        "fixed": sum(entry["hit_after"] and not entry["hit_before"] for entry in moved),
        "broken": sum(entry["hit_before"] and not entry["hit_after"] for entry in moved),
    }


def _fields(old: Tool, new: Tool) -> list[str]:
    first, second = old.model_dump(mode="json"), new.model_dump(mode="json")
    return [field for field in FIELDS if first.get(field) != second.get(field)]
