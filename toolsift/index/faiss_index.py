"""FAISS inner-product index over normalised vectors (so scores are cosine similarities).

``kind="flat"`` is exact; ``kind="hnsw"`` is approximate and meant for catalogs of tens of
thousands of tools; ``kind="auto"`` (the default) picks by catalog size. Both search only the ``allowed`` ids when given, so tag rules are applied
before ranking, never after.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np

from toolsift.index.exact import top_k
from toolsift.types import IdArray, Matrix

IndexKind = Literal["auto", "flat", "hnsw"]
INDEX_KINDS: tuple[str, ...] = ("auto", "flat", "hnsw")
# "auto" picks HNSW above this many tools, where exact search gets slow (benchmarks/DECISIONS.md).
AUTO_HNSW_ABOVE = 20_000


def resolve_kind(kind: str, size: int) -> IndexKind:
    """The concrete kind for a catalog of ``size`` tools: ``auto`` becomes flat or hnsw."""
    if kind not in INDEX_KINDS:
        raise ValueError(f"index kind must be one of {INDEX_KINDS}, not {kind!r}")
    if kind == "auto":
        return "hnsw" if size > AUTO_HNSW_ABOVE else "flat"
    return kind  # type: ignore[return-value]


HNSW_NEIGHBOURS = 32
HNSW_EF_CONSTRUCTION = 200
HNSW_EF_SEARCH = 128
# With an allow-list this small, scoring it exactly is faster and loses no recall in HNSW.
EXACT_SUBSET_LIMIT = 4096


class FaissIndex:
    def __init__(self, dimension: int, kind: IndexKind = "flat") -> None:
        if kind not in ("flat", "hnsw"):
            raise ValueError(f"index kind must be 'flat' or 'hnsw' (resolve 'auto' first), not {kind!r}")
        self.dimension = dimension
        self.kind: IndexKind = kind
        if kind == "flat":
            inner: Any = faiss.IndexFlatIP(dimension)
        else:
            inner = faiss.IndexHNSWFlat(dimension, HNSW_NEIGHBOURS, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
            inner.hnsw.efSearch = HNSW_EF_SEARCH
        self._index: Any = faiss.IndexIDMap2(inner)

    @classmethod
    def from_vectors(cls, vectors: Matrix, kind: IndexKind = "flat") -> FaissIndex:
        index = cls(int(vectors.shape[1]), kind)
        index.add(vectors, np.arange(vectors.shape[0], dtype=np.int64))
        return index

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, vectors: Matrix, ids: IdArray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise ValueError(f"expected vectors of shape (n, {self.dimension}), got {vectors.shape}")
        self._index.add_with_ids(vectors, np.ascontiguousarray(ids, dtype=np.int64))

    def vectors(self, ids: IdArray) -> Matrix:
        return np.asarray(self._index.reconstruct_batch(np.ascontiguousarray(ids, dtype=np.int64)))

    def search(self, query: np.ndarray, k: int, allowed: IdArray | None = None) -> tuple[np.ndarray, IdArray]:
        """Best ``k`` (scores, ids), best first. With ``allowed``, only those ids can come back;
        fewer than ``k`` come back when fewer are allowed."""
        _apply_search_threads()
        query = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        total = len(self) if allowed is None else len(allowed)
        k = min(k, total)
        if k <= 0:
            return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
        if allowed is not None and self.kind == "hnsw" and len(allowed) <= EXACT_SUBSET_LIMIT:
            scores = self.vectors(allowed) @ query[0]
            return top_k(scores, allowed, k)
        params = None
        if allowed is not None:
            selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
            if self.kind == "hnsw":
                params = faiss.SearchParametersHNSW(sel=selector, efSearch=max(HNSW_EF_SEARCH, k))  # type: ignore[attr-defined]
            else:
                params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]
        elif self.kind == "hnsw":
            params = faiss.SearchParametersHNSW(efSearch=max(HNSW_EF_SEARCH, k))  # type: ignore[attr-defined]
        scores, ids = self._index.search(query, k, params=params)
        found = ids[0] >= 0
        return top_k(scores[0][found], ids[0][found], k)

    def save(self, path: Path) -> None:
        faiss.write_index(self._index, str(path))

    @classmethod
    def read(cls, path: Path, kind: IndexKind) -> FaissIndex:
        loaded = faiss.read_index(str(path))
        index = cls.__new__(cls)
        index.dimension = int(loaded.d)
        index.kind = kind
        index._index = loaded
        return index


_search_threads: int | None = None
"""The process's limit on OpenMP threads per search (``limit_search_threads``); None: FAISS's own."""
_applied = threading.local()


def limit_search_threads(count: int) -> None:
    """Search with at most ``count`` OpenMP threads, in every thread of this process.

    FAISS's ``omp_set_num_threads`` holds only for the thread that calls it: a server's routes run
    in worker threads, which would still search on every core. So the limit is recorded here and
    each thread applies it before its first search."""
    global _search_threads
    _search_threads = count
    _apply_search_threads()


def _apply_search_threads() -> None:
    if _search_threads is not None and getattr(_applied, "count", None) != _search_threads:
        faiss.omp_set_num_threads(_search_threads)
        _applied.count = _search_threads
