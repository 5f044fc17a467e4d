"""Exact cosine top-k in plain numpy: the reference the FAISS path must match."""

from __future__ import annotations

import numpy as np

from toolsift.types import IdArray, Matrix


def top_k(scores: np.ndarray, ids: IdArray, k: int) -> tuple[np.ndarray, IdArray]:
    """The k best (score, id) pairs, best first; ties go to the lower id so order is stable."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
    if k < scores.shape[0]:
        keep = np.argpartition(-scores, k - 1)[:k]
        scores, ids = scores[keep], ids[keep]
    order = np.lexsort((ids, -scores))
    return scores[order].astype(np.float32), ids[order].astype(np.int64)


class ExactIndex:
    """Holds the vectors in memory and scores every allowed one for each query."""

    def __init__(self, vectors: Matrix) -> None:
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def __len__(self) -> int:
        return int(self._vectors.shape[0])

    def search(self, query: np.ndarray, k: int, allowed: IdArray | None = None) -> tuple[np.ndarray, IdArray]:
        ids = np.arange(len(self), dtype=np.int64) if allowed is None else allowed
        scores = self._vectors[ids] @ np.asarray(query, dtype=np.float32).reshape(-1)
        return top_k(scores, ids, k)
