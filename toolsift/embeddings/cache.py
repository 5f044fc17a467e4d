"""On-disk embedding cache: a rebuild re-embeds only texts it has not seen with that model.

Stored in one SQLite file; the key is sha256(model name, text), so a changed description, tag or
parameter (which changes the composed text) misses and is embedded again.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from toolsift.embeddings.base import Embedder
from toolsift.types import Matrix


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings "
            "(key TEXT PRIMARY KEY, model TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL)"
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])

    def get_many(self, model: str, dimension: int, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors for the texts that are cached, keyed by text."""
        keys = {text_key(model, text): text for text in texts}
        found: dict[str, np.ndarray] = {}
        key_list = list(keys)
        with self._lock:
            for start in range(0, len(key_list), 500):
                chunk = key_list[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(f"SELECT key, dim, vector FROM embeddings WHERE key IN ({marks})", chunk)
                for key, dim, blob in rows:
                    if dim == dimension:
                        found[keys[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, texts: Sequence[str], vectors: Matrix) -> None:
        rows = [
            (text_key(model, text), model, int(vector.shape[0]), vector.astype(np.float32).tobytes())
            for text, vector in zip(texts, vectors, strict=True)
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
            self._db.commit()


def embed_documents_cached(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache | None,
    *,
    progress: bool = False,
) -> tuple[Matrix, CacheStats]:
    """Embed texts, taking what the cache has and storing what it lacked."""
    if cache is None:
        return embedder.embed_documents(texts, progress=progress), CacheStats(0, len(texts))
    embed = partial(embedder.embed_documents, progress=progress)
    return _through_cache(cache, embedder.name, embedder.dimension, texts, embed)


def embed_queries_cached(embedder: Embedder, texts: Sequence[str], cache: EmbeddingCache | None) -> Matrix:
    """``embed_queries`` for texts embedded again and again by every build (the shipped no-tool
    requests), taking what the cache has: kept apart from documents, since a model may embed a
    query and a document of the same text differently."""
    if cache is None:
        return embedder.embed_queries(texts)
    return _through_cache(cache, f"{embedder.name}\x00query", embedder.dimension, texts, embedder.embed_queries)[0]


def _through_cache(
    cache: EmbeddingCache, key: str, dimension: int, texts: Sequence[str], embed: Callable[[list[str]], Matrix]
) -> tuple[Matrix, CacheStats]:
    """``texts``' vectors under ``key`` (the model's name, or a namespace of it): the cached ones
    read, the rest embedded once each and stored."""
    cached = cache.get_many(key, dimension, texts)
    missing = list(dict.fromkeys(text for text in texts if text not in cached))
    if missing:
        fresh = embed(missing)
        cache.put_many(key, missing, fresh)
        cached.update(zip(missing, fresh, strict=True))
    matrix = np.empty((len(texts), dimension), dtype=np.float32)
    for row, text in enumerate(texts):
        matrix[row] = cached[text]
    return matrix, CacheStats(hits=len(texts) - len(missing), misses=len(missing))
