"""Does a tuned encoder want a different lexical weight? The base and the tuned model, each at
several weights of the standardised BM25 part, on the same scored requests.

    python benchmarks/experiments/tuned_lexical.py metatool 0,0.1,0.2,0.3,0.5

Tool split at F = 0.5 (a seeded 6,000 queries at most, at most 3,000 fed pairs, as
``tuning_epochs.py``), the whole encoder tuned with the default recipe; Recall@5 of the scored
requests paired against the base model at the default weight. Figures: benchmarks/DECISIONS.md
("Fine-tuning").
"""

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from query_tower import tool_split  # beside this script

from toolsift.bench.feedback import _paired, _recalls
from toolsift.bench.metrics import mean
from toolsift.router import Router
from toolsift.tuning import models
from toolsift.tuning.trainer import Recipe


def main(name: str, weights: str) -> None:
    dataset, _, base, pairs, scored = tool_split(name)
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
