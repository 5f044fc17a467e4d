"""A deterministic, dependency-free embedder: word and character n-gram feature hashing.

Not semantic; for fast unit tests and environments without a model. Identical text always gives
identical vectors, in any process.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from toolsift.embeddings.base import normalise_rows
from toolsift.types import Matrix

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    def __init__(self, dimension: int = 256) -> None:
        if dimension < 8:
            raise ValueError("dimension must be at least 8")
        self._dimension = dimension

    @property
    def name(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _features(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        grams = [f"w:{w}" for w in words]
        for word in words:
            padded = f"<{word}>"
            grams.extend(f"c:{padded[i : i + 3]}" for i in range(len(padded) - 2))
        return grams

    def _embed(self, texts: Sequence[str]) -> Matrix:
        matrix = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                matrix[row, (value >> 1) % self._dimension] += sign
        return normalise_rows(matrix)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> Matrix:
        return self._embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)
