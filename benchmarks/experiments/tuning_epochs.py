"""More passes over few pairs: the tool-split tuning bench with several ``Recipe`` settings.

    python benchmarks/experiments/tuning_epochs.py apibench full "epochs=3" "epochs=2"
    python benchmarks/experiments/tuning_epochs.py sealtools:query full "learning_rate=0.0001"

For each setting (``field=value;field=value`` of ``toolsift.tuning.trainer.Recipe``), the dataset
(a seeded 6,000 queries at most) split by tool at F = 0.5 (or by query, after a colon), the model tuned on at most 3,000 fed
pairs, Recall@5 of the scored requests paired against the base model. Figures and the choice:
benchmarks/DECISIONS.md ("Fine-tuning").
"""

import json
import sys
import time
from dataclasses import fields

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.tuning import run_tuning_curve, tuning_table
from toolsift.tuning.trainer import Recipe

ROOT = "../shared/datasets"


def recipe_of(spec: str) -> Recipe:
    kinds = {f.name: type(getattr(Recipe(), f.name)) for f in fields(Recipe)}
    return Recipe(**{key: kinds[key](value) for key, value in (part.split("=") for part in spec.split(";"))})


def main(target: str, kinds: str, *specs: str) -> None:
    name, _, split_by = target.partition(":")
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    embedder = embedder_for("auto", dataset.catalog)
    for spec in specs:
        started = time.time()
        points = run_tuning_curve(dataset, embedder, [0.5], [5], split_by=split_by or "tool", kinds=kinds.split(","),
                                  recipe=recipe_of(spec), max_pairs=3000)  # fmt: skip
        print(f"== {name} {spec} {time.time() - started:.0f}s", flush=True)
        print(tuning_table(points), flush=True)
        print(json.dumps(points[0].training), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
