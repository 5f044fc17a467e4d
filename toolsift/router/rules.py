"""Tag rules, applied before ranking: they decide which tools may be ranked at all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolsift.catalog import GROUP_TAG_PREFIX, Catalog, Tool
from toolsift.errors import InvalidQuery, UnknownTag
from toolsift.types import IdArray
from toolsift.wire import ACCESS_POLICIES as ACCESS_POLICIES
from toolsift.wire import Access as Access


def allows_access(tool: Tool, access: Access) -> bool:
    """The read-only vs mutating policy, from the tool's MCP annotations.

    ``read_only``: only tools annotated ``readOnlyHint: true``. ``non_destructive``: read-only
    tools plus those annotated ``destructiveHint: false``. As in MCP, a tool without
    annotations is assumed to be able to change things, so it passes neither policy."""
    if access == "any":
        return True
    hints = tool.annotations
    if hints.read_only:
        return True
    return access == "non_destructive" and hints.destructive is False


_ACCESS_HINTS = {
    "read_only": "readOnlyHint: true",
    "non_destructive": "readOnlyHint: true or destructiveHint: false",
}


def _as_tuple(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = tags.split(",")
    return tuple(dict.fromkeys(tag.strip() for tag in tags if tag.strip()))


@dataclass(frozen=True)
class TagRules:
    """``any_of``: a tool needs at least one of these tags. ``all_of``: it needs every one.
    ``exclude``: it must have none of these. ``access``: the read-only vs mutating policy
    (see ``allows_access``). Empty rules allow every tool."""

    any_of: tuple[str, ...] = ()
    all_of: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    access: Access = "any"

    def __post_init__(self) -> None:
        if self.access not in ACCESS_POLICIES:
            raise InvalidQuery("access", f"must be one of {', '.join(ACCESS_POLICIES)}, got {self.access!r}")

    @classmethod
    def parse(
        cls,
        any_of: Iterable[str] | str | None = None,
        all_of: Iterable[str] | str | None = None,
        exclude: Iterable[str] | str | None = None,
        access: Access = "any",
    ) -> TagRules:
        """Build rules from lists or comma-separated strings."""
        return cls(_as_tuple(any_of), _as_tuple(all_of), _as_tuple(exclude), access)

    @classmethod
    def from_spec(cls, tags: Any, access: Access = "any") -> TagRules:
        """Rules from a request's ``tags``: None, a list (any of these), or a mapping or object
        with ``any``, ``all`` and ``exclude`` lists."""
        if tags is None:
            return cls(access=access)
        if isinstance(tags, list | tuple | str):
            return cls.parse(any_of=tags, access=access)
        if isinstance(tags, Mapping):
            return cls.parse(tags.get("any"), tags.get("all"), tags.get("exclude"), access=access)
        return cls.parse(tags.any, tags.all, tags.exclude, access=access)

    @property
    def empty(self) -> bool:
        return not (self.any_of or self.all_of or self.exclude) and self.access == "any"

    def tags(self) -> tuple[str, ...]:
        return self.any_of + self.all_of + self.exclude

    def violation(self, tool: Tool) -> str | None:
        """The first rule ``tool`` breaks, in words (None when the rules allow it)."""
        carried = set(tool.rule_tags)
        if self.any_of and not carried & set(self.any_of):
            return f"tags.any asks for one of {', '.join(self.any_of)} and it carries none"
        missing = [tag for tag in self.all_of if tag not in carried]
        if missing:
            return f"tags.all asks for {', '.join(self.all_of)} and it lacks {', '.join(missing)}"
        excluded = [tag for tag in self.exclude if tag in carried]
        if excluded:
            return f"tags.exclude drops tools tagged {', '.join(excluded)}"
        if not allows_access(tool, self.access):
            reason = f"access {self.access} allows only tools annotated {_ACCESS_HINTS[self.access]}"
            if tool.source:  # a tool an MCP server serves
                reason += (
                    f" (server '{tool.source}''s own hints count only when the servers file marks it trusted: true, "
                    "or lists the tool under read_only)"
                )
            return reason
        return None

    def permits(self, tool: Tool) -> bool:
        return self.violation(tool) is None


@dataclass
class TagIndex:
    """For each tag, the sorted ids of the tools carrying it; a group is the tag ``group:<name>``
    (``Tool.rule_tags``)."""

    catalog: Catalog
    _ids: dict[str, IdArray] = field(default_factory=dict)
    _access: dict[str, IdArray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        grouped: dict[str, list[int]] = {}
        for position, tool in enumerate(self.catalog):
            for tag in tool.rule_tags:
                grouped.setdefault(tag, []).append(position)
        self._ids = {tag: np.asarray(ids, dtype=np.int64) for tag, ids in grouped.items()}
        self._access = {
            policy: np.asarray(
                [p for p, tool in enumerate(self.catalog) if allows_access(tool, policy)],  # type: ignore[arg-type]
                dtype=np.int64,
            )
            for policy in ACCESS_POLICIES
            if policy != "any"
        }

    def ids(self, tag: str) -> IdArray:
        try:
            return self._ids[tag]
        except KeyError:
            raise UnknownTag(tag, self._ids) from None

    def visible_tags(self, scope: IdArray | None, *, groups: bool = False) -> dict[str, int]:
        """Each tag carried by a tool in ``scope`` (all tools when None), with its count there;
        with ``groups``, each group (``group:<name>``) too."""
        counts = {
            tag: int(ids.shape[0] if scope is None else np.intersect1d(ids, scope, assume_unique=True).shape[0])
            for tag, ids in self._ids.items()
            if groups or not tag.startswith(GROUP_TAG_PREFIX)
        }
        return {tag: count for tag, count in sorted(counts.items()) if count}

    def allowed(self, rules: TagRules, scope: IdArray | None = None) -> IdArray | None:
        """Sorted ids the rules allow within ``scope`` (a tenant's visible tools; None: all), or
        None when nothing restricts.

        Raises UnknownTag for a tag no tool in scope carries: a typo must not silently allow or
        block everything, and the error names only tags from the scope."""
        if scope is not None:
            for tag in rules.tags():
                carriers = self._ids.get(tag)
                if carriers is None or not np.isin(carriers, scope, assume_unique=True).any():
                    raise UnknownTag(tag, self.visible_tags(scope, groups=True))  # named from the scope only
        if rules.empty:
            return scope
        for tag in rules.tags():
            self.ids(tag)
        allowed: IdArray = np.arange(len(self.catalog), dtype=np.int64) if scope is None else scope
        if rules.any_of:  # within the scope: a tenant's rule never reaches past its tools
            allowed = np.intersect1d(allowed, _union(self.ids(tag) for tag in rules.any_of), assume_unique=True)
        for tag in rules.all_of:
            allowed = np.intersect1d(allowed, self.ids(tag), assume_unique=True)
        if rules.exclude:
            allowed = np.setdiff1d(allowed, _union(self.ids(tag) for tag in rules.exclude), assume_unique=True)
        if rules.access != "any":
            allowed = np.intersect1d(allowed, self._access[rules.access], assume_unique=True)
        return allowed


def _union(arrays: Iterable[IdArray]) -> IdArray:
    collected: Sequence[IdArray] = list(arrays)
    return np.unique(np.concatenate(collected)) if collected else np.empty(0, dtype=np.int64)
