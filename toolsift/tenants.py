"""Tenants: who may see which tools. Visibility is applied before ranking, and every answer a
tenant gets (matches, tool lists, tag counts, error suggestions, sessions) comes from its own tools.

A tenants file (YAML or JSON)::

    tenants:
      acme:
        key_sha256: 9f86d081884c7d65...   # sha256 of the API key (or `key:` in clear, for tests)
        tags: {any: [crm, email], exclude: [admin]}   # or a list: any of these tags
        access: read_only                   # optional: only read-only tools
        tools: [send_email, search_emails]  # optional: only these names (after the tag rules)
      globex:
        key_sha256: ...
        tags: [finance]

Clients send ``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``). Once a tenants file is
set, requests without a valid key get 401.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from cachetools import LRUCache
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolsift.catalog import Catalog
from toolsift.catalog.loader import read_document
from toolsift.errors import TenantsFileError, TenantUnauthorized
from toolsift.router import Access, Caller, Router, Scope, TagRules


class _TagsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    any: list[str] = Field(default_factory=list)
    all: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)


class TenantSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    key: str | None = Field(default=None, min_length=16)
    key_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    tags: _TagsIn | list[str] | None = None
    access: Access = "any"
    tools: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _one_key(self) -> TenantSpec:
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give either 'key_sha256' (recommended) or 'key'")
        return self

    @property
    def digest(self) -> bytes:
        if self.key_sha256 is not None:
            return bytes.fromhex(self.key_sha256)
        assert self.key is not None
        return hashlib.sha256(self.key.encode()).digest()

    def rules(self) -> TagRules:
        return TagRules.from_spec(self.tags, self.access)


@dataclass
class Tenants:
    specs: list[TenantSpec]

    def __post_init__(self) -> None:
        self._scopes: LRUCache[tuple[str, str], Scope] = LRUCache(4 * len(self.specs) + 4)  # a few catalogs
        self._lock = threading.Lock()

    def identify(self, key: str | None) -> TenantSpec:
        """The tenant whose key this is; compares digests in constant time."""
        if not key:
            raise TenantUnauthorized()
        digest = hashlib.sha256(key.encode()).digest()
        found = None
        for spec in self.specs:
            if hmac.compare_digest(digest, spec.digest):
                found = spec
        if found is None:
            raise TenantUnauthorized()
        return found

    def scope(self, spec: TenantSpec, router: Router) -> Scope:
        """What the tenant may see of this router's catalog (cached per catalog)."""
        cache_key = (spec.name, router.catalog.fingerprint)
        with self._lock:
            found = self._scopes.get(cache_key)
        if found is None:
            found = router.scope_for(spec.rules(), spec.tools)
            with self._lock:
                self._scopes[cache_key] = found
        return found

    def caller(self, spec: TenantSpec, router: Router) -> Caller:
        """The tenant as a caller: its scope, its feedback, its own sessions."""
        return Caller(self.scope(spec, router), pool=spec.name, namespace=spec.name)

    def problems(self, catalog: Catalog) -> list[str]:
        """What in the tenants file this catalog does not have: a tag no tool carries, a tool name
        it lacks (each with the nearest known ones), a tenant left with no tool at all. A typo
        there silently leaves a tenant without tools, so the service says so at start-up."""
        found = []
        for spec in self.specs:
            rules = spec.rules()
            for tag in dict.fromkeys(rules.tags()):
                if tag not in catalog.rule_tags:
                    found.append(f"tenant '{spec.name}': no tool has the tag '{tag}'{_nearest(tag, catalog.rule_tags)}")
            for name in spec.tools:
                if name not in catalog:
                    found.append(f"tenant '{spec.name}': no tool is named '{name}'{_nearest(name, catalog.names)}")
            if not any(rules.permits(tool) and (not spec.tools or tool.name in spec.tools) for tool in catalog):
                found.append(f"tenant '{spec.name}' sees no tool of this catalog ({len(catalog)} tools)")
        return found


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    """The API key a request's headers carry: ``X-API-Key``, else ``Authorization: Bearer <key>``
    (header names in lower case, as ASGI and the MCP SDK give them)."""
    scheme, _, token = (headers.get("authorization") or "").partition(" ")
    return headers.get("x-api-key") or (token.strip() if scheme.lower() == "bearer" else None)


def parse_tenants(document: Any, source: str = "<data>") -> Tenants:
    entries = document.get("tenants") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise TenantsFileError(
            "no tenants listed", source=source, fix="Add a 'tenants' mapping: name -> {key_sha256, tags}"
        )
    specs = []
    for name, entry in entries.items():
        try:
            specs.append(TenantSpec.model_validate({"name": str(name), **(entry or {})}))
        except ValidationError as error:
            first = error.errors()[0]
            raise TenantsFileError(
                first["msg"],
                source=source,
                entry=f"tenant '{name}'",
                field=".".join(str(p) for p in first["loc"]) or None,
                fix="Each tenant needs key_sha256 (or key) and may have tags, access, tools",
            ) from None
    digests = [spec.digest for spec in specs]
    if len(set(digests)) != len(digests):
        raise TenantsFileError("two tenants share a key", source=source, fix="Give every tenant its own key")
    return Tenants(specs)


def _nearest(word: str, known: Iterable[str]) -> str:
    close = get_close_matches(word, sorted(known), n=3)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def load_tenants(path: str | Path) -> Tenants:
    document, source = read_document(path, "tenants file", TenantsFileError)
    return parse_tenants(document, source)
