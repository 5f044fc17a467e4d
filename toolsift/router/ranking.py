"""Hybrid ranking: dense (cosine) and lexical (BM25) evidence, each standardised per query.

    score = z(cosine(query, tool)) + lexical_weight * z(bm25(query, tool))

where ``z(x) = (x - mean) / std`` over the query's scores for every tool of the catalog. Raw
cosines and BM25 scores live on scales that differ by model, catalog and query; standardising
each signal per query makes "how much does this tool stand out" comparable, so a strong lexical
match (a rare word, a Korean or Chinese term a small English model cannot read) weighs as much as
a strong semantic one. The dense mean and spread come from the catalog's mean vector and
second-moment matrix (exact, no extra search); the lexical ones from the BM25 scores, which are
computed for every tool anyway.

Candidates are the dense top-N and the lexical top-N among the eligible tools; both signals are
scored for all of them. ``score`` is in standard deviations: 3 means the tool stands three
standard deviations above the catalog's average tool for this query.

Why this score and the weight 0.3: measured over the four shared datasets, figures in
benchmarks/DECISIONS.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolsift.index import FaissIndex
from toolsift.index.lexical import LexicalIndex, best_positive
from toolsift.router.usage import ExampleViews
from toolsift.types import IdArray, Matrix, Vector

DEFAULT_LEXICAL_WEIGHT = 0.3
DEFAULT_CANDIDATES = 100
DEFAULT_LEXICAL_CAP = 16.0
"""sqrt(257): what plain standardisation allows on a catalog of 257 tools, now the most at any size.
Caps of 16, 12, 8, 6 and 4 measured on the four shared datasets: benchmarks/DECISIONS.md."""
DEFAULT_INTENT_MIN_SCORE = 5.0
EXACT_STATS_UP_TO = 4096
"""With tag rules leaving at most this many tools, the dense mean and spread are computed over
exactly those tools; above it, over the whole catalog."""


@dataclass(frozen=True)
class RankingConfig:
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    """Weight of the standardised BM25 score; 0 gives plain dense ranking."""
    candidates: int = DEFAULT_CANDIDATES
    """How many tools each side proposes before fusion (at least k)."""
    split_intents: bool = True
    """Route each part of a multi-part request too (see ``toolsift.router.intents``)."""
    intent_min_score: float = DEFAULT_INTENT_MIN_SCORE
    """A part's best tool joins the matches only when it scores at least this for its part."""
    lexical_cap: float = DEFAULT_LEXICAL_CAP
    """No tool stands out lexically by more than this many standard deviations (see ``_lexical_z``)."""
    min_confidence: float | None = None
    """A request whose best match is less likely than this to serve it gets no tools (abstains);
    0 never abstains. None: ``DEFAULT_MIN_CONFIDENCE``, raised on a catalog where more than a
    fifth of the shipped no-tool requests would pass it (``Router.default_threshold``)."""
    recalibrate: bool = True
    """Report each match's confidence that it is the one: shared with the request's crowd of
    near-equal matches (``confidence.crowd_share``) and recalibrated from the catalog's labelled
    requests (its examples and the pool's feedback) once it has enough (``Recalibration``).
    False reports the shape's confidence, which the abstention compares either way, and leaves
    the no-tool floor unchecked by the labelled requests (``Recalibration.ceiling``)."""
    group_weight: float = 0.0
    """Weight of the standardised group score (``GroupIndex``) added to each grouped tool's score;
    0 ranks every tool flat (the default: see benchmarks/DECISIONS.md, "Groups")."""

    def __post_init__(self) -> None:
        if self.min_confidence is not None and not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be between 0 and 1, not {self.min_confidence}")
        if not 0.0 <= self.lexical_weight <= 10.0:
            raise ValueError(f"lexical_weight must be between 0 and 10, not {self.lexical_weight}")
        if not 0.0 <= self.group_weight <= 10.0:
            raise ValueError(f"group_weight must be between 0 and 10, not {self.group_weight}")
        if self.candidates < 1:
            raise ValueError(f"candidates must be positive, not {self.candidates}")


@dataclass(frozen=True)
class DenseMoments:
    """Mean vector and second-moment matrix of the catalog's tool vectors: for any query q, the
    mean cosine is q·mean and the variance q·second·q - (q·mean)²."""

    mean: Vector
    second: Matrix

    @classmethod
    def of(cls, dense: FaissIndex, count: int, chunk: int = 8192) -> DenseMoments:
        dimension = dense.dimension
        total = np.zeros(dimension, dtype=np.float64)
        second = np.zeros((dimension, dimension), dtype=np.float64)
        for start in range(0, count, chunk):
            block = dense.vectors(np.arange(start, min(count, start + chunk), dtype=np.int64))
            total += block.sum(axis=0, dtype=np.float64)
            second += block.T @ block  # float32 product, float64 running sum
        count = max(count, 1)
        return cls((total / count).astype(np.float32), (second / count).astype(np.float32))


