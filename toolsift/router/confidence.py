"""Confidence: the probability that a matched tool serves the request, and "no tool" when none does.

A ranking score says which tool fits best, not whether any fits: "thanks!" and "write me a
haiku" still have a best tool. The confidence of a match is a logistic function of three
features whose meaning does not change with the catalog's size or the embedding model:

- **above**: how far the tool's cosine (with its best view: its text or an example request of it)
  lies above the request's cosine with requests that no tool serves, measured from where this
  catalog puts such requests, in their spread. The no-tool requests are a multilingual set that
  ships with toolsift (``toolsift/data/no_tool_requests.yaml``: small talk, thanks, creative
  writing, opinions, general knowledge, reasoning, advice). Compared with every tool of the
  catalog, each one's best cosine tells how high an unrelated request's goes *in this catalog*
  (``center``: the 90th percentile of their margins, each request compared with the other no-tool
  requests, not itself; ``spread``: the center's distance from the median margin, in normal units);
- **below_best**: how far the tool lies below the request's best match, in the same spread (a
  tool far below the best is unlikely to be the one);
- **coverage**: how much of the request's wording the tool's text covers (BM25 over its ceiling,
  0 to 1, the same at 200 or 20,000 tools).

The logistic's coefficients (``SHAPE``) are fitted by ``benchmarks/abstention/fit_shape.py`` on
requests written for the bundled catalog and the no-tool set, never on benchmark data; what is
catalog-specific is the center and spread, refitted by every router from its own catalog and,
per feedback pool, with that pool's fed requests as views of their tools (a reload, an edit, new
feedback and a restart all refit; the same catalog and feedback give the same calibration).

Two questions, two figures. Whether *any* tool serves the request is the best match's
confidence from the shape: the answer abstains when it is under ``min_confidence`` (by default
0.1, or the catalog's ``no_tool_floor`` where higher, but no higher than the pool's labelled
requests allow: ``recall_ceiling``). Whether *this*
match is the one is each match's reported confidence: once the catalog knows enough labelled
requests (its ``examples`` and the pool's feedback, ``RECALIBRATE_FROM`` at least), the shape's
confidences are recalibrated to how often matches like them were the labelled tool there
(``Recalibration``: an isotonic regression, fitted on those requests, each routed with the
views of the others). A catalog of near-duplicate tools, where one request fits several, thus
reports lower per-match confidences without abstaining more.

Before that, with or without labelled requests, a match's confidence is shared with its crowd
(``crowd_share``): when many tools fit a request about as well (a catalog of a hundred image
classifiers, two versions of one search tool), each is less likely the one the request means.
The shape's confidences of the request's best ``CROWD_DEPTH`` tools sum to how many tools fit it;
the request asks for as many as the distinct tools its parts put first (one for a single
request); when more fit, each match keeps that share of its confidence. This too changes what a
match reports, not whether the answer abstains.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import yaml

from toolsift.types import Matrix, Vector

NO_TOOL_FILE = Path(__file__).resolve().parent.parent / "data" / "no_tool_requests.yaml"
NEIGHBOURS = 3
"""A request's no-tool similarity: the mean cosine of its nearest few no-tool requests."""
DEFAULT_MIN_CONFIDENCE = 0.1
"""Below it a request's best match is no match: the answer abstains. Chosen from
``toolsift abstention-bench`` (benchmarks/RESULTS.md). A catalog raises it to its ``no_tool_floor``
where that is higher."""
FLOOR_SHARE = 0.8
"""The share of the shipped no-tool requests, in each language, that must abstain on a catalog
with the default threshold (``no_tool_floor``)."""
RECALL_SLACK = 0.01
"""The Recall@5 a catalog's labelled requests may lose to its no-tool floor (``recall_ceiling``)."""
KEEP_RATIO = 0.0
"""Adaptive k: a match below this share of the best match's confidence (and below the
threshold itself) is dropped, so a clear request gets fewer, surer tools."""
MIN_SPREAD = 1e-3
CENTER_QUANTILE = 0.9
"""The catalog's center is this quantile of the no-tool requests' margins: where the hardest of
them (the ones in the catalog's own language, phrased closest to its tools) lie, whatever the
mix of languages below it."""
RECALIBRATE_FROM = 50
"""Labelled requests a catalog needs before its per-match confidences are recalibrated."""
RECALIBRATION_SAMPLE = 300
"""At most this many labelled requests (seeded) are routed to fit the recalibration."""
RECALIBRATION_FOLDS = 2
"""The sample is routed in this many folds, each with the views of every labelled request
outside it (5 measured the same, at 2.5 times the cost: benchmarks/DECISIONS.md)."""
RECALIBRATION_GROWTH = 1.25
"""The recalibration is refitted once the labelled requests grew by this factor since its fit."""
CROWD_DEPTH = 20
"""A request's crowd: the sum of the shape's confidences of its best this many tools."""
SPREAD_UNITS = 1.2816
"""The spread: the center's distance from the median margin, in the standard deviations that
separate a normal distribution's 90th percentile from its median."""


