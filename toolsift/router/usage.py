"""Learning from use: example requests as extra views of a tool in the ranking.

A tool's *views* are its own text and the requests it is known to answer: the ``examples`` its
catalog entry lists, and the requests users sent before calling it (feedback). For a query, a
tool's dense evidence is its best view: ``max(cosine(query, tool), cosine(query, nearest
example))``, standardised over the eligible tools as the plain cosine is (``ranking.py``). How
users phrase requests is what a catalog's wording lacks; measured on the four shared datasets,
the best view beat a per-tool centroid and a separate weighted signal (benchmarks/DECISIONS.md).

Requests resemble requests more than they resemble tool texts, so a view is counted lower than
its cosine (``view_offsets``): by ``VIEW_DISCOUNT`` of how much closer this catalog's labelled
requests typically are to a fellow request of their tool than to their tool's text. Without it,
a tool with feedback wins the requests of its neighbours that have none yet.

``UsageBook`` holds the feedback: per pool (a tenant, or ``""`` without tenants), per tool, the
latest distinct requests, within ``FeedbackLimits``. It holds text only; each router embeds the
texts with its own model (``Router.views``), so a rebuild with another model keeps the book.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from toolsift.types import IdArray, Matrix, Vector

VIEWS_PER_TOOL = 16
"""A tool with more example requests than this is ranked on this many summaries of them
(spherical k-means centroids): the ranking's cost stays bounded per tool, for a small loss of
recall where tools have many requests (benchmarks/DECISIONS.md)."""

VIEW_DISCOUNT = 0.5
"""Share of the typical request-to-request excess (``view_offsets``) taken off a view's cosine:
0 counts views at their cosine, 1 puts them on the tool texts' scale (benchmarks/DECISIONS.md)."""
OFFSET_SAMPLE = 32
"""Requests per tool (evenly spaced) that estimate the views' offset."""

Offsets = Sequence[tuple[int, int, float]]
"""(start, end, offset) per vector segment."""

DEFAULT_PER_TOOL = 256
DEFAULT_PER_CONTRIBUTOR = 16
DEFAULT_PER_POOL = 50_000
UNTRUSTED = ("client:", "session:")
"""Contributors no credential vouches for (a client address on an open service; ``session:`` from
logs of before): their requests rank a tool only once ``quorum`` of them sent feedback for it."""


