"""Read a tool-selection dataset: ``tools.jsonl`` (a catalog) and ``queries.jsonl``
(``{"id", "query", "relevant": [tool names], "lang"}`` a line)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from toolsift.catalog import Catalog, load_catalog
from toolsift.catalog.queries import Query, load_queries

__all__ = ["Dataset", "Query", "find_datasets", "load_dataset", "load_queries"]


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
