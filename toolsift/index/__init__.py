"""Vector indexes over tool embeddings, and their on-disk form."""

from toolsift.index.exact import ExactIndex, top_k
from toolsift.index.faiss_index import INDEX_KINDS, FaissIndex, IndexKind
from toolsift.index.tool_index import BuildStats, Manifest, ToolIndex

__all__ = [
    "INDEX_KINDS",
    "BuildStats",
    "ExactIndex",
    "FaissIndex",
    "IndexKind",
    "Manifest",
    "ToolIndex",
    "top_k",
]
