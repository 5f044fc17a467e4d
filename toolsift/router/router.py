"""Route a query to the few tools that fit it: tag rules first, then hybrid (dense + BM25) Top-K."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from toolsift import tracing
from toolsift.catalog import Catalog, Tool, fingerprint_tools
from toolsift.embeddings import (
    AUTO_MODEL,
    DEFAULT_BACKEND,
    Backend,
    Embedder,
    EmbeddingCache,
    MicroBatcher,
    QueryCache,
    bundle_model,
    embedder_for,
    get_embedder,
    lexical_tool_text,
    model_beside,
)
from toolsift.errors import IndexMismatch, InvalidQuery, UnknownTool
from toolsift.index import BuildStats, IndexKind, ToolIndex
from toolsift.index.lexical import LexicalIndex, search_tokens
from toolsift.router.caller import DEFAULT_K
from toolsift.router.confidence import (
    CROWD_DEPTH,
    DEFAULT_MIN_CONFIDENCE,
    FLOOR_SHARE,
    RECALIBRATE_FROM,
    RECALIBRATION_FOLDS,
    RECALIBRATION_GROWTH,
    RECALIBRATION_SAMPLE,
    SHAPE,
    Calibration,
    Recalibration,
    abstention,
    adopt_measurements,
    calibrated_for,
    crowd_share,
    fit_recalibration,
    kept_measurements,
    no_tool_floor,
    no_tool_languages,
    no_tool_requests,
    no_tool_vectors,
    recall_ceiling,
)
from toolsift.router.formats import OutputFormat, format_tool
from toolsift.router.intents import split_intents
from toolsift.router.ranking import DenseMoments, GroupIndex, Ranked, RankingConfig, rank
from toolsift.router.rules import TagIndex, TagRules
from toolsift.router.scope import Scope
from toolsift.router.usage import ExampleViews, Feedback, UsageBook, catalog_examples, summarise, view_offsets
from toolsift.text import without_payload
from toolsift.types import IdArray, Matrix, Vector
from toolsift.wire import MAX_K as MAX_K
from toolsift.wire import MAX_PINNED as MAX_PINNED
from toolsift.wire import MAX_QUERY_CHARS as MAX_QUERY_CHARS

QUERY_CACHE_SIZE = 2048


@dataclass(frozen=True)
class Match:
    """One selected tool and its rank (1 = best).

    ``score`` orders the tools: ``dense_part`` (the cosine, standardised over the catalog for
    this query) plus ``lexical_part`` (BM25, standardised likewise, times the lexical weight).
    ``similarity`` is the raw cosine and ``lexical`` the BM25 score over the best one (0 to 1).
    ``intent`` is the part of a multi-part query this tool was selected for (its scores are that
    part's), or None when it was selected for the whole query."""

    tool: Tool
    score: float
    rank: int
    similarity: float = 0.0
    lexical: float = 0.0
    dense_part: float = 0.0
    lexical_part: float = 0.0
    intent: str | None = None
    confidence: float = 1.0
    """The probability that this tool serves the request (``toolsift.router.confidence``)."""

    @property
    def name(self) -> str:
        return self.tool.name


@dataclass(frozen=True)
class RouteResult:
    """The routed subset.

    ``matches`` is ranked best first; ``tools`` is the delivered subset in canonical order: the
    pinned tools by name, then the matches by name. That order does not depend on scores, so the
    same subset always serialises to the same bytes.
    """

    query: str
    k: int
    matches: tuple[Match, ...]
    eligible: int
    catalog_fingerprint: str
    took_ms: float
    pinned: tuple[Tool, ...] = ()
    """Tools the caller asked to always include; they come first and do not count toward k."""
    abstained: bool = False
    """No tool reached the confidence asked for: ``matches`` is empty (pinned tools still come)."""
    reason: str = ""
    """Why the answer abstained, in a sentence; empty when it did not."""

    @property
    def tools(self) -> tuple[Tool, ...]:
        pinned = sorted(self.pinned, key=lambda tool: tool.name)
        return tuple(pinned) + tuple(sorted((m.tool for m in self.matches), key=lambda tool: tool.name))

    @property
    def names(self) -> list[str]:
        return [match.name for match in self.matches]

    @property
    def fingerprint(self) -> str:
        """Identifies the subset's content; equal for equal subsets, whatever their ranking."""
        return fingerprint_tools(self.tools)

    def definitions(self, output_format: OutputFormat = "toolsift") -> list[dict[str, Any]]:
        return [format_tool(tool, output_format) for tool in self.tools]


class Router:
    """Holds a tool index and the embedder that built it.

    Thread-safe for concurrent ``route``: the index, tag index and BM25 index are read-only once
    built, and the query cache (the only state a route changes) locks its own updates."""

    def __init__(self, index: ToolIndex, embedder: Embedder, ranking: RankingConfig | None = None) -> None:
        if embedder.name != index.manifest.model:
            raise IndexMismatch(None, "embedding model", embedder.name, index.manifest.model)
        if embedder.dimension != index.manifest.dimension:
            raise IndexMismatch(None, "vector dimension", embedder.dimension, index.manifest.dimension)
        self.index = index
        self.embedder = embedder
        self.tag_index = TagIndex(index.catalog)
        self.ranking = ranking or RankingConfig()
        self.lexical = (
            LexicalIndex([lexical_tool_text(tool) for tool in index.catalog], search_tokens)
            if self.ranking.lexical_weight > 0 and len(index.catalog)
            else None
        )
        self.moments = DenseMoments.of(index.vectors, len(index.catalog)) if len(index.catalog) else None
        self.query_cache = QueryCache(MicroBatcher(embedder), QUERY_CACHE_SIZE)  # concurrent queries, one batch
        self.last_build: BuildStats | None = None
        self.usage: UsageBook | None = None
        """Feedback this router learns from (``learn``, ``attach``); None: catalog examples only."""
        self._examples = catalog_examples((i, tool.examples) for i, tool in enumerate(index.catalog))
        self._example_vectors: dict[str, Vector] = {}
        self._summaries: dict[tuple[int, tuple[str, ...]], Matrix] = {}
        """Each tool's summarised example vectors, by (tool, its example texts); only those some
        pool's current views use are kept (``_summaries_in_use``)."""
        self._summaries_in_use: dict[str, set[tuple[int, tuple[str, ...]]]] = {}
        self._views: dict[str, tuple[int, ExampleViews | None]] = {}
        self._views_lock = threading.Lock()
        self._tool_best: np.ndarray | None = None
        self._calibrations: dict[str, tuple[int, Calibration]] = {}
        self._recalibrations: dict[str, Recalibration] = {}
        self._refitting: dict[str, threading.Thread] = {}
        self._calibration_lock = threading.Lock()
        self._floor: float | None = None
        self._floor_lock = threading.Lock()
        if index.attachments and calibrated_for(embedder.name):  # measured when this build was saved
            self._floor = adopt_measurements(index.attachments, embedder.name, embedder.dimension, self._floor_key())

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        embedder: Embedder | None = None,
        *,
        kind: IndexKind = "auto",
        cache: EmbeddingCache | None = None,
        progress: bool = False,
        ranking: RankingConfig | None = None,
        source: str | None = None,
    ) -> Router:
        """A router over ``catalog``; ``source``: the fingerprint of the catalog file it came from,
        when it differs (tools withheld), recorded in the index manifest."""
        embedder = embedder or embedder_for(AUTO_MODEL, catalog)
        started = time.perf_counter()
        index, stats = ToolIndex.build(catalog, embedder, kind=kind, cache=cache, progress=progress, source=source)
        router = cls(index, embedder, ranking)
        # the whole build: embeddings, vector index and the lexical index
        router.last_build = replace(stats, seconds=time.perf_counter() - started)
        return router

    def rebuilt(
        self,
        catalog: Catalog,
        *,
        cache: EmbeddingCache | None = None,
        kind: IndexKind | None = None,
        source: str | None = None,
    ) -> Router:
        """A new router over ``catalog`` with the same embedder, ranking and index kind (or
        ``kind``); tools whose text is unchanged keep their vectors, so only new or edited tools
        are embedded. This router is left as it is (keep serving it until the new one is ready).
        ``source``: the fingerprint of the catalog file the new one comes from (default: this
        index's), recorded in its manifest."""
        started = time.perf_counter()
        current = self.index.manifest.kind
        chosen: IndexKind = kind or ("hnsw" if current == "hnsw" else "flat" if current == "flat" else "auto")
        index, stats = ToolIndex.build(
            catalog, self.embedder, kind=chosen, cache=cache, previous=self.index, source=source
        )
        router = Router(index, self.embedder, self.ranking)
        router.last_build = replace(stats, seconds=time.perf_counter() - started)
        router._example_vectors = dict(self._example_vectors)  # same model: no example is embedded twice
        if self.usage is not None:
            router.attach(self.usage)
        return router

    @classmethod
    def load(
        cls,
        path: str | Path,
        embedder: Embedder | None = None,
        ranking: RankingConfig | None = None,
        *,
        backend: Backend = DEFAULT_BACKEND,
    ) -> Router:
        """Load a saved index; the embedder defaults to the model named in its manifest, run on
        ``backend`` (onnx or torch, for all-MiniLM-L6-v2)."""
        index = ToolIndex.load(path, expected_model=embedder.name if embedder else None)
        beside = model_beside(Path(path))
        return cls(index, embedder or get_embedder(index.manifest.model, backend=backend, beside=beside), ranking)

    def save(self, path: str | Path, *, before_publish: Callable[[], None] | None = None) -> Path:
        """Save the index folder, and beside it (``<path>.model/``) the exported model it was built
        with, so a server without the build extra can load both (``ToolIndex.save``)."""
        with self._floor_lock:
            floor = self._floor
        kept = kept_measurements(self.embedder.name, self.embedder.dimension, floor, self._floor_key())
        saved = self.index.save(path, before_publish=before_publish, attachments=kept)
        bundle_model(self.embedder.name, model_beside(saved))
        return saved

    @property
    def catalog(self) -> Catalog:
        return self.index.catalog

    # -- routing ---------------------------------------------------------------------------

    def embed_queries(self, queries: Sequence[str]) -> list[Vector]:
        """Query vectors, from the query cache where possible; misses embed in one batch. Each
        query is embedded as it is ranked: what it quotes left out (``text.without_payload``)."""
        return self.query_cache.embed([without_payload(query) for query in queries])

    def route(
        self,
        query: str,
        k: int = DEFAULT_K,
        rules: TagRules | None = None,
        *,
        min_score: float | None = None,
        min_confidence: float | None = None,
        pinned: Sequence[str] = (),
        scope: Scope | None = None,
        split_intents: bool | None = None,
        usage_pool: str | None = "",
    ) -> RouteResult:
        """The ``k`` tools that best fit ``query`` among those ``rules`` allow.

        When ``k`` or fewer tools are eligible, all of them come back (ranked). ``min_score``
        drops matches scoring below it. ``min_confidence`` (None: the ranking config's) is the
        confidence the best match must reach, else the answer abstains (no matches,
        ``abstained``); matches far below the best one are dropped too (``confidence.abstention``).
        ``pinned`` names tools delivered whatever the query and the rules; they are not ranked
        and do not take any of the ``k`` places. ``scope`` (what the caller may see, e.g. a
        tenant's tools) limits everything, errors included, to those tools, and the result's
        ``catalog_fingerprint`` is the scope's. ``split_intents`` overrides
        the ranking config for this call (route each part of a multi-part request too).
        ``usage_pool``: whose feedback ranks too (a tenant's name; ``""`` without tenants; None:
        the catalog's examples only)."""
        return self.route_many(
            [query],
            k,
            rules,
            min_score=min_score,
            min_confidence=min_confidence,
            pinned=pinned,
            scope=scope,
            split_intents=split_intents,
            usage_pool=usage_pool,
        )[0]

    def route_many(
        self,
        queries: Sequence[str],
        k: int = DEFAULT_K,
        rules: TagRules | None = None,
        *,
        min_score: float | None = None,
        min_confidence: float | None = None,
        pinned: Sequence[str] = (),
        scope: Scope | None = None,
        split_intents: bool | None = None,
        usage_pool: str | None = "",
    ) -> list[RouteResult]:
        """``route`` for several queries, embedding them in one batch."""
        started = time.perf_counter()
        checked = [_check_query(query) for query in queries]
        _check_k(k)
        rules = rules or TagRules()
        pinned_tools = self.pinned_tools(pinned, scope, rules)
        allowed = self.tag_index.allowed(rules, scope.ids if scope is not None else None)
        if pinned_tools:
            pinned_ids = np.asarray(sorted(self.catalog.position(t.name) for t in pinned_tools), dtype=np.int64)
            everything = np.arange(len(self.catalog), dtype=np.int64) if allowed is None else allowed
            allowed = np.setdiff1d(everything, pinned_ids, assume_unique=True)
        eligible = len(self.catalog) if allowed is None else int(allowed.shape[0])
        split = self.ranking.split_intents if split_intents is None else split_intents
        intents = [self._intents(query, k) if eligible and split else [] for query in checked]
        vectors: dict[str, Vector] = {}
        if eligible:
            # Parts in their own batch: padded to the longest part, not to the whole request.
            wholes = list(dict.fromkeys(checked))
            known = set(wholes)
            part_texts = list(dict.fromkeys(part for parts in intents for part in parts if part not in known))
            with tracing.span("embed", {"texts": len(wholes) + len(part_texts), "model": self.embedder.name}):
                for batch in (wholes, part_texts):
                    if batch:
                        vectors.update(zip(batch, self.embed_queries(batch), strict=True))
        with tracing.span("rank", {"eligible": eligible}):  # each query's matches, confidence and abstention
            views = self.views(usage_pool) if eligible else None
            calibration = self.calibration(usage_pool) if eligible else None
            threshold = min_confidence if min_confidence is not None else self._default_threshold(calibration)
            results = []
            for query, parts in zip(checked, intents, strict=True):
                matches: list[Match] = []
                reason = ""
                if eligible and calibration is not None:
                    shaped, share = self._shape_matches(
                        query, parts, vectors, k, allowed, views, calibration, min_score
                    )
                    matches = self._named_first(query, shaped, allowed, k)
                    kept, reason = abstention([m.confidence for m in matches], threshold)  # does any fit
                    matches = self._reported_matches([matches[i] for i in kept], query, calibration, share)
                results.append(
                    RouteResult(
                        query=query,
                        k=k,
                        matches=tuple(matches),
                        eligible=eligible,
                        catalog_fingerprint=(scope or Scope.everything(self.catalog)).fingerprint,
                        took_ms=(time.perf_counter() - started) * 1000 / max(1, len(checked)),
                        pinned=pinned_tools,
                        abstained=bool(reason),
                        reason=reason,
                    )
                )
        return results

    def default_threshold(self, pool: str | None = "") -> float:
        """The confidence a request's best match needs when the request names none, for ``pool``
        (its feedback, as ``route``'s ``usage_pool``): the ranking config's when it sets one; by
        default ``DEFAULT_MIN_CONFIDENCE`` or this catalog's ``no_tool_floor``, the higher, but
        the floor no higher than the pool's labelled requests allow (``Recalibration.ceiling``);
        0 (never abstain) for an embedder the confidence is not calibrated for."""
        return self._default_threshold(self.calibration(pool))

    def _default_threshold(self, calibration: Calibration | None) -> float:
        if not calibrated_for(self.embedder.name):
            return 0.0
        if self.ranking.min_confidence is not None:
            return self.ranking.min_confidence
        ceiling = calibration.recalibration.ceiling if calibration is not None else 1.0
        return max(DEFAULT_MIN_CONFIDENCE, min(self.no_tool_floor(), ceiling))

    def no_tool_floor(self) -> float:
        """The threshold under which ``FLOOR_SHARE`` of the shipped no-tool requests of every
        language stay on this catalog (``confidence.no_tool_floor``): each routed as a new request
        would be, with the catalog's examples as views, itself left out of its no-tool neighbours.
        Measured once per router (a catalog change builds a new one); 0 for an empty catalog or
        an embedder the confidence is not calibrated for."""
        if not len(self.catalog) or not calibrated_for(self.embedder.name):
            return 0.0
        with self._floor_lock:
            if self._floor is None:
                calibration, views = self.calibration(None), self.views(None)
                best = [
                    self._best_confidence(text, vector, float(none), calibration, views)
                    for text, vector, none in zip(
                        no_tool_requests(), calibration.none_vectors, calibration.own_none, strict=True
                    )
                ]
                self._floor = no_tool_floor(best, no_tool_languages())
            return self._floor

    def _floor_key(self) -> str:
        """What the no-tool floor depends on besides the shipped requests: the model, the catalog
        (its tools and examples), the ranking and the shape."""
        ranking = replace(self.ranking, min_confidence=None)  # a threshold set aside, the floor is not used
        parts = [self.embedder.name, self.catalog.fingerprint, repr(ranking), repr(SHAPE), FLOOR_SHARE, DEFAULT_K]
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def _best_confidence(
        self, text: str, vector: Vector, none: float, calibration: Calibration, views: ExampleViews | None
    ) -> float:
        """The shape's confidence of ``text``'s best match among its first ``DEFAULT_K``."""
        ranked = self._rank(text, vector, DEFAULT_K, None, views)
        matches = self._matches(ranked, None, calibration, none, leading=DEFAULT_K)[:DEFAULT_K]
        return max((m.confidence for m in matches), default=0.0)

    def calibration(self, pool: str | None = None) -> Calibration:
        """Where this catalog, with the views ``pool`` ranks with (its examples, and that pool's
        feedback unless None), puts requests no tool serves (``toolsift.router.confidence``):
        refitted when the pool's feedback changed, as its views are."""
        version = self.usage.version if self.usage is not None and pool is not None else -1  # before the views
        views = self.views(pool)
        key = "\x00none" if pool is None else pool
        with self._calibration_lock:
            known = self._calibrations.get(key)
            if known is not None and known[0] == version:
                return known[1]
            vectors = no_tool_vectors(self.embedder.name, self.embedder.dimension, self.embedder.embed_queries)
            if self._tool_best is None:
                self._tool_best = self._best_text_cosines(vectors)
            best = self._tool_best
            if views is not None and len(views):  # a fed request lifts its tool for requests like it
                best = np.maximum(best, views.best_of(vectors))
            calibration = self._recalibrated(key, pool, Calibration.fit(vectors, best))
            self._calibrations[key] = (version, calibration)
            return calibration

    def _labelled(self, pool: str | None) -> list[tuple[int, str]]:
        """(tool id, request) for the catalog's examples and, unless ``pool`` is None, its feedback."""
        pairs = list(self._examples)
        if self.usage is not None and pool is not None:
            pairs += [(self.catalog.position(t), text) for t, text in self.usage.examples(pool) if t in self.catalog]
        return pairs

    def _recalibrated(self, key: str, pool: str | None, calibration: Calibration) -> Calibration:
        """``calibration`` with the per-match recalibration its labelled requests support: none under
        ``RECALIBRATE_FROM`` requests, refitted once they grew by ``RECALIBRATION_GROWTH``."""
        pairs = self._labelled(pool)
        tools_of: dict[str, set[int]] = {}
        for tool_id, text in pairs:
            tools_of.setdefault(text, set()).add(tool_id)
        known = self._recalibrations.get(key)
        if not self.ranking.recalibrate or len(tools_of) < RECALIBRATE_FROM:
            return calibration
        if known is None:  # the first fit (a service makes it before it serves)
            known = self._fit_recalibration(key, pairs, tools_of, calibration)
            self._recalibrations[key] = known
        elif len(tools_of) >= known.requests * RECALIBRATION_GROWTH and key not in self._refitting:
            self._refitting[key] = threading.Thread(
                target=self._refit, args=(key, pairs, tools_of, calibration), name="toolsift-refit", daemon=True
            )
            self._refitting[key].start()  # off the request path: routes keep the fit they have
        return replace(calibration, recalibration=known)

    def _refit(
        self, key: str, pairs: Sequence[tuple[int, str]], tools_of: dict[str, set[int]], calibration: Calibration
    ) -> None:
        try:
            fitted = self._fit_recalibration(key, pairs, tools_of, calibration)
            with self._calibration_lock:
                self._recalibrations[key] = fitted
                self._calibrations.pop(key, None)  # the next route takes the new fit
        finally:
            with self._calibration_lock:
                self._refitting.pop(key, None)

    def ready(self) -> None:
        """Compute now what the first request would otherwise pay for: the confidence's
        calibration (the catalog's own and the shared feedback pool's) and the no-tool floor."""
        self.calibration()
        self.calibration("")
        self.no_tool_floor()

    def settle(self) -> None:
        """Wait until the recalibrations being refitted in the background are done."""
        with self._calibration_lock:
            running = list(self._refitting.values())
        for thread in running:
            thread.join()

    def _fit_recalibration(
        self, key: str, pairs: Sequence[tuple[int, str]], tools_of: dict[str, set[int]], calibration: Calibration
    ) -> Recalibration:
        """Isotonic regression from a seeded sample of the labelled requests, in folds, each routed
        (top 5, parts and all) with the views of every other labelled request: as a new request
        would be."""
        chosen = random.Random(0).sample(sorted(tools_of), min(RECALIBRATION_SAMPLE, len(tools_of)))
        confidences: list[float] = []
        relevant: list[float] = []
        best: list[float] = []  # each request's, and the share of its tools it found: the ceiling
        found: list[float] = []
        for fold in (chosen[start::RECALIBRATION_FOLDS] for start in range(RECALIBRATION_FOLDS)):
            out, pool_key = set(fold), f"\x00refit:{key}"
            with self._views_lock:  # the views of every labelled request outside the fold
                views = self._views_of([p for p in pairs if p[1] not in out], pool_key)
                self._summaries_in_use.pop(pool_key, None)
            parts = {text: self._intents(text, 5) if self.ranking.split_intents else [] for text in fold}
            needed = list(dict.fromkeys([*fold, *(part for found in parts.values() for part in found)]))
            with self._views_lock:
                missing = [text for text in needed if text not in self._example_vectors]
                vectors = {text: self._example_vectors[text] for text in needed if text in self._example_vectors}
            if missing:
                vectors.update(zip(missing, self.embed_queries(missing), strict=True))
            for text in fold:
                matches, share = self._shape_matches(text, parts[text], vectors, 5, None, views, calibration)
                for match in matches:
                    confidences.append(match.confidence * share)
                    relevant.append(float(self.catalog.position(match.name) in tools_of[text]))
                best.append(max((m.confidence for m in matches), default=0.0))
                found.append(sum(relevant[len(relevant) - len(matches) :]) / len(tools_of[text]))
        fitted = fit_recalibration(np.asarray(confidences), np.asarray(relevant), len(tools_of))
        return replace(fitted, ceiling=recall_ceiling(best, found))

    def _best_text_cosines(self, queries: Matrix, chunk: int = 8192) -> np.ndarray:
        """Each query's best cosine with a tool's own text: one pass over the vectors."""
        best = np.full(queries.shape[0], -1.0, dtype=np.float32)
        count = len(self.catalog)
        for start in range(0, count, chunk):
            block = self.index.vectors.vectors(np.arange(start, min(count, start + chunk), dtype=np.int64))
            best = np.maximum(best, (block @ queries.T).max(axis=0))
        return best

    def _intents(self, query: str, k: int) -> list[str]:
        """The parts of a multi-part query, each routed on its own too; [] when it has one part."""
        if k < 2:
            return []
        parts = split_intents(query)
        return parts if len(parts) > 1 else []

    def _rank(self, query: str, vector: Vector, k: int, allowed: IdArray | None, views: ExampleViews | None) -> Ranked:
        return rank(
            vector,
            without_payload(query),
            k,
            allowed,
            self.index.vectors,
            self.lexical,
            self.ranking,
            self.moments,
            getattr(self.embedder, "segments", None),
            views,
            self.groups if self.ranking.group_weight > 0 else None,
        )

    @cached_property
    def groups(self) -> GroupIndex | None:
        """The catalog's groups and their centroids (None with fewer than two groups)."""
        return GroupIndex.of_catalog([tool.group for tool in self.catalog], self.index.vectors)

    # -- learning from use -----------------------------------------------------------------

    def attach(self, book: UsageBook) -> None:
        """Learn from ``book`` (shared with other routers, e.g. the next one after a reload);
        its requests are embedded now, so the first route after it pays nothing."""
        self.usage = book
        for pool in book.pools():
            self.calibration(pool)  # and its views

    def learn(self, feedback: Feedback | Sequence[Feedback]) -> None:
        """Record that a request was answered by a tool (a book is created on first use).
        Each is checked first (``checked_feedback``): nothing is recorded if one is wrong."""
        items = [self.checked_feedback(item) for item in ([feedback] if isinstance(feedback, Feedback) else feedback)]
        if self.usage is None:
            self.usage = UsageBook()
        for item in items:
            self.usage.add(item)

    def checked_feedback(self, feedback: Feedback, scope: Scope | None = None) -> Feedback:
        """``feedback`` with its query as ``route`` accepts it and its tool by catalog name (a sent
        name works too); a tool unknown, or outside ``scope``, raises ``UnknownTool`` (``tool``)."""
        scope = scope or Scope.everything(self.catalog)
        name = self.catalog.resolve(feedback.tool)
        if not scope.contains(name):
            raise UnknownTool(feedback.tool, scope.names, field="tool")
        return replace(feedback, query=_check_query(feedback.query), tool=name)

    def views(self, pool: str | None) -> ExampleViews | None:
        """The example views ranking uses for ``pool``: the catalog's examples and, unless
        ``pool`` is None, that pool's feedback; rebuilt when the book changed."""
        version = self.usage.version if self.usage is not None and pool is not None else -1
        key = "\x00none" if pool is None else pool
        with self._views_lock:
            known = self._views.get(key)
            if known is not None and known[0] == version:
                return known[1]
            views = self._views_of(self._labelled(pool), key)
            self._views[key] = (version, views)
            self._forget_unretained_vectors()
            return views

    def _forget_unretained_vectors(self) -> None:
        """Drop the vectors of requests no pool retains any more (evicted by the retention caps,
        or reset), once they outnumber the retained ones: memory follows what is retained, not
        every request ever embedded."""
        retained = {text for _, text in self._examples}
        if self.usage is not None:
            retained |= {text for pool in self.usage.pools() for _, text in self.usage.examples(pool)}
        if len(self._example_vectors) > 2 * len(retained) + 256:
            self._example_vectors = {t: v for t, v in self._example_vectors.items() if t in retained}

    def _views_of(self, pairs: Sequence[tuple[int, str]], pool_key: str) -> ExampleViews | None:
        """The views of the labelled ``pairs`` (tool id, request), offsets and all (under the views lock)."""
        found = self._example_pairs(pairs, pool_key)
        if not found:
            return None
        requests: dict[int, list[Vector]] = {}
        for tool_id, text in dict.fromkeys(pairs):
            requests.setdefault(tool_id, []).append(self._example_vectors[text])
        ids = np.asarray(sorted(requests), dtype=np.int64)
        texts = dict(zip(ids.tolist(), self.index.vectors.vectors(ids), strict=True))
        segments = getattr(self.embedder, "segments", None) or [(0, self.embedder.dimension)]
        stacked = {tool_id: np.vstack(rows) for tool_id, rows in requests.items()}
        floor = float(getattr(self.embedder, "view_offset_floor", 0.0) or 0.0)  # a tuned model's
        return ExampleViews.of(found, view_offsets(stacked, texts, segments, floor))

    def _example_pairs(self, pairs: Sequence[tuple[int, str]], pool_key: str) -> list[tuple[int, Vector]]:
        """(tool id, vector) for each example; a tool with many is summarised (``summarise``).
        Summaries no pool uses any more (a tool's requests changed) are dropped: memory follows
        the retained feedback, not every set of requests a tool ever had."""
        missing = list(dict.fromkeys(text for _, text in pairs if text not in self._example_vectors))
        for start in range(0, len(missing), 256):
            batch = missing[start : start + 256]
            vectors = self.embedder.embed_queries([without_payload(text) for text in batch])
            self._example_vectors.update(zip(batch, vectors, strict=True))
        texts: dict[int, list[str]] = {}
        for tool_id, text in pairs:
            texts.setdefault(tool_id, []).append(text)
        found: list[tuple[int, Vector]] = []
        keys = [(tool_id, tuple(own)) for tool_id, own in texts.items()]
        for key in keys:
            found += [(key[0], vector) for vector in self._summary(key)]
        self._summaries_in_use[pool_key] = set(keys)
        in_use = set().union(*self._summaries_in_use.values())
        if len(self._summaries) > len(in_use):
            self._summaries = {key: value for key, value in self._summaries.items() if key in in_use}
        return found

    def _summary(self, key: tuple[int, tuple[str, ...]]) -> Matrix:
        summary = self._summaries.get(key)
        if summary is None:
            summary = summarise(np.vstack([self._example_vectors[text] for text in key[1]]))
            self._summaries[key] = summary
        return summary

    def _merge(
        self,
        whole: Ranked,
        part_tops: Sequence[tuple[str, Ranked]],
        k: int,
        min_score: float | None,
        calibration: Calibration,
        none: dict[str, float],
    ) -> tuple[list[Match], float]:
        """The whole query's best tool, then each part's best when it stands out for its part
        (in the parts' order), then the rest of the whole query's ranking; ``k`` at most. And the
        share of each match's confidence that is its own (``confidence.crowd_share``: the distinct
        tools first for the query or a part, over the sum of the best ``CROWD_DEPTH`` merged
        matches' confidences).
        ``none``: each text's similarity to requests no tool serves (for the confidences)."""
        floor = -np.inf if min_score is None else min_score
        query = next(iter(none))
        candidates = self._matches(whole, None, calibration, none[query], leading=k)
        ranked = [m for m in candidates if m.score >= floor]
        part_floor = max(floor, self.ranking.intent_min_score)
        from_parts = [
            m
            for text, part in part_tops
            for m in self._matches(part, text, calibration, none[text])[:1]
            if m.score >= part_floor
        ]
        merged: dict[str, Match] = {}
        for match in ranked[:1] + from_parts + ranked[1:]:
            merged.setdefault(match.name, match)
        best = list(merged.values())
        asks = len({m.name for m in candidates[:1] + from_parts})
        share = crowd_share([m.confidence for m in best[:CROWD_DEPTH]], asks)
        return [m if m.rank == rank else replace(m, rank=rank) for rank, m in enumerate(best[:k], 1)], share

    def _shape_matches(
        self,
        query: str,
        parts: Sequence[str],
        vectors: dict[str, Vector],
        k: int,
        allowed: IdArray | None,
        views: ExampleViews | None,
        calibration: Calibration,
        min_score: float | None = None,
    ) -> tuple[list[Match], float]:
        """The query's matches (its parts' best tools merged in) with the shape's confidences, and
        the share of them that is each match's own (``_merge``)."""
        whole = self._rank(query, vectors[query], max(k, CROWD_DEPTH), allowed, views)
        part_tops = [(part, self._rank(part, vectors[part], 1, allowed, views)) for part in parts]
        none = {text: calibration.none_similarity(vectors[text]) for text in [query, *parts]}
        return self._merge(whole, part_tops, k, min_score, calibration, none)

    def _reported_matches(
        self, matches: list[Match], query: str, calibration: Calibration, share: float
    ) -> list[Match]:
        """``matches`` ranked 1.. with each one's confidence that it is the one: its ``share`` of
        the shape's (``crowd_share``), recalibrated (``Recalibration``); a tool the query names
        exactly keeps the confidence it had."""
        named = self.catalog.resolve(query.strip())
        recalibrated = calibration.recalibration.apply
        share = share if self.ranking.recalibrate else 1.0
        return [
            replace(
                m,
                rank=rank,
                confidence=m.confidence if m.name == named else round(recalibrated(m.confidence * share), 4),
            )
            for rank, m in enumerate(matches, start=1)
        ]

    def _named_first(self, query: str, matches: list[Match], allowed: IdArray | None, k: int) -> list[Match]:
        """A query that is a tool's exact name (or the name providers were sent) finds that tool
        first when the caller may see it: a model that knows the name gets the tool."""
        tool = self.catalog.get(self.catalog.resolve(query.strip()))
        if tool is None or matches and matches[0].name == tool.name:
            return matches
        if allowed is not None and not np.isin(self.catalog.position(tool.name), allowed):
            return matches  # not this caller's, forbidden by the rules, or pinned (delivered anyway)
        found = next((m for m in matches if m.name == tool.name), None)
        first = replace(found or Match(tool, matches[0].score if matches else 0.0, 1, lexical=1.0), confidence=1.0)
        rest = [m for m in matches if m.name != tool.name]
        return [replace(m, rank=position) for position, m in enumerate([first, *rest][:k], start=1)]

    def _matches(
        self, ranked: Ranked, intent: str | None, calibration: Calibration, none: float, leading: int = 0
    ) -> list[Match]:
        """``ranked`` as matches with the shape's confidences (the best of its first ``leading``:
        ``Calibration.features``)."""
        rows = zip(
            ranked.ids.tolist(),
            ranked.scores.tolist(),
            ranked.similarity.tolist(),
            ranked.lexical.tolist(),
            ranked.dense_part.tolist(),
            ranked.lexical_part.tolist(),
            calibration.confidences(ranked.evidence, none, ranked.coverage, leading).tolist(),
            strict=True,
        )
        tools = self.catalog.tools
        return [
            Match(
                tools[tool_id],
                round(score, 6),
                position,
                round(similarity, 6),
                round(lexical, 6),
                round(dense_part, 6),
                round(lexical_part, 6),
                intent,
                round(confidence, 4),
            )
            for position, (tool_id, score, similarity, lexical, dense_part, lexical_part, confidence) in enumerate(
                rows, 1
            )
        ]

    def pinned_tools(
        self, names: Sequence[str], scope: Scope | None = None, rules: TagRules | None = None
    ) -> tuple[Tool, ...]:
        """The catalog's tools for ``names``, once each; a name unknown (or outside ``scope``)
        raises UnknownTool, whose suggestions come from the scope only. A pinned tool that the
        request's own ``rules`` forbid is a conflict (InvalidQuery naming the tool and the rule):
        every delivered tool satisfies the request's rules."""
        if isinstance(names, str):
            names = [names]
        if len(names) > MAX_PINNED:
            raise InvalidQuery("pinned", f"names {len(names)} tools; the limit is {MAX_PINNED}")
        if not names:
            return ()
        scope = scope or Scope.everything(self.catalog)
        tools = []
        for name in dict.fromkeys(self.catalog.resolve(name) for name in names):  # a sent (wire) name works too
            tool = self.catalog.get(name)
            if tool is None or not scope.contains(tool):
                raise UnknownTool(name, scope.names)
            broken = rules.violation(tool) if rules is not None else None
            if broken is not None:
                raise InvalidQuery(
                    "pinned",
                    f"'{name}' is pinned, but this request's rules forbid it: {broken}. Unpin it or relax the rule",
                )
            tools.append(tool)
        return tuple(tools)

    def scope_for(self, rules: TagRules, names: Sequence[str] = ()) -> Scope:
        """The tools that pass ``rules`` and, when ``names`` is given, are among them.
        Tags and names the catalog lacks simply match nothing (a tenant's view, not a request)."""
        known = TagRules(
            tuple(t for t in rules.any_of if t in self.catalog.rule_tags),
            rules.all_of,
            tuple(t for t in rules.exclude if t in self.catalog.rule_tags),
            rules.access,
        )
        if rules.any_of and not known.any_of or any(t not in self.catalog.rule_tags for t in rules.all_of):
            return Scope.of(self.catalog, np.empty(0, dtype=np.int64))
        allowed = self.tag_index.allowed(known)
        ids = np.arange(len(self.catalog), dtype=np.int64) if allowed is None else allowed
        if names:
            listed = np.asarray(
                sorted(self.catalog.position(n) for n in set(names) if n in self.catalog), dtype=np.int64
            )
            ids = np.intersect1d(ids, listed, assume_unique=True)
        return Scope.of(self.catalog, ids)


def within_query_limit(query: str) -> bool:
    """Whether ``route`` accepts ``query``'s length (longer requests are refused)."""
    return len(query.strip()) <= MAX_QUERY_CHARS


def _check_query(query: str) -> str:
    if not isinstance(query, str):
        raise InvalidQuery("query", f"must be a string, not {type(query).__name__}")
    stripped = query.strip()
    if not stripped:
        raise InvalidQuery("query", "is empty; send the user's request as text")
    if not within_query_limit(stripped):
        raise InvalidQuery(
            "query",
            f"is {len(stripped)} characters; the limit is {MAX_QUERY_CHARS}. Send the latest user "
            "turn (or a summary of it), not the whole conversation",
        )
    return stripped


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQuery("k", f"must be an integer from 1 to {MAX_K}, got {k!r}")