@dataclass(frozen=True)
class Shape:
    """Logistic coefficients over (above, below_best, coverage)."""

    intercept: float
    above: float
    below_best: float
    coverage: float


SHAPE = Shape(intercept=-2.509, above=1.3185, below_best=-4.956, coverage=5.0128)
"""Fitted by benchmarks/abstention/fit_shape.py (its output names the figures)."""


def calibrated_for(model: str) -> bool:
    """Whether the confidence means something for ``model``: any sentence embedder, not the
    ``hashing-*`` bag of words (a test and lexical-only stand-in), which never abstains unless a
    request asks for a ``min_confidence``."""
    return not any(part.startswith("hashing-") for part in model.split("+"))


@cache
def _no_tool_file() -> tuple[tuple[str, str], ...]:
    """(language, request) for each shipped no-tool request, in file order: read once per process
    (libyaml's loader where installed: a tenth of the pure-Python one's time)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    by_language: dict[str, list[str]] = yaml.load(NO_TOOL_FILE.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506
    return tuple((language, text) for language, texts in by_language.items() for text in texts)


@cache
def no_tool_requests() -> tuple[str, ...]:
    """The shipped requests no tool should serve, every language's, in file order."""
    return tuple(text for _, text in _no_tool_file())


@cache
def no_tool_languages() -> tuple[str, ...]:
    """The language of each of ``no_tool_requests()``, in the same order."""
    return tuple(language for language, _ in _no_tool_file())


def no_tool_floor(best: Sequence[float], languages: Sequence[str]) -> float:
    """The least threshold under which ``FLOOR_SHARE`` of the no-tool requests of every language
    stay: ``best``, each one's best confidence on a catalog, in the order of ``languages``.

    Requests no tool serves reach higher confidences on some catalogs than the shape saw: among
    4,000 tools one shares a topic with "explain gravity to a child" (``getGravity``) and most of
    its words. The default threshold then lets too many through; this floor, measured on the
    shipped requests, raises it there and nowhere else (benchmarks/DECISIONS.md)."""
    values = np.asarray(best, dtype=np.float64)
    tags = np.asarray(languages)
    quantiles = [float(np.quantile(values[tags == language], FLOOR_SHARE)) for language in dict.fromkeys(languages)]
    return round(max(quantiles, default=0.0), 4)


_vectors: dict[tuple[str, int], Matrix] = {}
_vectors_lock = threading.Lock()


def no_tool_vectors(model: str, dimension: int, embed: Callable[[Sequence[str]], Matrix]) -> Matrix:
    """The no-tool requests' vectors for a model, embedded once per process."""
    key = (model, dimension)
    with _vectors_lock:
        known = _vectors.get(key)
    if known is None:
        known = np.asarray(embed(list(no_tool_requests())), dtype=np.float32)
        with _vectors_lock:
            _vectors[key] = known
    return known


@cache
def no_tool_digest() -> str:
    """What the shipped no-tool requests are, in one digest (a saved measurement names it)."""
    return hashlib.sha256("\x00".join(no_tool_requests()).encode()).hexdigest()


VECTORS_FILE = "no_tool_vectors.npy"
NOTE_FILE = "no_tool.json"


def kept_measurements(model: str, dimension: int, floor: float | None, floor_key: str) -> dict[str, bytes]:
    """What an index folder keeps of this process's no-tool measurements for ``model``
    (``ToolIndex.save(attachments=)``): the no-tool requests' vectors, once embedded here, and
    the catalog's no-tool floor when measured (``floor_key``: what it was measured with)."""
    with _vectors_lock:
        vectors = _vectors.get((model, dimension))
    if vectors is None:
        return {}
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    note = {
        "model": model,
        "dimension": dimension,
        "requests": no_tool_digest(),
        "floor": floor,
        "floor_key": floor_key,
    }
    return {VECTORS_FILE: buffer.getvalue(), NOTE_FILE: orjson.dumps(note)}


def adopt_measurements(attachments: Mapping[str, bytes], model: str, dimension: int, floor_key: str) -> float | None:
    """Take back what ``kept_measurements`` saved, when it was measured with the same model and
    the same shipped requests: the vectors (no embedding of them in this process) and, when
    ``floor_key`` is the same too (catalog, ranking, shape), the floor. Anything else (another
    model, another toolsift's requests, a damaged file) is ignored and measured again."""
    try:
        note = orjson.loads(attachments[NOTE_FILE])
        vectors = np.load(io.BytesIO(attachments[VECTORS_FILE]), allow_pickle=False)
    except (KeyError, ValueError, OSError):  # orjson.JSONDecodeError is a ValueError
        return None
    if not isinstance(note, dict) or note.get("model") != model or note.get("requests") != no_tool_digest():
        return None
    if vectors.dtype != np.float32 or vectors.shape != (len(no_tool_requests()), dimension):
        return None
    with _vectors_lock:
        _vectors.setdefault((model, dimension), vectors)
    floor = note.get("floor")
    if note.get("floor_key") != floor_key or not isinstance(floor, int | float) or not 0 <= floor <= 1:
        return None
    return float(floor)


