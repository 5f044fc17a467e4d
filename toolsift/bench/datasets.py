"""Read a tool-selection dataset: ``tools.jsonl`` (a catalog) and ``queries.jsonl``
(``{"id", "query", "relevant": [tool names], "lang"}`` a line)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import orjson

from toolsift.catalog import Catalog, load_catalog
from toolsift.errors import CatalogError
from toolsift.router import within_query_limit


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
        return within_query_limit(self.text)


@dataclass(frozen=True)
class Dataset:
    name: str
    catalog: Catalog
    queries: tuple[Query, ...]

    def sample(self, limit: int | None, seed: int = 0) -> Dataset:
        """A seeded random subset of the queries (all of them when limit is None or larger)."""
        if limit is None or limit >= len(self.queries):
            return self
        chosen = sorted(random.Random(seed).sample(range(len(self.queries)), limit))
        return Dataset(self.name, self.catalog, tuple(self.queries[i] for i in chosen))

    @property
    def with_tools(self) -> tuple[Query, ...]:
        """The queries some tool answers: the ones ranking metrics are computed over."""
        return tuple(query for query in self.queries if query.relevant)

    @property
    def no_tool(self) -> tuple[Query, ...]:
        """The queries labelled with no relevant tool (nothing should be selected)."""
        return tuple(query for query in self.queries if not query.relevant)


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


def load_dataset(tools: str | Path, queries: str | Path, name: str | None = None) -> Dataset:
    catalog = load_catalog(tools)
    return Dataset(name or Path(tools).resolve().parent.name, catalog, load_queries(queries, catalog))


def find_datasets(root: str | Path) -> list[Path]:
    """Folders under root holding both tools.jsonl and queries.jsonl, sorted by name."""
    return sorted(
        folder
        for folder in Path(root).iterdir()
        if (folder / "tools.jsonl").is_file() and (folder / "queries.jsonl").is_file()
    )
