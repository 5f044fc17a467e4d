"""Read a tool-selection dataset: ``tools.jsonl`` (a catalog) and ``queries.jsonl``
(``{"id", "query", "relevant": [tool names], "lang"}`` a line)."""

from __future__ import annotations

import random
import re
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

    def grouped_by_tag(self, position: int) -> Dataset:
        """The dataset with each tool in the group its ``position``-th tag names (a dataset's
        natural grouping: apibench's task domain, Seal-Tools' field); a tool with fewer tags is
        left ungrouped. Tags become valid group names (other characters as ``_``)."""
        tools = [
            tool.model_copy(update={"group": group_name(tool.tags[position]) if len(tool.tags) > position else None})
            for tool in self.catalog
        ]
        return Dataset(self.name, Catalog(tools, source=self.catalog.source), self.queries)

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


def group_name(tag: str) -> str:
    """``tag`` as a group name (``^[A-Za-z0-9_.-]{1,64}$``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tag)[:64] or "_"


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
