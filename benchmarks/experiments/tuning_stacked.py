"""An adapter over the tuned encoder: does stacking the two kinds beat either alone?

    python benchmarks/experiments/tuning_stacked.py apibench metatool

Each dataset (a seeded 6,000 queries at most) split by tool at F = 0.5, at most 3,000 fed pairs;
Recall@5 of the scored requests (tools no training request named) for the base model, the tuned
encoder, the adapter over the base, and the adapter over the tuned encoder, each paired against
the base. Figures: benchmarks/DECISIONS.md ("Fine-tuning").
"""

import random
import sys
import tempfile
import time
from pathlib import Path

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.feedback import _paired, _recalls
from toolsift.bench.tuning import pairs_of, split_by_tool
from toolsift.router import Router
from toolsift.tuning import models
from toolsift.tuning.trainer import Recipe

ROOT = "../shared/datasets"


def main(*names: str) -> None:
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
        fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, 0.5, 0)
        pairs = pairs_of(fed)
        if len(pairs) > 3000:
            pairs = random.Random(0).sample(pairs, 3000)
        base = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog))
        with tempfile.TemporaryDirectory() as folder:
            workdir, deadline = Path(folder), time.monotonic() + 900
            routers = {"base": base}
            full, _ = models.make("full", base, pairs, Recipe(), workdir, None, deadline=deadline)
            routers["full"] = Router.build(dataset.catalog, models.load(full, workdir))
            for label, under in (("adapter", base), ("full+adapter", routers["full"])):
                made, _ = models.make("adapter", under, pairs, Recipe(), workdir, None, deadline=deadline)
                routers[label] = Router.build(dataset.catalog, models.load(made, workdir))
            recall = {label: _recalls(router, None, scored, [5])[5] for label, router in routers.items()}
        print(f"== {name}: {len(pairs)} pairs, {len(scored)} scored", flush=True)
        for label, values in recall.items():
            difference, half = _paired(values, recall["base"])
            print(f"{label}: R@5 {sum(values) / len(values):.3f}, vs base {difference:+.3f} ± {half:.3f}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
