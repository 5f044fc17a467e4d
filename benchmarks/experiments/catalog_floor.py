"""A per-catalog abstention threshold from where the catalog puts the shipped no-tool requests.

    python benchmarks/experiments/catalog_floor.py LIMIT DATASET...

Each shipped no-tool request (``toolsift/data/no_tool_requests.yaml``) is routed against the
catalog as a new request would be, its no-tool similarity measured against the *other* shipped
requests (not itself). Per language, the quantiles of their best match's confidence say which
threshold would make that share of them abstain on this catalog. Then the abstention bench's fine
sweep (``threshold_curve.py``'s) on a seeded LIMIT of the dataset's requests, to read off what such
a threshold costs and buys on the benchmark's own (different) no-tool set.
"""

import sys

import numpy as np
import yaml

from toolsift.bench.abstention import generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router, confidence
from toolsift.settings import Settings

ROOT = "../shared/datasets"
THRESHOLDS = [round(t, 3) for t in np.arange(0.06, 0.301, 0.02)]
QUANTILES = (0.7, 0.8, 0.85, 0.9)


def shipped_confidences(router: Router) -> dict[str, list[float]]:
    """Each shipped no-tool request's best confidence, by language, itself left out of its
    no-tool neighbours."""
    plain = confidence.Calibration.none_similarity

    def leave_one_out(self, vector):  # type: ignore[no-untyped-def]
        similar = self.none_vectors @ vector
        similar = similar[similar < 0.9999]
        return float(confidence._nearest_mean(similar[None, :])[0])

    by_language = yaml.safe_load(confidence.NO_TOOL_FILE.read_text(encoding="utf-8"))
    confidence.Calibration.none_similarity = leave_one_out  # type: ignore[method-assign]
    try:
        return {
            language: [max((m.confidence for m in r.matches), default=0.0)
                       for r in router.route_many(texts, 5, min_confidence=0.0, usage_pool=None)]
            for language, texts in by_language.items()
        }  # fmt: skip
    finally:
        confidence.Calibration.none_similarity = plain  # type: ignore[method-assign]


def main(limit: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        shipped = shipped_confidences(router)
        print(f"== {name}", flush=True)
        for language, values in shipped.items():
            print(f"  shipped {language}: at 0.1 {np.mean(np.asarray(values) < 0.1):.2f} abstain; quantiles "
                  + " ".join(f"{q}:{np.quantile(values, q):.3f}" for q in QUANTILES), flush=True)  # fmt: skip
        pooled = [v for values in shipped.values() for v in values]
        print("  shipped pooled quantiles " + " ".join(f"{q}:{np.quantile(pooled, q):.3f}" for q in QUANTILES))
        result = run_abstention(dataset, router, 5, THRESHOLDS, no_tool=generic_no_tool())
        for row in result["rows"]:
            print(f"  {row['min_confidence']:.2f} recall {row['recall_change']:+.3f} ± {row['recall_change_interval']:.3f} "
                  + " ".join(f"{lang} {row[f'abstained_{lang}']:.2f}" for lang in result["generic_no_tool"]), flush=True)  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