@dataclass(frozen=True)
class GroupIndex:
    """Each tool's group (``of``: a group number, -1 for none) and each group's centroid: the
    normalised mean of its tools' vectors, what a request for any of its jobs lies near."""

    of: IdArray
    centroids: Matrix

    @classmethod
    def of_catalog(cls, groups: Sequence[str | None], dense: FaissIndex) -> GroupIndex | None:
        names = sorted({group for group in groups if group is not None})
        if len(names) < 2:
            return None  # one group or none: nothing to tell apart
        number = {name: position for position, name in enumerate(names)}
        of = np.asarray([-1 if group is None else number[group] for group in groups], dtype=np.int64)
        vectors = dense.vectors(np.arange(len(groups), dtype=np.int64))
        centroids = np.zeros((len(names), vectors.shape[1]), dtype=np.float32)
        np.add.at(centroids, of[of >= 0], vectors[of >= 0])
        norms = np.linalg.norm(centroids, axis=1, keepdims=True)
        return cls(of, (centroids / np.maximum(norms, 1e-12)).astype(np.float32))

    def scores(self, vector: Vector, candidates: IdArray) -> np.ndarray:
        """Each candidate's group score: its group centroid's cosine, standardised over the
        groups (0 for an ungrouped tool)."""
        similarity = self.centroids @ vector
        spread = float(similarity.std())
        z = (similarity - float(similarity.mean())) / max(spread, 1e-6)
        groups = self.of[candidates]
        return np.where(groups >= 0, z[np.maximum(groups, 0)], 0.0).astype(np.float32)


@dataclass(frozen=True)
class Ranked:
    ids: IdArray
    scores: np.ndarray
    similarity: np.ndarray
    """Cosine similarity."""
    lexical: np.ndarray
    """BM25 scaled to [0, 1] by the best BM25 score of the query (for display)."""
    dense_part: np.ndarray
    lexical_part: np.ndarray
    """The two terms of ``scores``: standardised cosine, and weighted standardised BM25."""
    evidence: np.ndarray
    """Cosine with the tool's best view (its own text or an example request of it)."""
    coverage: np.ndarray
    """BM25 over the query's ceiling (``LexicalIndex.ceiling``): 0 to 1 at any catalog size."""


def rank(
    vector: Vector,
    query: str,
    k: int,
    allowed: IdArray | None,
    dense: FaissIndex,
    lexical: LexicalIndex | None,
    config: RankingConfig,
    moments: DenseMoments | None = None,
    segments: Sequence[tuple[int, int]] | None = None,
    views: ExampleViews | None = None,
    groups: GroupIndex | None = None,
) -> Ranked:
    """The best ``k`` tools among ``allowed`` (all when None), best first; ties go to the lower id.

    ``segments``: for an ensemble embedder, where each model's part of the vectors lies; each
    model's cosine is then standardised on its own and the results summed. ``views``: example
    requests of some tools; such a tool's dense evidence is its best view (``usage.py``).
    ``groups``: with ``config.group_weight``, each tool's group score joins its score."""
    pool = max(k, config.candidates)
    proposals = [dense.search(vector, pool, allowed)[1]]
    use_lexical = lexical is not None and config.lexical_weight > 0
    all_lexical = lexical.scores(query) if use_lexical and lexical is not None else None
    if all_lexical is not None:  # every tool, once per query; the top-N below reuses it
        proposals.append(best_positive(all_lexical, pool, allowed)[1])
    parts = segments or [(0, vector.shape[0])]
    lifts = [_lifts(views, vector, start, end, dense, allowed) for start, end in parts] if views else []
    proposals += [_best_lifted(tools, lifted, pool) for tools, _, lifted in lifts]
    candidates = np.unique(np.concatenate(proposals)).astype(np.int64)
    if not len(candidates):
        empty = np.empty(0, dtype=np.float32)
        return Ranked(candidates, empty, empty, empty, empty, empty, empty, empty)
    candidate_vectors = dense.vectors(candidates)
    similarity = (candidate_vectors @ vector).astype(np.float32)
    dense_part = _standardised(candidates, candidate_vectors, vector, allowed, dense, moments, parts, lifts)
    evidence = similarity + sum(
        (_lift_of(candidates, tools, lifted) for tools, _, lifted in lifts if len(tools)), 0.0
    ) / len(parts)
    lexical_part = np.zeros(len(candidates), dtype=np.float32)
    shown = np.zeros(len(candidates), dtype=np.float32)
    coverage = np.zeros(len(candidates), dtype=np.float32)
    if all_lexical is not None and lexical is not None:
        z = _lexical_z(all_lexical, candidates, allowed, config.lexical_cap)
        lexical_part = (config.lexical_weight * z).astype(np.float32)
        best = float(all_lexical[candidates].max()) if allowed is None else float(all_lexical[allowed].max())
        shown = (all_lexical[candidates] / best if best > 0 else shown).astype(np.float32)
        ceiling = lexical.ceiling(query)
        coverage = (all_lexical[candidates] / ceiling if ceiling > 0 else coverage).astype(np.float32)
    fused = dense_part + lexical_part
    if groups is not None and config.group_weight > 0:  # a tool of the request's likely group goes up
        fused = (fused + config.group_weight * groups.scores(vector, candidates)).astype(np.float32)
    order = np.lexsort((candidates, -fused))[:k]
    return Ranked(
        candidates[order],
        fused[order],
        similarity[order],
        shown[order],
        dense_part[order],
        lexical_part[order],
        np.asarray(evidence, dtype=np.float32)[order],
        coverage[order],
    )


