"""The crowd counted as if each match were the best (tried; see DECISIONS).

    python benchmarks/experiments/crowd_alone.py LIMIT DATASET...

``confidence.crowd_share`` sums the shape's confidences of a request's best 20 matches; each but
the best is lowered by its distance under the best (``below_best``), so a crowd of near-equal tools
a little under the best counts for less than it fits. Here the crowd S' sums each match's
confidence with ``below_best`` at 0 (how well it fits on its own), and each match reports
shape × min(1, asks / S'). Expected calibration error (10 bins) of the top-5 matches of a seeded
LIMIT of each dataset's answerable requests: the shape, the router's share (asks / S), and this.
"""

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from crowd import asks  # benchmarks/experiments/crowd.py

from toolsift.bench.abstention import ece_of
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router
from toolsift.router.confidence import CROWD_DEPTH, probability
from toolsift.settings import Settings

ROOT = str(Path(__file__).resolve().parents[3] / "shared" / "datasets")


def main(limit: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        built = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        router = Router(built.index, built.embedder, replace(built.ranking, recalibrate=False))
        calibration = router.calibration("")
        rows = []
        for query in dataset.queries:
            if not (query.routable and query.relevant):
                continue
            vector = router.embed_queries([query.text])[0]
            ranked = router._rank(query.text, vector, CROWD_DEPTH, None, router.views(""))
            features = calibration.features(ranked.evidence, calibration.none_similarity(vector), ranked.coverage, 5)
            shape = probability(features, calibration.shape)
            alone = probability(np.column_stack([features[:, 0], np.zeros(len(features)), features[:, 2]]),
                                calibration.shape)  # fmt: skip
            names_ = [router.catalog[int(i)].name for i in ranked.ids]
            wanted = asks(router, query.text, names_[0]) if names_ else 1
            for position in range(min(5, len(names_))):
                rows.append(
                    (shape[position], float(names_[position] in query.relevant), shape.sum(), alone.sum(), wanted)
                )
        c, relevant, crowd, crowd_alone, asked = (np.array(column) for column in zip(*rows, strict=True))
        print(
            f"{name}: shape {ece_of(c, relevant):.3f} | asks / S {ece_of(c * np.minimum(1, asked / np.maximum(crowd, 1e-9)), relevant):.3f}"
            f" | asks / S alone {ece_of(c * np.minimum(1, asked / np.maximum(crowd_alone, 1e-9)), relevant):.3f}"
            f" | sqrt {ece_of(c * np.minimum(1, np.sqrt(asked / np.maximum(crowd_alone, 1e-9))), relevant):.3f}"
            f" | mean S {crowd.mean():.2f}, S alone {crowd_alone.mean():.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
