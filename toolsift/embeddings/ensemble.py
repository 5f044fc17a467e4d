"""Several embedding models as one: each text's normalised vectors, side by side.

``get_embedder("all-MiniLM-L6-v2+multilingual-e5-small")`` gives vectors whose inner product is the
mean of the models' cosines, so one FAISS index serves all of them; ``segments`` tells the ranking
where each model's part lies, so it can standardise each model's cosine on its own (their scales
differ a lot: e5's cosines spread about a fifth as much as MiniLM's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toolsift.embeddings.base import Embedder, normalise_rows
from toolsift.types import Matrix


class EnsembleEmbedder:
    def __init__(self, parts: Sequence[Embedder]) -> None:
        if len(parts) < 2:
            raise ValueError("an ensemble needs at least two models")
        self.parts = list(parts)
        self._scale = np.float32(1 / np.sqrt(len(parts)))
        bounds = np.cumsum([0, *(part.dimension for part in parts)])
        self.segments: list[tuple[int, int]] = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    @property
    def name(self) -> str:
        return "+".join(part.name for part in self.parts)

    @property
    def dimension(self) -> int:
        return sum(part.dimension for part in self.parts)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._join([part.embed_documents(texts, progress=progress) for part in self.parts], len(texts))

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._join([part.embed_queries(texts) for part in self.parts], len(texts))

    def _join(self, matrices: list[Matrix], rows: int) -> Matrix:
        if not rows:
            return np.empty((0, self.dimension), dtype=np.float32)
        return (np.hstack([normalise_rows(m) for m in matrices]) * self._scale).astype(np.float32)
