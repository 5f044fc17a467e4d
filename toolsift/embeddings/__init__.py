"""Embedders, tool-text composition and the on-disk embedding cache."""

from toolsift.embeddings.base import Embedder, EmbedderWrapper, normalise_rows
from toolsift.embeddings.batching import MicroBatcher
from toolsift.embeddings.cache import CacheStats, EmbeddingCache, embed_documents_cached, embed_queries_cached
from toolsift.embeddings.hashing import HashingEmbedder
from toolsift.embeddings.query_cache import CachingEmbedder, QueryCache
from toolsift.embeddings.registry import (
    AUTO_MODEL,
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    MULTILINGUAL_MODEL,
    Backend,
    bundle_model,
    embedder_for,
    get_embedder,
    model_beside,
    model_for,
)
from toolsift.embeddings.text import compose_tool_text, lexical_tool_text, split_identifier

__all__ = [
    "AUTO_MODEL",
    "DEFAULT_BACKEND",
    "DEFAULT_MODEL",
    "MULTILINGUAL_MODEL",
    "Backend",
    "CacheStats",
    "CachingEmbedder",
    "Embedder",
    "EmbedderWrapper",
    "EmbeddingCache",
    "HashingEmbedder",
    "MicroBatcher",
    "QueryCache",
    "compose_tool_text",
    "bundle_model",
    "embed_documents_cached",
    "embed_queries_cached",
    "embedder_for",
    "get_embedder",
    "lexical_tool_text",
    "model_beside",
    "model_for",
    "normalise_rows",
    "split_identifier",
]
