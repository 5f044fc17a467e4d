"""More passes over few pairs: the tool-split tuning bench with several ``Recipe`` settings.

    python benchmarks/experiments/tuning_epochs.py apibench full "epochs=3" "epochs=2"
    python benchmarks/experiments/tuning_epochs.py sealtools:query full "learning_rate=0.0001"
    python benchmarks/experiments/tuning_epochs.py metatool full "loss=gist"
    python benchmarks/experiments/tuning_epochs.py metatool full "freeze=3"

For each setting (``field=value;field=value`` of ``toolsift.tuning.trainer.Recipe``, or
``loss=gist``: the base model guides which in-batch negatives count; ``freeze=N``: the token
embeddings and the first N layers stay as they are), the dataset
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
from toolsift.tuning import trainer
from toolsift.tuning.trainer import Recipe

ROOT = "../shared/datasets"
PLAIN = trainer._loss


def recipe_of(spec: str) -> Recipe:
    kinds = {f.name: type(getattr(Recipe(), f.name)) for f in fields(Recipe)}
    given = dict(part.split("=") for part in spec.split(";") if not part.startswith(("loss=", "freeze=")))
    return Recipe(
        **{key: value in ("1", "true") if kinds[key] is bool else kinds[key](value) for key, value in given.items()}
    )


def guided_loss(model, source, recipe):
    """sentence-transformers' ``GISTEmbedLoss`` with the base model as the guide: a batch's tools
    the base model finds at least as near as a request's own are left out of its negatives."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses

    guide = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    guide.max_seq_length = recipe.max_tokens
    return losses.GISTEmbedLoss(model, guide, temperature=1 / recipe.scale)


def frozen_loss(layers: int):
    """The plain loss, over a model whose token embeddings and first ``layers`` layers do not
    train (their gradients off before the optimizer is made)."""

    def loss(model, source, recipe):
        encoder = model[0].auto_model
        for parameter in encoder.embeddings.parameters():
            parameter.requires_grad = False
        for block in encoder.encoder.layer[:layers]:
            for parameter in block.parameters():
                parameter.requires_grad = False
        return PLAIN(model, source, recipe)

    return loss


def loss_of(spec: str):
    options = dict(part.split("=") for part in spec.split(";") if part.startswith(("loss=", "freeze=")))
    if options.get("loss") == "gist":
        return guided_loss
    return frozen_loss(int(options["freeze"])) if "freeze" in options else PLAIN


def main(target: str, kinds: str, *specs: str) -> None:
    name, _, split_by = target.partition(":")
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    embedder = embedder_for("auto", dataset.catalog)
    for spec in specs:
        trainer._loss = loss_of(spec)
        started = time.time()
        points = run_tuning_curve(dataset, embedder, [0.5], [5], split_by=split_by or "tool", kinds=kinds.split(","),
                                  recipe=recipe_of(spec), max_pairs=3000)  # fmt: skip
        print(f"== {name} {spec} {time.time() - started:.0f}s", flush=True)
        print(tuning_table(points), flush=True)
        print(json.dumps(points[0].training), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
