"""Does a tuned encoder want a different lexical weight? The base and the tuned model, each at
several weights of the standardised BM25 part, on the same scored requests.

    python benchmarks/experiments/tuned_lexical.py metatool 0,0.1,0.2,0.3,0.5

Tool split at F = 0.5 (a seeded 6,000 queries at most, at most 3,000 fed pairs, as
``tuning_epochs.py``), the whole encoder tuned with the default recipe; Recall@5 of the scored
requests paired against the base model at the default weight. Figures: benchmarks/DECISIONS.md
("Fine-tuning").
"""

import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.feedback import _paired, _recalls
from toolsift.bench.metrics import mean
from toolsift.bench.tuning import pairs_of, split_by_tool
from toolsift.router import Router
from toolsift.router.threads import single_threaded_queries
from toolsift.tuning import models
from toolsift.tuning.trainer import Recipe

ROOT = "../shared/datasets"


def main(name: str, weights: str) -> None:
    single_threaded_queries()
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    embedder = embedder_for("auto", dataset.catalog)
    base = Router.build(dataset.catalog, embedder)
    fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, 0.5, 0)
    pairs = pairs_of(fed)
    if len(pairs) > 3000:
        pairs = random.Random(0).sample(pairs, 3000)
    reference = _recalls(base, None, scored, [5])[5]
    print(f"{name}: {len(pairs)} pairs, {len(scored)} scored, base R@5 {mean(reference):.4f}", flush=True)
    with tempfile.TemporaryDirectory() as workdir:
        started = time.monotonic()
        made, _ = models.make("full", base, pairs, Recipe(), Path(workdir), None, deadline=started + 1800)
        tuned = Router.build(dataset.catalog, models.load(made, Path(workdir)))
        for weight in (float(w) for w in weights.split(",")):
            for label, router in (("base", base), ("tuned", tuned)):
                ranking = replace(router.ranking, lexical_weight=weight)
                recall = _recalls(Router(router.index, router.embedder, ranking), None, scored, [5])[5]
                print(f"{label} w={weight}: R@5 {mean(recall):.4f}, vs base at default {_paired(recall, reference)}",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main(*sys.argv[1:])