@dataclass(frozen=True)
class Recalibration:
    """A catalog's per-match confidence from the shape's: a non-decreasing map through ``points``
    (shape's confidence, share relevant), linear between them and flat beyond them."""

    points: tuple[tuple[float, float], ...] = ()
    requests: int = 0
    """Labelled requests it was fitted from (0: the identity, not fitted)."""
    ceiling: float = 1.0
    """The highest default threshold those requests allow (``recall_ceiling``): the no-tool floor
    is never raised past it."""

    def apply(self, confidence: float) -> float:
        if not self.points:
            return confidence
        xs, ys = zip(*self.points, strict=True)
        return float(np.interp(confidence, xs, ys))


IDENTITY = Recalibration()


def fit_recalibration(confidences: np.ndarray, relevant: np.ndarray, requests: int) -> Recalibration:
    """Isotonic regression (pool-adjacent violators): ``confidences`` pooled, in order, into steps
    whose share of ``relevant`` (0/1) never falls; each step a point (its mean confidence, that
    share, kept half a match from 0 and 1). A higher confidence never reports a lower one, and no
    curve is assumed (Platt scaling's sigmoid measured worse: benchmarks/DECISIONS.md)."""
    order = np.argsort(np.asarray(confidences, dtype=np.float64), kind="stable")
    steps: list[list[float]] = []  # [sum of confidences, sum relevant, matches]
    for confidence, label in zip(np.asarray(confidences)[order], np.asarray(relevant)[order], strict=True):
        steps.append([float(confidence), float(label), 1.0])
        while len(steps) > 1 and steps[-2][1] * steps[-1][2] >= steps[-1][1] * steps[-2][2]:
            last = steps.pop()
            steps[-1] = [a + b for a, b in zip(steps[-1], last, strict=True)]
    if not steps:
        return IDENTITY
    shares = np.maximum.accumulate([min(max(hit / n, 0.5 / n), 1 - 0.5 / n) for _, hit, n in steps])
    points = tuple(
        (round(total / n, 4), round(float(share), 4)) for (total, _, n), share in zip(steps, shares, strict=True)
    )
    return Recalibration(points, requests)


def recall_ceiling(best: Sequence[float], recall: Sequence[float], slack: float = RECALL_SLACK) -> float:
    """The highest threshold at which labelled requests, routed as new ones (``best``: each one's
    best confidence; ``recall``: the share of its tools in its matches), lose at most ``slack``
    of their Recall@5 to abstaining; 1 when nothing they find is lost below it."""
    order = np.argsort(np.asarray(best, dtype=np.float64), kind="stable")
    values = np.asarray(best, dtype=np.float64)[order]
    lost = np.cumsum(np.asarray(recall, dtype=np.float64)[order]) / max(1, len(values))
    over = np.flatnonzero(lost > slack + 1e-12)
    return round(float(values[over[0]]), 4) if len(over) else 1.0


