"""Tag rules, applied before ranking: they decide which tools may be ranked at all."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from toolsift.catalog import Catalog
from toolsift.errors import UnknownTag
from toolsift.types import IdArray


def _as_tuple(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = tags.split(",")
    return tuple(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


@dataclass(frozen=True)
class TagRules:
    """``any_of``: a tool needs at least one of these tags. ``all_of``: it needs every one.
    ``exclude``: it must have none of these. Empty rules allow every tool."""

    any_of: tuple[str, ...] = ()
    all_of: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        any_of: Iterable[str] | str | None = None,
        all_of: Iterable[str] | str | None = None,
        exclude: Iterable[str] | str | None = None,
    ) -> TagRules:
        """Build rules from lists or comma-separated strings."""
        return cls(_as_tuple(any_of), _as_tuple(all_of), _as_tuple(exclude))

    @property
    def empty(self) -> bool:
        return not (self.any_of or self.all_of or self.exclude)

    def tags(self) -> tuple[str, ...]:
        return self.any_of + self.all_of + self.exclude


@dataclass
class TagIndex:
    """For each tag, the sorted ids of the tools carrying it."""

    catalog: Catalog
    _ids: dict[str, IdArray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        grouped: dict[str, list[int]] = {}
        for position, tool in enumerate(self.catalog):
            for tag in tool.tags:
                grouped.setdefault(tag, []).append(position)
        self._ids = {tag: np.asarray(ids, dtype=np.int64) for tag, ids in grouped.items()}

    def ids(self, tag: str) -> IdArray:
        try:
            return self._ids[tag]
        except KeyError:
            raise UnknownTag(tag, self._ids) from None

    def allowed(self, rules: TagRules) -> IdArray | None:
        """Sorted ids the rules allow, or None when the rules allow everything.

        Raises UnknownTag for a tag no tool carries: a typo must not silently allow or block
        everything."""
        if rules.empty:
            return None
        for tag in rules.tags():
            self.ids(tag)
        allowed: IdArray = np.arange(len(self.catalog), dtype=np.int64)
        if rules.any_of:
            allowed = _union(self.ids(tag) for tag in rules.any_of)
        for tag in rules.all_of:
            allowed = np.intersect1d(allowed, self.ids(tag), assume_unique=True)
        if rules.exclude:
            allowed = np.setdiff1d(allowed, _union(self.ids(tag) for tag in rules.exclude), assume_unique=True)
        return allowed


def _union(arrays: Iterable[IdArray]) -> IdArray:
    collected: Sequence[IdArray] = list(arrays)
    return np.unique(np.concatenate(collected)) if collected else np.empty(0, dtype=np.int64)