def _lexical_z(all_lexical: np.ndarray, candidates: IdArray, allowed: IdArray | None, cap: float) -> np.ndarray:
    """BM25 standardised over the eligible tools, its spread floored at the best score / ``cap``.

    When one tool alone shares a word with the request, plain standardisation gives it
    sqrt(N - 1) standard deviations: 16 at 254 tools, 54 at 2,886 — one rare word would outrank
    any meaning on a large catalog. With the floor, the best tool is at most ``cap`` deviations
    out, at any catalog size; a request many tools share words with is unchanged."""
    eligible = all_lexical if allowed is None else all_lexical[allowed]
    best = float(eligible.max()) if len(eligible) else 0.0
    spread = max(float(eligible.std()), best / cap if cap > 0 else 0.0)
    if spread <= 0:
        return np.zeros(len(candidates))
    return (all_lexical[candidates] - float(eligible.mean())) / spread


Lifts = tuple[IdArray, np.ndarray, np.ndarray]
"""For one vector segment: the eligible tools with examples (sorted ids), each one's own text
cosine, and how far its best view lies above that (>= 0)."""


def _lifts(
    views: ExampleViews, vector: Vector, start: int, end: int, dense: FaissIndex, allowed: IdArray | None
) -> Lifts:
    tools, nearest = views.nearest(vector, start, end)
    if allowed is not None:
        keep = np.isin(tools, allowed, assume_unique=True)
        tools, nearest = tools[keep], nearest[keep]
    own = dense.vectors(tools)[:, start:end] @ vector[start:end] if len(tools) else nearest
    return tools, own, np.maximum(nearest - own, 0.0).astype(np.float32)


def _best_lifted(tools: IdArray, lifted: np.ndarray, pool: int) -> IdArray:
    """The tools whose examples lift them most: candidates the tool texts alone may miss."""
    if len(tools) <= pool:
        return tools[lifted > 0]
    top = np.argpartition(-lifted, pool)[:pool]
    return tools[top][lifted[top] > 0]


def _standardised(
    candidate_ids: IdArray,
    candidates: Matrix,
    vector: Vector,
    allowed: IdArray | None,
    dense: FaissIndex,
    moments: DenseMoments | None,
    parts: Sequence[tuple[int, int]],
    lifts: Sequence[Lifts],
) -> np.ndarray:
    """Sum over the embedder's segments of each segment's best-view cosine, standardised over
    the eligible tools (exactly for small tag-ruled sets, from the catalog's moments otherwise).

    A view lifts a tool's cosine by ``lift`` >= 0, so the eligible tools' mean and second moment
    of the lifted scores are the plain ones plus the lifted tools' corrections: still exact."""
    eligible: Matrix | None = None
    if allowed is not None and (len(allowed) <= EXACT_STATS_UP_TO or moments is None):
        eligible = dense.vectors(allowed) if len(allowed) else np.zeros((1, vector.shape[0]), np.float32)
    elif moments is None:
        moments = DenseMoments.of(dense, len(dense))
    count = max(1, len(dense) if allowed is None else len(allowed))
    total = np.zeros(candidates.shape[0], dtype=np.float32)
    for segment, (start, end) in enumerate(parts):
        query = vector[start:end]
        scores = candidates[:, start:end] @ query
        if eligible is not None:
            reference = eligible[:, start:end] @ query
            mean, second = float(reference.mean()), float((reference * reference).mean())
        else:
            assert moments is not None
            mean = float(query @ moments.mean[start:end])
            second = float(query @ moments.second[start:end, start:end] @ query)
        if lifts and len(lifts[segment][0]):
            tools, own, lifted = lifts[segment]
            mean += float(lifted.sum()) / count
            second += float(((own + lifted) ** 2 - own**2).sum()) / count
            scores = scores + _lift_of(candidate_ids, tools, lifted)
        std = float(np.sqrt(max(second - mean * mean, 0.0)))
        total += ((scores - mean) / max(std, 1e-6)).astype(np.float32)
    return total


def _lift_of(ids: IdArray, tools: IdArray, lifted: np.ndarray) -> np.ndarray:
    """Each of ``ids``' lift (0 for a tool without examples); ``tools`` is sorted."""
    at = np.minimum(np.searchsorted(tools, ids), len(tools) - 1)
    return np.where(tools[at] == ids, lifted[at], 0.0).astype(np.float32)