@dataclass(frozen=True)
class FeedbackLimits:
    """What the book retains; the oldest request goes first when a limit is reached.

    ``per_contributor`` is the cap that keeps one key or session from dominating a tool's views:
    its requests beyond that many, for one tool, replace its own older ones."""

    per_tool: int = DEFAULT_PER_TOOL
    per_contributor: int = DEFAULT_PER_CONTRIBUTOR
    per_pool: int = DEFAULT_PER_POOL
    quorum: int = 1
    """Distinct untrusted contributors a tool needs before their requests rank it."""

    def __post_init__(self) -> None:
        for name in ("per_tool", "per_contributor", "per_pool", "quorum"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")


@dataclass(frozen=True)
class Feedback:
    """One observation: ``query`` was answered by calling ``tool``."""

    query: str
    tool: str
    pool: str = ""
    contributor: str = "anonymous"


@dataclass
class _Pool:
    tools: dict[str, OrderedDict[str, str]] = field(default_factory=dict)
    """tool name -> (request text -> contributor), oldest first."""
    order: OrderedDict[tuple[str, str], None] = field(default_factory=OrderedDict)
    """(tool, request) pairs, oldest first, across tools (for ``per_pool``)."""


class UsageBook:
    """The retained feedback, by pool and tool. Thread-safe; ``version`` changes on every change."""

    def __init__(self, limits: FeedbackLimits | None = None) -> None:
        self.limits = limits or FeedbackLimits()
        self.version = 0
        self._pools: dict[str, _Pool] = {}
        self._lock = threading.Lock()

    def add(self, feedback: Feedback) -> None:
        """Remember ``feedback``; a request already known for the tool becomes the newest."""
        with self._lock:
            pool = self._pools.setdefault(feedback.pool, _Pool())
            requests = pool.tools.setdefault(feedback.tool, OrderedDict())
            key = (feedback.tool, feedback.query)
            requests.pop(feedback.query, None)
            pool.order.pop(key, None)
            requests[feedback.query] = feedback.contributor
            pool.order[key] = None
            self._enforce(pool, feedback.tool, feedback.contributor)
            self.version += 1

    def _enforce(self, pool: _Pool, tool: str, contributor: str) -> None:
        requests = pool.tools[tool]
        own = [text for text, who in requests.items() if who == contributor]
        for text in own[: max(0, len(own) - self.limits.per_contributor)]:
            self._drop(pool, tool, text)
        while len(requests) > self.limits.per_tool:
            self._drop(pool, tool, next(iter(requests)))
        while len(pool.order) > self.limits.per_pool:
            oldest_tool, oldest_text = next(iter(pool.order))
            self._drop(pool, oldest_tool, oldest_text)

    @staticmethod
    def _drop(pool: _Pool, tool: str, text: str) -> None:
        requests = pool.tools[tool]
        del requests[text]
        del pool.order[(tool, text)]
        if not requests:
            del pool.tools[tool]

    def reset(self, pool: str | None = None, tool: str | None = None, contributor: str | None = None) -> int:
        """Forget the feedback of ``pool`` (every pool when None), of ``tool`` only and of
        ``contributor`` only when given; returns how many requests were forgotten."""
        with self._lock:
            forgotten = 0
            for name in [pool] if pool is not None else list(self._pools):
                entry = self._pools.get(name)
                if entry is None:
                    continue
                for tool_name in [tool] if tool is not None else list(entry.tools):
                    for text, who in list(entry.tools.get(tool_name, {}).items()):
                        if contributor is None or who == contributor:
                            self._drop(entry, tool_name, text)
                            forgotten += 1
                if not entry.tools:
                    del self._pools[name]
            self.version += 1
            return forgotten

    def examples(self, pool: str) -> list[tuple[str, str]]:
        """(tool, request) pairs of ``pool`` that rank, by tool, oldest request first: those of
        trusted contributors, and untrusted ones' once ``quorum`` of them agree on the tool (in a
        tenant's pool every request came with the tenant's key, so all count)."""
        with self._lock:
            entry = self._pools.get(pool)
            if entry is None:
                return []
            pairs = []
            for tool, texts in entry.tools.items():
                untrusted = {who for who in texts.values() if who.startswith(UNTRUSTED)}
                agreed = bool(pool) or len(untrusted) >= self.limits.quorum  # a tenant's pool took its key
                pairs += [(tool, text) for text, who in texts.items() if agreed or not who.startswith(UNTRUSTED)]
            return pairs

    def contributors(self, pool: str) -> dict[str, list[str]]:
        """Per tool, the contributor of each retained request (in ``summary``'s order)."""
        with self._lock:
            entry = self._pools.get(pool)
            return {} if entry is None else {tool: list(texts.values()) for tool, texts in entry.tools.items()}

    def summary(self, pool: str) -> dict[str, list[str]]:
        """Per tool, its retained requests (oldest first)."""
        with self._lock:
            entry = self._pools.get(pool)
            return {} if entry is None else {tool: list(texts) for tool, texts in entry.tools.items()}

    def pools(self) -> list[str]:
        with self._lock:
            return sorted(self._pools)

    def records(self) -> list[Feedback]:
        """Everything retained, oldest first per pool: what a compacted log keeps."""
        with self._lock:
            return [
                Feedback(text, tool, name, entry.tools[tool][text])
                for name, entry in self._pools.items()
                for tool, text in entry.order
            ]


@dataclass(frozen=True)
class ExampleViews:
    """Example vectors of one pool, grouped by tool: rows ``starts[i]:starts[i+1]`` belong to
    ``tools[i]`` (sorted catalog positions)."""

    vectors: Matrix
    tools: IdArray
    starts: IdArray
    offsets: tuple[tuple[int, int, float], ...] = ()
    """(start, end, offset) per vector segment: taken off a view's cosine there (``view_offsets``)."""

    @classmethod
    def of(cls, pairs: Sequence[tuple[int, Vector]], offsets: Offsets = ()) -> ExampleViews | None:
        if not pairs:
            return None
        ordered = sorted(range(len(pairs)), key=lambda row: pairs[row][0])
        owners = np.asarray([pairs[row][0] for row in ordered], dtype=np.int64)
        tools, starts = np.unique(owners, return_index=True)
        vectors = np.vstack([pairs[row][1] for row in ordered]).astype(np.float32)
        return cls(vectors, tools, starts.astype(np.int64), tuple(offsets))

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def offset(self, start: int, end: int) -> float:
        return next((value for a, b, value in self.offsets if (a, b) == (start, end)), 0.0)

    def nearest(self, query: Vector, start: int, end: int) -> tuple[IdArray, np.ndarray]:
        """The tools that have examples (sorted ids) and each one's best example cosine with
        ``query`` over the vector segment ``start:end``, less the segment's offset."""
        scores = self.vectors[:, start:end] @ query[start:end]
        best = np.maximum.reduceat(scores, self.starts) - self.offset(start, end)
        return self.tools, best.astype(np.float32)

    def best_of(self, queries: Matrix) -> np.ndarray:
        """Each query's best view cosine over whole vectors (every segment's offset taken off)."""
        total = sum(value for _, _, value in self.offsets)
        return np.asarray((self.vectors @ queries.T).max(axis=0) - total, dtype=np.float32)


def view_offsets(
    requests: Mapping[int, Matrix],
    texts: Mapping[int, Vector],
    segments: Sequence[tuple[int, int]],
    floor: float = 0.0,
) -> list[tuple[int, int, float]]:
    """Per segment, ``VIEW_DISCOUNT`` times the median, over the labelled requests of tools that
    have two or more, of (cosine with the nearest other request of the tool) minus (cosine with
    the tool's text): how much more a view says than a text for a request of the same tool.
    ``requests``: tool id -> its request vectors; ``texts``: tool id -> its text's vector.

    ``floor``: the least offset (every segment). A tuned model was trained on these requests, so
    they lie nearer their tools' texts than a new request would and understate the excess: its
    floor is the offset measured on requests it never saw (``toolsift.tuning.check.unseen_offset``)."""
    found = []
    for start, end in segments:
        gaps: list[float] = []
        for tool, rows in requests.items():
            if len(rows) < 2:
                continue
            sample = rows[np.unique(np.linspace(0, len(rows) - 1, OFFSET_SAMPLE).astype(int)), start:end]
            similar = sample @ sample.T
            np.fill_diagonal(similar, -np.inf)
            gaps += (similar.max(axis=1) - sample @ texts[tool][start:end]).tolist()
        offset = VIEW_DISCOUNT * max(0.0, float(np.median(gaps))) if gaps else 0.0
        found.append((start, end, max(offset, floor)))
    return found


def summarise(vectors: Matrix, count: int = VIEWS_PER_TOOL, iterations: int = 10) -> Matrix:
    """At most ``count`` unit vectors standing for ``vectors`` (rows, unit length): themselves
    when they are few, else spherical k-means centroids (deterministic: seeded on evenly spaced
    rows)."""
    if len(vectors) <= count:
        return vectors
    centroids = vectors[np.linspace(0, len(vectors) - 1, count).astype(int)].copy()
    for _ in range(iterations):
        nearest = np.argmax(vectors @ centroids.T, axis=1)
        for cluster in range(count):
            members = vectors[nearest == cluster]
            if len(members):
                total = members.sum(axis=0)
                centroids[cluster] = total / max(float(np.linalg.norm(total)), 1e-12)
    summary: Matrix = centroids.astype(np.float32)
    return summary


def catalog_examples(tools: Iterable[tuple[int, Sequence[str]]]) -> list[tuple[int, str]]:
    """(tool id, example) pairs from (tool id, the tool's ``examples``)."""
    return [(tool_id, text) for tool_id, examples in tools for text in examples]
