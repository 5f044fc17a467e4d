"""Vector indexes over tool embeddings, and their on-disk form."""

from toolsift.index.exact import ExactIndex, top_k
from toolsift.index.faiss_index import (
    AUTO_HNSW_ABOVE,
    INDEX_KINDS,
    FaissIndex,
    IndexKind,
    resolve_kind,
)
from toolsift.index.tool_index import BuildStats, Manifest, ToolIndex

__all__ = [
    "AUTO_HNSW_ABOVE",
    "INDEX_KINDS",
    "BuildStats",
    "ExactIndex",
    "FaissIndex",
    "IndexKind",
    "Manifest",
    "ToolIndex",
    "resolve_kind",
    "top_k",
]
