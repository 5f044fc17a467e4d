"""Pinned tool definitions for live catalogs: what an upstream server may change without review.

Each server's tools are pinned by the hash of their definition (description, schema, annotations;
not the tags or prefix the servers file adds). The first time toolsift sees a server (no pins for
it yet), everything it lists is pinned: trust on first use, the operator having just added the
server. After that, with the server's ``policy: quarantine`` (the default), a tool whose definition
changed keeps serving its pinned definition, and a new tool is not served, until someone approves
them (``toolsift approve``, ``POST /admin/approve``); ``policy: accept`` pins changes as they come.

The pins live in a JSON file (``<servers file>.approvals.json`` unless ``TOOLSIFT_APPROVALS`` says
otherwise), written atomically; a process serving the servers re-reads it when it changes, so an
approval made by ``toolsift approve`` applies without a restart.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from filelock import FileLock

from toolsift.catalog import Tool
from toolsift.errors import CatalogError

NEW = "a tool the server did not list when approved"
HASHED_OUT = {"name", "tags", "group", "source"}
"""What the servers file decides (prefix, tags, group), not the server: a change there needs no review."""


def definition_hash(tool: Tool) -> str:
    body = tool.model_dump(mode="json", exclude=HASHED_OUT)
    return "sha256:" + hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class Held:
    """A tool in quarantine: ``changed`` (its pinned definition serves meanwhile) or ``new``."""

    server: str
    tool: str
    kind: str
    pinned: str | None
    current: str
    what: str
    upstream: str = ""
    """The server's own name for the tool."""
    definition: dict[str, Any] | None = None
    """The definition waiting for approval (what approving it pins)."""

    def record(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool, "kind": self.kind, "what": self.what,
                "pinned": self.pinned, "current": self.current}  # fmt: skip


class Approvals:
    """The pins of every server, read from and written to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._pins: dict[str, dict[str, dict[str, Any]]] = {}
        self._seen: float | None = None
        self._read = False
        self.reload()

    # -- the file ----------------------------------------------------------------------------

    def reload(self, *, force: bool = False) -> bool:
        """Read the file again if it changed (or ``force``); True when it did."""
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime == self._seen and self._read and not force:
            return False  # unchanged, or still absent
        pins: dict[str, dict[str, dict[str, Any]]] = {}
        if mtime is not None:
            try:
                document = orjson.loads(self.path.read_bytes())
                pins = document["servers"]
                assert isinstance(pins, dict)
            except (orjson.JSONDecodeError, KeyError, AssertionError, TypeError) as error:
                raise CatalogError(
                    f"the approvals file is not valid ({error})", source=str(self.path),
                    fix="Restore it from a backup, or delete it to pin every server's tools again as they are now",
                ) from None  # fmt: skip
        with self._lock:
            self._pins, self._seen, self._read = pins, mtime, True
        return True

    def _save(self) -> None:
        _write(self.path, {"servers": self._pins})
        self._seen = self.path.stat().st_mtime

    # -- pins --------------------------------------------------------------------------------

    def knows(self, server: str) -> bool:
        with self._lock:
            return server in self._pins

    def pinned(self, server: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self._pins.get(server, {}))

    def pin(self, server: str, tools: list[tuple[str, Tool]], by: str) -> list[str]:
        """Approve ``tools`` (upstream name, definition) of ``server`` as they are; the names pinned.
        Under the file's lock, on top of what is in the file now: another process's approval made
        meanwhile (``toolsift approve``, another worker) is kept, never overwritten."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            self.reload(force=True)
            with self._lock:
                pins = self._pins.setdefault(server, {})
                when = datetime.now(UTC).isoformat(timespec="seconds")
                for name, tool in tools:
                    pins[name] = {"hash": definition_hash(tool), "definition": tool.model_dump(mode="json"),
                                  "approved_at": when, "by": by}  # fmt: skip
                self._save()
        return [name for name, _ in tools]

    def review(self, server: str, tools: list[tuple[str, Tool]], accept: bool) -> tuple[list[Tool], list[Held]]:
        """What ``server``'s listed tools (upstream name, definition) may serve: the pinned
        definition of each, the listed one where it matches or the policy accepts it, and the
        tools held back. A server seen for the first time has everything pinned as it is."""
        if not self.knows(server) or accept:
            changed = [(name, tool) for name, tool in tools if self._hash_of(server, name) != definition_hash(tool)]
            if changed or not self.knows(server):
                self.pin(server, changed, by="first use" if not self.knows(server) else "policy: accept")
            return [tool for _, tool in tools], []
        pins = self.pinned(server)
        served: list[Tool] = []
        held: list[Held] = []
        for name, tool in tools:
            current = definition_hash(tool)
            pin = pins.get(name)
            if pin is None:
                held.append(Held(server, tool.name, "new", None, current, NEW, name, tool.model_dump(mode="json")))
            elif pin["hash"] == current:
                served.append(tool)
            else:
                approved = Tool.model_validate(pin["definition"]).model_copy(
                    update={"name": tool.name, "tags": tool.tags, "group": tool.group, "source": tool.source}
                )
                served.append(approved)
                what = _what_changed(approved, tool)
                held.append(
                    Held(server, tool.name, "changed", pin["hash"], current, what, name, tool.model_dump(mode="json"))
                )
        return served, held

    @property
    def held_path(self) -> Path:
        return self.path.with_name(self.path.name.removesuffix(".json") + ".held.json")

    def publish_held(self, held: list[Held]) -> None:
        """Write what a running service holds for approval, beside the pins: ``toolsift approve``
        pins exactly those definitions (a stdio server may list differently to another client)."""
        records = [{**h.record(), "upstream": h.upstream, "definition": h.definition} for h in held]
        _write(self.held_path, {"held": records})

    def read_held(self) -> list[dict[str, Any]] | None:
        """What a running service holds (None when none wrote it)."""
        try:
            held = orjson.loads(self.held_path.read_bytes())["held"]
        except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError):
            return None
        return held if isinstance(held, list) else None

    def _hash_of(self, server: str, name: str) -> str | None:
        with self._lock:
            pin = self._pins.get(server, {}).get(name)
        return None if pin is None else str(pin["hash"])


def _write(path: Path, document: dict[str, Any]) -> None:
    """``document`` as ``path``, atomically (a reader sees the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    with os.fdopen(handle, "wb") as out:
        out.write(body)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def _what_changed(before: Tool, after: Tool) -> str:
    parts = []
    if before.description != after.description:
        parts.append("description")
    if before.parameters != after.parameters:
        parts.append("parameters")
    if before.annotations != after.annotations:
        hints = before.annotations.to_mcp(), after.annotations.to_mcp()
        parts.append(f"annotations ({hints[0]} -> {hints[1]})")
    if before.examples != after.examples:
        parts.append("examples")
    return "changed: " + (", ".join(parts) or "definition")


def approvals_path(servers_file: Path, setting: Path | None) -> Path:
    return setting if setting is not None else servers_file.with_name(servers_file.name + ".approvals.json")
