"""The abstention's whole trade, to compare two confidences on the same requests.

    python benchmarks/experiments/threshold_curve.py LIMIT DATASET...

For a seeded LIMIT of each dataset's requests, the abstention bench (``run_abstention``) on a fine
sweep of thresholds (0.02 to 0.30), then per language the most generic no-tool requests that
abstain while Recall@5 stays within 0.01 of no abstention (the point estimate), and at which
threshold. Run it from two checkouts (``PYTHONPATH=...``) to compare what each ships.
"""

import sys

import numpy as np

from toolsift.bench.abstention import generic_no_tool, run_abstention
from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.router import Router
from toolsift.settings import Settings

ROOT = "../shared/datasets"
THRESHOLDS = [round(t, 3) for t in np.arange(0.02, 0.301, 0.01)]


def main(limit: str, *names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(int(limit))
        router = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog), cache=Settings().open_cache())
        result = run_abstention(dataset, router, 5, THRESHOLDS, no_tool=generic_no_tool())
        within = [row for row in result["rows"] if row["recall_change"] >= -0.01]
        best = {
            language: max(
                within, key=lambda row, language=language: (row[f"abstained_{language}"], -row["min_confidence"])
            )
            for language in result["generic_no_tool"]
        }
        at = next(row for row in result["rows"] if row["min_confidence"] == 0.1)
        print(
            f"{name}: at 0.1 recall {at['recall_change']:+.3f} "
            + " ".join(f"{lang} {at[f'abstained_{lang}']:.2f}" for lang in best)
            + " | best within 0.01: "
            + " ".join(f"{lang} {row[f'abstained_{lang}']:.2f}@{row['min_confidence']}" for lang, row in best.items())
            + f" | ECE {result['reliability']['ece']:.3f}",
            flush=True,
        )
        for row in result["rows"]:
            print(
                f"  {row['min_confidence']:.2f} recall {row['recall_change']:+.3f} ± {row['recall_change_interval']:.3f} "
                + " ".join(f"{lang} {row[f'abstained_{lang}']:.2f}" for lang in best),
                flush=True,
            )


if __name__ == "__main__":
    main(*sys.argv[1:])