def _logistic(
    design: np.ndarray,
    labels: np.ndarray,
    start: np.ndarray,
    penalty: np.ndarray,
    steps: int = 50,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Logistic regression of ``labels`` (0/1) on ``design`` rows (each counted ``weights`` times,
    1 by default): Newton's method from ``start``, an L2 ``penalty`` (per coefficient) toward it,
    each step halved until the penalised log loss falls (a plain Newton step can overshoot and
    diverge)."""
    counts = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)

    def loss(coefficients: np.ndarray) -> float:
        logits = design @ coefficients
        log_loss = labels * np.logaddexp(0, -logits) + (1 - labels) * np.logaddexp(0, logits)
        return float((counts * log_loss).sum() + 0.5 * (penalty * (coefficients - start) ** 2).sum())

    coefficients = start.astype(np.float64).copy()
    for _ in range(steps):
        predicted = _sigmoid(design @ coefficients)
        gradient = design.T @ (counts * (predicted - labels)) + penalty * (coefficients - start)
        hessian = (design * (counts * predicted * (1 - predicted))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)
        size, before = 1.0, loss(coefficients)
        while size > 1e-6 and loss(coefficients - size * step) > before - 1e-4 * size * float(gradient @ step):
            size /= 2
        coefficients = coefficients - size * step
        if float(np.abs(size * step).max()) < 1e-8:
            break
    return coefficients


def _sigmoid(x: Any) -> Any:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -30.0, 30.0)))


@dataclass(frozen=True)
class Calibration:
    """Where this catalog puts requests no tool serves; turns matches into confidences."""

    none_vectors: Matrix
    own_none: np.ndarray
    """Each no-tool request's no-tool similarity, itself left out (for ``Router.no_tool_floor``)."""
    center: float
    spread: float
    shape: Shape = SHAPE
    recalibration: Recalibration = IDENTITY

    @classmethod
    def fit(
        cls, none_vectors: Matrix, best_evidence: Sequence[float] | np.ndarray, shape: Shape = SHAPE
    ) -> Calibration:
        """From each no-tool request's best cosine in the catalog (``best_evidence``, in the
        order of ``none_vectors``): its margin over its no-tool neighbours, others than itself."""
        similar = none_vectors @ none_vectors.T
        np.fill_diagonal(similar, -np.inf)
        own = _nearest_mean(similar)
        margins = np.asarray(best_evidence, dtype=np.float64) - own
        center = float(np.quantile(margins, CENTER_QUANTILE))
        spread = (center - float(np.median(margins))) / SPREAD_UNITS
        return cls(none_vectors, own, center, max(spread, MIN_SPREAD), shape)

    def none_similarity(self, vector: Vector) -> float:
        """How close ``vector`` lies to requests no tool serves (mean of the nearest few)."""
        return float(_nearest_mean((self.none_vectors @ vector)[None, :])[0])

    def features(self, evidence: np.ndarray, none: float, coverage: np.ndarray, leading: int = 0) -> np.ndarray:
        """One row (above, below_best, coverage) per match; ``evidence`` ranked best first. The
        best is the best of the first ``leading`` matches (0: of all): the k a request asked for,
        when more are ranked for its crowd."""
        evidence = np.asarray(evidence, dtype=np.float64)
        if not len(evidence):
            return np.empty((0, 3))
        above = (evidence - none - self.center) / self.spread
        below = (float(evidence[: leading or len(evidence)].max()) - evidence) / self.spread
        return np.column_stack([above, below, np.asarray(coverage, dtype=np.float64)])

    def confidences(self, evidence: np.ndarray, none: float, coverage: np.ndarray, leading: int = 0) -> np.ndarray:
        return probability(self.features(evidence, none, coverage, leading), self.shape)


def probability(features: np.ndarray, shape: Shape) -> np.ndarray:
    weights = np.array([shape.above, shape.below_best, shape.coverage])
    return np.asarray(_sigmoid(shape.intercept + features @ weights))


def _nearest_mean(similar: np.ndarray) -> np.ndarray:
    count = min(NEIGHBOURS, similar.shape[1] - 1) if similar.shape[1] > 1 else 1
    nearest = -np.partition(-similar, count - 1, axis=1)[:, :count]
    return np.asarray(nearest.mean(axis=1))


def fit_shape(
    features: np.ndarray, labels: np.ndarray, l2: float = 1e-2, steps: int = 50, weights: np.ndarray | None = None
) -> Shape:
    """Logistic regression (Newton's method, a light L2 on the slopes) of ``labels`` (0/1) on
    ``features`` rows (above, below_best, coverage), each counted ``weights`` times (1 by default)."""
    design = np.column_stack([np.ones(len(features)), features])
    penalty = np.array([0.0] + [l2] * features.shape[1])
    fitted = _logistic(design, np.asarray(labels, dtype=np.float64), np.zeros(design.shape[1]), penalty, steps, weights)
    return Shape(*(round(float(w), 4) for w in fitted))


def crowd_share(confidences: Sequence[float], asks: int) -> float:
    """The share of a match's confidence that is its own: ``asks`` (how many tools the request
    asks for) over the crowd (the sum of ``confidences``, the shape's, of its best tools: how
    many fit), at most 1. Label-free: what the catalog's near-equals say, not what users chose."""
    crowd = float(np.sum(confidences))
    return min(1.0, asks / crowd) if crowd > 0 else 1.0


def abstention(confidences: Sequence[float], threshold: float) -> tuple[list[int], str]:
    """Which matches to keep (positions in ``confidences``, best first) and, when none is kept,
    why. Nothing is kept when the best confidence is under ``threshold``; otherwise a match is
    kept unless it is under ``threshold`` and under ``KEEP_RATIO`` of the best (adaptive k).
    A threshold of 0 keeps everything."""
    if threshold <= 0 or not confidences:
        return list(range(len(confidences))), ""
    best = max(confidences)
    if best < threshold:
        return (
            [],
            f"no tool is likely enough to serve this request (best confidence {best:.2f}, needed {threshold:.2f})",
        )
    floor = min(threshold, KEEP_RATIO * best)
    return [i for i, confidence in enumerate(confidences) if confidence >= floor], ""
