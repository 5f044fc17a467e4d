"""Query vectors, remembered: the one cache of query embeddings (the router's, and the
benchmarks' through ``CachingEmbedder``)."""

from __future__ import annotations

import threading
from collections.abc import MutableMapping, Sequence

import numpy as np
from cachetools import LRUCache

from toolsift.embeddings.base import Embedder, EmbedderWrapper
from toolsift.types import Matrix, Vector

BATCH = 512
"""Most queries embedded in one call (bounds the memory of a large miss)."""


class QueryCache:
    """A least-recently-used map from query text to its vector, in front of ``embedder``.

    Thread-safe: lookups, inserts and the hit/miss counters change under one lock; the
    embedding itself runs outside it. Misses of one call are embedded together, in batches of
    ``BATCH``. ``size=None`` keeps every vector (a benchmark's fixed query set)."""

    def __init__(self, embedder: Embedder, size: int | None = 2048) -> None:
        self.embedder = embedder
        self.size = size
        self.hits = 0
        self.misses = 0
        self._vectors: MutableMapping[str, Vector] = LRUCache(size) if size is not None else {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def embed(self, queries: Sequence[str]) -> list[Vector]:
        """The vector of each query, in order."""
        found = self._lookup(queries)
        missing = [query for query in dict.fromkeys(queries) if query not in found]
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            fresh = dict(zip(batch, self.embedder.embed_queries(batch), strict=True))
            found.update(fresh)
            self._store(fresh)
        return [found[query] for query in queries]

    def _lookup(self, queries: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for query in queries:
                vector = self._vectors.get(query)  # a hit is the most recently used now
                if vector is not None:
                    found[query] = vector
            missing = len({query for query in queries if query not in found})
            self.hits += len(queries) - missing  # a repeat within one call is a hit
            self.misses += missing
        return found

    def _store(self, fresh: dict[str, Vector]) -> None:
        with self._lock:
            self._vectors.update(fresh)  # the least recently used go first past the size


class CachingEmbedder(EmbedderWrapper):
    """An embedder that remembers every query vector, so methods sharing a model (a benchmark's)
    embed each query once."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.queries = QueryCache(inner, size=None)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.empty((0, self.dimension), dtype=np.float32)
        return np.stack(self.queries.embed(texts))
