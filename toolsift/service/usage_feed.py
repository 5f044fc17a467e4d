"""The service's feedback: one ``UsageBook`` every router learns from, and the log it persists to.

With an index folder (``toolsift serve``) feedback is appended to ``<index>.feedback.jsonl``
(``toolsift.index.feedback_log``) before it is acknowledged, and every worker follows that log:
each request first applies what other workers (or ``toolsift feedback import``) appended, so a
change made through one worker is seen by the next request to any worker. Without a folder (a
router given to ``create_app``, MCP servers) feedback lives in memory only.

Retention (``toolsift.router.usage.FeedbackLimits``): per pool and tool the latest 256 distinct
requests, at most 16 of them from one contributor (the credential that sent it: a tenant, the
feedback token, the admin token; with ``feedback: open``, a client address), at most
50,000 per pool; the log is compacted to what is retained once it holds twice as many lines
(and at least ``COMPACT_AFTER``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolsift.errors import ToolsiftError
from toolsift.index.feedback_log import FeedbackLog
from toolsift.router.usage import Feedback, UsageBook

logger = logging.getLogger("toolsift.service")

COMPACT_AFTER = 10_000


class UsageFeed:
    def __init__(self, book: UsageBook | None = None) -> None:
        self.book = book or UsageBook()
        self.log: FeedbackLog | None = None
        self._lock = threading.Lock()

    def open_log(
        self, path: str | Path, shared_lock: Callable[[], AbstractContextManager[Callable[[], None]]] | None = None
    ) -> None:
        """Persist to (and follow) the log at ``path``; what it holds is applied now. Appends hold
        ``shared_lock`` too when given (the replicas' lock: several hosts share the log)."""
        self.log = FeedbackLog(path, shared_lock)
        self.refresh()

    def refresh(self) -> None:
        """Apply what was appended to the log since the last look (a stat when nothing was)."""
        if self.log is None:
            return
        with self._lock:
            restarted, records = self.log.read_new()
            if restarted:
                self.book.reset()
            for record in records:
                self._apply(record)

    def record(self, items: Sequence[Feedback]) -> None:
        """Keep ``items`` (checked by the router first); durable when this returns."""
        if self.log is None:
            for item in items:
                self.book.add(item)
            return
        self.log.append([_add_record(item) for item in items])
        self.refresh()
        self._compact_if_due()

    def reset(self, pool: str | None = None, tool: str | None = None, contributor: str | None = None) -> int:
        """Forget ``pool``'s feedback (every pool when None), ``tool``'s and ``contributor``'s only
        when given; returns how many requests were forgotten."""
        self.refresh()
        pools = [pool] if pool is not None else self.book.pools()
        forgotten = sum(
            1
            for name in pools
            for tool_name, who in self.book.contributors(name).items()
            if tool in (None, tool_name)
            for one in who
            if contributor in (None, one)
        )
        if self.log is None:
            self.book.reset(pool, tool, contributor)
        else:
            self.log.append([{"op": "reset", "pool": pool, "tool": tool, "contributor": contributor, "at": _now()}])
            self.refresh()
        return forgotten

    def _apply(self, record: dict[str, Any]) -> None:
        if record["op"] == "reset":
            pool, tool = _text_or_none(record.get("pool")), _text_or_none(record.get("tool"))
            self.book.reset(pool, tool, _text_or_none(record.get("contributor")))
            return
        query, tool = record.get("query"), record.get("tool")
        if isinstance(query, str) and isinstance(tool, str) and query.strip():
            pool = _text_or_none(record.get("pool")) or ""
            contributor = str(record.get("contributor") or "anonymous")
            self.book.add(Feedback(query.strip(), tool, pool, contributor))

    def _compact_if_due(self) -> None:
        log = self.log
        if log is None or log.appended < max(COMPACT_AFTER, 2 * len(self.book.records())):
            return
        try:
            with log.locked() as still_held:
                self.refresh()  # everything appended until now, by any process
                still_held()
                with self._lock:
                    log.compact([_add_record(item) for item in self.book.records()])
        except ToolsiftError as error:  # the feedback is written; compacting waits for the next append
            logger.warning("the feedback log was not compacted this time: %s", error)


def _add_record(item: Feedback) -> dict[str, Any]:
    return {
        "op": "add",
        "query": item.query,
        "tool": item.tool,
        "pool": item.pool,
        "contributor": item.contributor,
        "at": _now(),
    }


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
