"""Labelled requests: a ``queries.jsonl`` file (``{"id", "query", "relevant": [tool names], "lang"}``
a line) checked against a catalog. The benchmarks score routing on them, and the service's lint
report scores a catalog on them (``TOOLSIFT_LINT_QUERIES``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from toolsift.catalog.models import Catalog
from toolsift.errors import CatalogError
from toolsift.wire import MAX_QUERY_CHARS


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: tuple[str, ...]
    """The tools that answer the query; empty for a query no tool should answer ("no tool")."""
    lang: str = "en"

    @property
    def routable(self) -> bool:
        """Within the router's length limit: longer queries are refused, as the API refuses them."""
        return len(self.text.strip()) <= MAX_QUERY_CHARS


def load_queries(path: str | Path, catalog: Catalog) -> tuple[Query, ...]:
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise CatalogError("file not found", source=source, fix="Pass the path of a queries.jsonl file")
    queries: list[Query] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise CatalogError(f"invalid JSON ({error})", source=source, entry=where) from None
        if not isinstance(record, dict):
            raise CatalogError("expected a JSON object", source=source, entry=where)
        for field in ("query", "relevant"):
            if field not in record:
                raise CatalogError("required field is missing", source=source, entry=where, field=field)
        text, relevant = record["query"], record["relevant"]
        if not isinstance(text, str) or not text.strip():
            raise CatalogError("must be a non-empty string", source=source, entry=where, field="query")
        if not isinstance(relevant, list) or not all(isinstance(name, str) for name in relevant):
            raise CatalogError("must be a list of tool names", source=source, entry=where, field="relevant")
        unknown = [name for name in relevant if name not in catalog]
        if unknown:
            raise CatalogError(
                f"names tools that are not in the catalog: {', '.join(unknown[:5])}",
                source=source,
                entry=where,
                field="relevant",
                fix="Every relevant name must be a tool name in tools.jsonl",
            )
        queries.append(Query(str(record.get("id", number)), text, tuple(relevant), str(record.get("lang") or "und")))
    return tuple(queries)
