"""One tune of an index at a time, and its status where every worker can read it.

``<index>.tune.lock`` is held by the process that tunes (``toolsift tune``, or the one
``POST /admin/tune`` started): a second tune is refused at once, not queued. ``<index>.tune.json``
says how the last one went: ``running`` (with its pid and start), ``done`` (its report) or
``failed`` (the error); a ``running`` whose lock is free was interrupted (the process died).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from toolsift.errors import TuningRefused


def lock_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".tune.lock")


def status_path(index_path: Path) -> Path:
    return index_path.with_name(index_path.name + ".tune.json")


@contextlib.contextmanager
def tune_lock(index_path: Path) -> Iterator[None]:
    """Hold the index's tune lock for the block, or refuse at once if another process holds it."""
    lock = FileLock(lock_path(index_path), mode=0o644)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise TuningRefused(
            f"another tune of {index_path} is running", "Wait for it: GET /admin/tune or `toolsift tune --status`"
        ) from None
    try:
        yield
    finally:
        lock.release()


def running(index_path: Path) -> bool:
    """Whether a tune of the index holds its lock now."""
    try:
        with tune_lock(index_path):
            return False
    except TuningRefused:
        return True


def write_status(index_path: Path, state: str, **details: Any) -> None:
    document = {"state": state, "at": datetime.now(UTC).isoformat(timespec="seconds"), "pid": os.getpid(), **details}
    path = status_path(index_path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(document, indent=2, sort_keys=True))
    os.replace(temporary, path)


def read_status(index_path: Path) -> dict[str, Any]:
    """The last tune's status (``never`` when none ran; ``interrupted`` when it died running)."""
    try:
        document: dict[str, Any] = json.loads(status_path(index_path).read_text())
    except (OSError, ValueError):
        return {"state": "running" if running(index_path) else "never"}
    if document.get("state") == "running" and not running(index_path):
        document["state"] = "interrupted"
    return document
