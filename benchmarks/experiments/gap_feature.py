"""A fourth confidence feature, how far the best match stands out from the second (tried).

    python benchmarks/experiments/gap_feature.py LIMIT DATASET...

The issue names "the margin to the next tool" among the features a confidence may use. Here each
match gets one more column, its request's gap: the best evidence minus the second best among the
first k, in the catalog's spread (the same for every match of a request). The shape is refitted
with it on what ``benchmarks/abstention/fit_shape.py`` fits on (requests written for the bundled
catalog, the shipped no-tool requests; never benchmark data), then the abstention bench is run
with the shipped shape and with the new one on the same seeded LIMIT requests per dataset: per
language the most generic no-tool requests abstaining with Recall@5 within 0.01, the figures at
the router's default threshold, and the ECE.
"""

import sys
from pathlib import Path

import numpy as np

from toolsift.bench.abstention import generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.catalog import load_catalog
from toolsift.router import Router, confidence
from toolsift.settings import BUNDLED_CATALOG, Settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "abstention"))
import fit_shape  # noqa: E402

ROOT = Path(__file__).resolve().parents[3] / "shared" / "datasets"
THRESHOLDS = [round(t, 3) for t in np.arange(0.02, 0.301, 0.01)]
shipped_features = confidence.Calibration.features
shipped_probability = confidence.probability
COEFFICIENTS: list[np.ndarray] = []


def features_with_gap(self, evidence, none, coverage, leading=0):  # type: ignore[no-untyped-def]
    base = shipped_features(self, evidence, none, coverage, leading)
    if not len(base):
        return np.empty((0, 4))
    head = np.sort(np.asarray(evidence, dtype=np.float64)[: leading or len(evidence)])[::-1]
    gap = (head[0] - head[1]) / self.spread if len(head) > 1 else 0.0
    return np.column_stack([base, np.full(len(base), gap)])


def probability_with_gap(features, shape):  # type: ignore[no-untyped-def]
    if features.shape[1] == 3:
        return shipped_probability(features, shape)
    design = np.column_stack([np.ones(len(features)), features])
    return np.asarray(confidence._sigmoid(design @ COEFFICIENTS[0]))


def fit() -> np.ndarray:
    catalog = load_catalog(BUNDLED_CATALOG)
    rows, labels, weights = [], [], []
    for model in fit_shape.MODELS:
        router = Router.build(catalog, fit_shape.get_embedder(model))
        found, labelled, weighed = fit_shape.matches_of(router, 5)
        rows.append(found)
        labels.append(labelled)
        weights.append(weighed)
    features, truth = np.vstack(rows), np.concatenate(labels)
    design = np.column_stack([np.ones(len(features)), features])
    penalty = np.array([0.0] + [1e-2] * features.shape[1])
    coefficients = confidence._logistic(design, truth, np.zeros(design.shape[1]), penalty, 50, np.concatenate(weights))
    predicted = confidence._sigmoid(design @ coefficients)
    loss = -np.mean(truth * np.log(predicted + 1e-12) + (1 - truth) * np.log(1 - predicted + 1e-12))
    print(
        f"fitted: {np.round(coefficients, 4).tolist()} (intercept, above, below_best, coverage, gap); log loss {loss:.4f}"
    )
    return coefficients


def summary(name: str, label: str, result: dict) -> None:  # type: ignore[type-arg]
    rows = result["rows"]
    within = [row for row in rows if row["recall_change"] >= -0.01 and row["min_confidence"] in THRESHOLDS]
    languages = list(result["generic_no_tool"])
    best = {
        lang: max(within, key=lambda r, lang=lang: (r[f"abstained_{lang}"], -r["min_confidence"])) for lang in languages
    }
    default = next(row for row in rows if row["min_confidence"] == result["default_min_confidence"])
    print(f"{name} {label}: default {default['min_confidence']} recall {default['recall_change']:+.3f} ± "
          f"{default['recall_change_interval']:.3f} " + " ".join(f"{lang} {default[f'abstained_{lang}']:.2f}" for lang in languages)
          + " | best within 0.01: " + " ".join(f"{lang} {row[f'abstained_{lang}']:.2f}@{row['min_confidence']}" for lang, row in best.items())
          + f" | ECE {result['reliability']['ece']:.3f}", flush=True)  # fmt: skip


def main(limit: str, *names: str) -> None:
    confidence.probability = probability_with_gap
    confidence.Calibration.features = features_with_gap
    COEFFICIENTS.append(fit())
    for name in names:
        dataset = load_dataset(ROOT / name / "tools.jsonl", ROOT / name / "queries.jsonl").sample(int(limit))
        for label, patched in (("shipped", False), ("with gap", True)):
            confidence.Calibration.features = features_with_gap if patched else shipped_features
            router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
            summary(name, label, run_abstention(dataset, router, 5, THRESHOLDS, no_tool=generic_no_tool()))


if __name__ == "__main__":
    main(*sys.argv[1:])
