"""How settled is the confidence's shape? ``fit_shape.py``'s fit, resampled by request.

    python benchmarks/experiments/shape_bootstrap.py [ROUNDS]

The matches ``fit_shape.py`` fits on (the written requests and the shipped no-tool requests, both
shipped models), then ROUNDS (200) fits on requests drawn with replacement — the written and the
no-tool requests each resampled on their own, a request's matches under both models together —
and each coefficient's 95% percentile interval. Figures: benchmarks/DECISIONS.md ("Confidence
and abstention").
"""

import sys
from pathlib import Path

import numpy as np

from toolsift.catalog import load_catalog
from toolsift.embeddings import get_embedder
from toolsift.router import Router
from toolsift.router.confidence import fit_shape, no_tool_requests
from toolsift.settings import BUNDLED_CATALOG

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "abstention"))
import fit_shape as fitting  # noqa: E402

K = 5


def main(rounds: str = "200") -> None:
    requests = fitting.labelled_requests()
    count = len(requests) + len(no_tool_requests())
    features, labels, weights, owners = [], [], [], []
    for model in fitting.MODELS:
        router = Router.build(load_catalog(BUNDLED_CATALOG), get_embedder(model))
        found, labelled, weighed = fitting.matches_of(router, K, requests)
        features.append(found)
        labels.append(labelled)
        weights.append(weighed)
        owners.append(np.repeat(np.arange(count), K))  # the bundled catalog gives every request K matches
    pooled, truth, weight, owner = (np.concatenate(part) for part in (features, labels, weights, owners))
    print(f"as fitted: {fit_shape(pooled, truth, weights=weight)}")
    draw = np.random.default_rng(0)
    written, none = np.arange(len(requests)), np.arange(len(requests), count)
    found = []
    for _ in range(int(rounds)):
        picked = np.concatenate([draw.choice(written, len(written)), draw.choice(none, len(none))])
        shape = fit_shape(pooled, truth, weights=weight * np.bincount(picked, minlength=count)[owner])
        found.append([shape.intercept, shape.above, shape.below_best, shape.coverage])
    for name, column in zip(("intercept", "above", "below_best", "coverage"), np.array(found).T, strict=True):
        low, high = np.percentile(column, [2.5, 97.5])
        print(f"{name}: {low:.3f} .. {high:.3f} (sd {column.std():.3f})")


if __name__ == "__main__":
    main(*sys.argv[1:])
