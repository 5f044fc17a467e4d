"""Pick an embedder by name."""

from __future__ import annotations

from toolsift.embeddings.base import Embedder
from toolsift.embeddings.hashing import HashingEmbedder

DEFAULT_MODEL = "all-MiniLM-L6-v2"


def get_embedder(name: str = DEFAULT_MODEL) -> Embedder:
    """``all-MiniLM-L6-v2`` (default), ``hashing-N`` (test double), or a local model folder."""
    if name.startswith("hashing-") and name.removeprefix("hashing-").isdigit():
        return HashingEmbedder(int(name.removeprefix("hashing-")))
    from toolsift.embeddings.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name.removeprefix("local:"))
