"""Fit the shape of toolsift's confidence (``toolsift.router.confidence.SHAPE``).

Labelled matches come from data written for this project, never from a benchmark dataset: the
requests of ``WRITTEN`` routed against the bundled catalog (a match is
positive when it is the tool the request was written for), and the shipped no-tool requests
(every match negative; each compared with the other no-tool requests, not itself, as the
calibration does). Fitted with each shipped model in turn (all-MiniLM-L6-v2, multilingual-e5-small)
and the matches pooled, so the shape does not lean on one model's cosine scale.

    python benchmarks/abstention/fit_shape.py [--k 5] [--with MORE_REQUESTS.tsv ...]

Prints the coefficients to paste into ``SHAPE`` and how well they fit (log loss, expected
calibration error on the fitted matches).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from toolsift.bench.abstention import ece_of
from toolsift.catalog import load_catalog
from toolsift.embeddings import get_embedder
from toolsift.router import Router
from toolsift.router.confidence import Shape, fit_shape, no_tool_requests, probability
from toolsift.settings import BUNDLED_CATALOG

HERE = Path(__file__).resolve().parent
MODELS = ("all-MiniLM-L6-v2", "multilingual-e5-small")
NO_TOOL_BALANCE = 261 / 192
"""The no-tool requests' total weight over the labelled requests': 261 to 192 as first fitted."""


WRITTEN = ("default_catalog_requests.tsv", "conversational_requests.tsv", "payload_requests.tsv")
"""The labelled requests, all written for the bundled catalog: terse (192), asked as people talk
(179), carrying a quoted message, text or code (64)."""


def labelled_requests(*more: Path) -> list[tuple[str, str]]:
    """(request, tool) rows of the ``WRITTEN`` files and of any ``more`` such files."""
    lines = [
        line
        for path in (*(HERE / name for name in WRITTEN), *more)
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    rows = (line.split("\t") for line in lines)
    return [(row[0], row[1]) for row in rows if len(row) == 2 and not row[0].startswith("#")]


def matches_of(router: Router, k: int, requests: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each match's features, label and weight in the fit (the no-tool requests weighing together
    ``NO_TOOL_BALANCE`` times the written ones)."""
    calibration = router.calibration()
    features: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    none_weight = NO_TOOL_BALANCE * len(requests) / len(no_tool_requests())
    texts = [text for text, _ in requests] + list(no_tool_requests())
    wanted = [tool for _, tool in requests] + [None] * len(no_tool_requests())
    vectors = router.embed_queries(texts)
    none_vectors = calibration.none_vectors
    for index, (text, tool, vector) in enumerate(zip(texts, wanted, vectors, strict=True)):
        ranked = router._rank(text, vector, k, None, router.views(None))
        if tool is None:  # a no-tool request: its neighbours are the others
            others = np.delete(none_vectors, index - len(requests), axis=0)
            similar = np.sort(others @ vector)[-3:]
            none = float(similar.mean())
        else:
            none = calibration.none_similarity(vector)
        features.append(calibration.features(ranked.evidence, none, ranked.coverage))
        names = [router.catalog[int(i)].name for i in ranked.ids]
        labels.append(np.array([float(name == tool) for name in names]))
        weights.append(np.full(len(names), none_weight if tool is None else 1.0))
    return np.vstack(features), np.concatenate(labels), np.concatenate(weights)


def fitted(
    k: int = 5, more: Sequence[Path] = (), say: Callable[[str], None] = lambda _: None
) -> tuple[Shape, float, float]:
    """The shape fitted on the written requests (and ``more`` files of them) and the shipped no-tool
    requests, its log loss and its expected calibration error on what it was fitted on."""
    requests = labelled_requests(*more)
    catalog = load_catalog(BUNDLED_CATALOG)
    features, labels, weights = [], [], []
    for model in MODELS:
        router = Router.build(catalog, get_embedder(model))
        found, labelled, weighed = matches_of(router, k, requests)
        calibration = router.calibration()
        say(f"{model}: center {calibration.center:.4f}, spread {calibration.spread:.4f}, {len(labelled)} matches")
        features.append(found)
        labels.append(labelled)
        weights.append(weighed)
    pooled, truth = np.vstack(features), np.concatenate(labels)
    shape = fit_shape(pooled, truth, weights=np.concatenate(weights))
    predicted = probability(pooled, shape)
    loss = -np.mean(truth * np.log(predicted + 1e-12) + (1 - truth) * np.log(1 - predicted + 1e-12))
    say(f"{len(truth)} matches, {int(truth.sum())} positive")
    return shape, float(loss), ece_of(predicted, truth)


def main(argv: list[str]) -> None:
    k = int(argv[argv.index("--k") + 1]) if "--k" in argv else 5
    more = [Path(argv[i + 1]) for i, arg in enumerate(argv) if arg == "--with"]
    shape, loss, ece = fitted(k, more, say=print)
    print(f"log loss {loss:.4f}")
    print(f"expected calibration error on the fitted matches: {ece:.4f}")
    print(f"SHAPE = {shape!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
