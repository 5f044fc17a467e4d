"""The methods a benchmark compares: toolsift itself and the baselines, run on the same data."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol

from toolsift.catalog import Catalog
from toolsift.embeddings import Embedder, EmbeddingCache, embed_documents_cached
from toolsift.index import FaissIndex
from toolsift.index.lexical import LexicalIndex, word_and_cjk_tokens, word_tokens
from toolsift.router import RankingConfig, Router, within_query_limit

CHUNK = 512


class Method(Protocol):
    name: str

    def rank(self, queries: Sequence[str], depth: int) -> list[list[str]]:
        """Tool names for each query, best first, at most ``depth`` of them."""
        ...


class ToolsiftMethod:
    """The router with its default settings, exactly as a user gets it (or with ``ranking``, e.g.
    ``toolsift-whole``: without splitting multi-part queries, to measure what that adds)."""

    def __init__(
        self,
        catalog: Catalog,
        embedder: Embedder,
        cache: EmbeddingCache | None = None,
        ranking: RankingConfig | None = None,
        name: str = "toolsift",
    ) -> None:
        self.name = name
        self.router = Router.build(catalog, embedder, cache=cache, ranking=ranking)
        self.router.ready()  # as served: no timed request pays for the calibration

        self.refused = 0
        """Queries over the router's length limit in the last ``rank``: refused, as the API
        refuses them, so they get no tools."""

    def rank(self, queries: Sequence[str], depth: int) -> list[list[str]]:
        depth = min(depth, len(self.router.catalog))
        accepted = [text for text in queries if within_query_limit(text)]
        self.refused = len(queries) - len(accepted)
        ranked: dict[str, list[str]] = {}
        for start in range(0, len(accepted), CHUNK):
            chunk = accepted[start : start + CHUNK]
            # ranking quality, as the other methods (which never abstain): min_confidence 0
            routed = self.router.route_many(chunk, depth, min_confidence=0.0)
            ranked.update(zip(chunk, (result.names for result in routed), strict=True))
        return [ranked.get(text, []) for text in queries]


class DenseMethod:
    """Plain dense retrieval: cosine between the query and ``name + " " + description``."""

    name = "dense"

    def __init__(self, catalog: Catalog, embedder: Embedder, cache: EmbeddingCache | None = None) -> None:
        self.names = catalog.names
        self.embedder = embedder
        texts = [f"{tool.name} {tool.description}" for tool in catalog]
        vectors, _ = embed_documents_cached(embedder, texts, cache)
        self.index = FaissIndex.from_vectors(vectors)

    def rank(self, queries: Sequence[str], depth: int) -> list[list[str]]:
        vectors = self.embedder.embed_queries(list(queries))
        return [[self.names[i] for i in self.index.search(vector, depth)[1].tolist()] for vector in vectors]


class BM25Method:
    """BM25 (bm25s, Lucene, k1=1.5, b=0.75) over ``name + " " + description``; tools sharing no
    token with the query are not retrieved. ``cjk=True`` adds Hangul/CJK character bigrams."""

    def __init__(self, catalog: Catalog, *, cjk: bool = False) -> None:
        self.name = "bm25-cjk" if cjk else "bm25"
        self.names = catalog.names
        tokenizer = word_and_cjk_tokens if cjk else word_tokens
        self.index = LexicalIndex([f"{tool.name} {tool.description}" for tool in catalog], tokenizer)

    def rank(self, queries: Sequence[str], depth: int) -> list[list[str]]:
        return [[self.names[i] for i in self.index.search(query, depth)[1].tolist()] for query in queries]


class RandomMethod:
    """A seeded random order: the floor every method must clear."""

    name = "random"

    def __init__(self, catalog: Catalog, seed: int = 0) -> None:
        self.names = catalog.names
        self.seed = seed

    def rank(self, queries: Sequence[str], depth: int) -> list[list[str]]:
        rng = random.Random(self.seed)
        depth = min(depth, len(self.names))
        return [rng.sample(self.names, depth) for _ in queries]
