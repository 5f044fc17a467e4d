"""``Scope``: what one caller may see of one catalog. Every entrance (HTTP, MCP, the CLI) asks
it, and only it, whether a tool is visible: ranking, pinned tools, sessions, tool listings,
feedback, the curation views and error suggestions.

A scope is bound to the catalog it was made for; a reload makes new ones. Without tenants the
caller sees everything (``Scope.everything``); a tenant sees the positions its rules allow
(``toolsift.tenants.Tenants.scope``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from toolsift.catalog import Catalog, Tool, fingerprint_tools
from toolsift.types import IdArray


@dataclass(frozen=True, eq=False)
class Scope:
    catalog: Catalog
    ids: IdArray | None = None
    """Sorted catalog positions the caller may see; None: every tool."""

    @classmethod
    def everything(cls, catalog: Catalog) -> Scope:
        return cls(catalog, None)

    @classmethod
    def of(cls, catalog: Catalog, positions: IdArray) -> Scope:
        return cls(catalog, np.unique(np.asarray(positions, dtype=np.int64)))

    def __and__(self, other: Scope) -> Scope:
        """What both scopes allow (of the same catalog): a tenant's view under the operator's rules."""
        if other.ids is None:
            return self
        if self.ids is None:
            return other
        return Scope(self.catalog, np.intersect1d(self.ids, other.ids, assume_unique=True))

    @property
    def is_everything(self) -> bool:
        return self.ids is None

    def contains(self, tool: str | Tool) -> bool:
        """Whether the caller may see this tool (a catalog name; a name not in the catalog: no)."""
        name = tool.name if isinstance(tool, Tool) else tool
        if name not in self.catalog:
            return False
        return self.ids is None or self.catalog.position(name) in self._members

    def __len__(self) -> int:
        return len(self.catalog) if self.ids is None else int(self.ids.shape[0])

    @cached_property
    def _members(self) -> frozenset[int]:
        return frozenset(self.ids.tolist()) if self.ids is not None else frozenset()

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The visible tools, in catalog order."""
        if self.ids is None:
            return self.catalog.tools
        return tuple(self.catalog[int(position)] for position in self.ids.tolist())

    @cached_property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @cached_property
    def groups(self) -> dict[str, dict[str, int | str]]:
        """Each group with a visible tool: how many it has here and what it is for (a group
        without a description is described by its visible tools only)."""
        members: dict[str, list[str]] = {}
        for tool in self.tools:
            if tool.group is not None:
                members.setdefault(tool.group, []).append(tool.name)
        return {
            name: {"tools": len(found), "description": self.catalog.describe_group(name, sorted(found))}
            for name, found in sorted(members.items())
        }

    @cached_property
    def fingerprint(self) -> str:
        """The fingerprint of the catalog as this caller sees it (the catalog's own without tenants)."""
        return self.catalog.fingerprint if self.ids is None else fingerprint_tools(self.tools)
