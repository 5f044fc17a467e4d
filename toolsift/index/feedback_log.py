"""The feedback log: append-only JSON lines beside an index folder, shared by every worker.

``<index>.feedback.jsonl`` sits next to the index folder (a rebuild replaces the folder, never
the log). Each line is a record: ``{"op": "add", "query", "tool", "pool", "contributor", "at"}``
or ``{"op": "reset", "pool", "tool", "at"}`` (``pool``/``tool`` null: all of them). Writers
append whole lines under an exclusive lock and fsync before answering, so an acknowledged record
survives a crash; readers (each worker) follow the file from where they stopped. ``compact``
rewrites it, under the same lock, to what is retained; readers notice the new file and re-read it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import orjson

from toolsift.index.folder_lock import nothing_to_check

logger = logging.getLogger("toolsift.index")

SUFFIX = ".feedback.jsonl"


def feedback_log_path(index_path: str | Path) -> Path:
    """Where the feedback of the index folder ``index_path`` is kept."""
    path = Path(index_path)
    return path.with_name(path.name + SUFFIX)


class FeedbackLog:
    """One process's view of the log: what it has read so far, and how to append."""

    def __init__(
        self, path: str | Path, shared_lock: Callable[[], AbstractContextManager[Callable[[], None]]] | None = None
    ) -> None:
        self.path = Path(path)
        self._shared_lock = shared_lock
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self.appended = 0
        """Lines in the file now (those this process read, or wrote)."""

    @contextmanager
    def locked(self) -> Iterator[Callable[[], None]]:
        """The log's file lock (and the shared lock given, taken first); yields the check to call
        before writing (it raises if the shared lock was lost meanwhile)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        shared = self._shared_lock() if self._shared_lock else nullcontext(nothing_to_check)
        with shared as still_held, open(self._lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield still_held
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        """Write ``records`` durably (flushed and fsynced when this returns)."""
        if not records:
            return
        data = b"".join(orjson.dumps(record) + b"\n" for record in records)
        with self.locked() as still_held, open(self.path, "ab") as handle:
            still_held()
            if handle.tell() and not _ends_with_newline(self.path):
                handle.write(b"\n")  # a line cut short by a crash stays a line of its own
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def read_new(self) -> tuple[bool, list[dict[str, Any]]]:
        """(restarted, records): the records appended since the last call. ``restarted`` is
        True when the file is not the one read before (compacted, replaced or removed): the
        records are then the whole file, to be applied on a clean slate."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            restarted = self._identity is not None
            self._identity, self._offset, self.appended = None, 0, 0
            return restarted, []
        identity = (stat.st_dev, stat.st_ino)
        restarted = identity != self._identity and self._identity is not None or stat.st_size < self._offset
        if identity != self._identity or stat.st_size < self._offset:
            self._identity, self._offset, self.appended = identity, 0, 0
        if stat.st_size == self._offset:
            return restarted, []
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
        self._offset += len(complete)
        records = [record for line in complete.splitlines() if (record := self._parse(line)) is not None]
        self.appended += len(complete.splitlines())
        return restarted, records

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        if not isinstance(record, dict) or record.get("op") not in ("add", "reset"):
            logger.warning("%s: skipping a line that is not a feedback record: %.80r", self.path, line)
            return None
        return record

    def compact(self, records: Sequence[dict[str, Any]]) -> None:
        """Replace the log with ``records`` (call with ``locked`` held, after reading it all)."""
        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        with os.fdopen(handle, "wb") as out:
            out.writelines(orjson.dumps(record) + b"\n" for record in records)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.path)
        stat = os.stat(self.path)
        self._identity, self._offset, self.appended = (stat.st_dev, stat.st_ino), stat.st_size, len(records)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
