"""Tune the query side only: the whole encoder fine-tuned for requests, the tools' vectors kept as
the base model makes them (an adapter with the encoder's capacity).

    python benchmarks/experiments/query_tower.py metatool "epochs=1" "learning_rate=0.0001"

Tool split at F = 0.5 (a seeded 6,000 queries at most, at most 3,000 fed pairs), as
``tuning_epochs.py``: each request of a training batch is pulled toward its tool's *base* vector
and pushed from the batch's other tools' base vectors (``negatives=named``: from every tool the
training named). Recall@5 of the scored requests (tools no one asked for) paired against the base
model. Figures: benchmarks/DECISIONS.md ("Fine-tuning").
"""

import random
import sys
import time
from dataclasses import dataclass

import numpy as np

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import Dataset, Query, load_dataset
from toolsift.bench.feedback import _paired, _recalls
from toolsift.bench.tuning import pairs_of, split_by_tool
from toolsift.embeddings import Embedder
from toolsift.embeddings.base import normalise_rows
from toolsift.router import Router
from toolsift.router.threads import single_threaded_queries
from toolsift.tuning import models
from toolsift.tuning.pairs import Pair
from toolsift.tuning.trainer import batches, torch_modules

ROOT = "../shared/datasets"


@dataclass
class Setting:
    epochs: int = 1
    learning_rate: float = 3e-5
    batch_size: int = 32
    scale: float = 20.0
    negatives: str = "batch"


def setting_of(spec: str) -> Setting:
    made = Setting()
    for part in filter(None, spec.split(";")):
        key, value = part.split("=")
        setattr(made, key, type(getattr(made, key))(value))
    return made


class Tower:
    """Documents from the base embedder, queries from the tuned torch model."""

    def __init__(self, base, model):
        self.base, self.model, self.name = base, model, base.name
        self.dimension = base.dimension

    def embed_documents(self, texts, *, progress=False):
        return self.base.embed_documents(texts, progress=progress)

    def embed_queries(self, texts):
        vectors = self.model.encode(list(texts), batch_size=64, convert_to_numpy=True, show_progress_bar=False)
        return normalise_rows(np.asarray(vectors, dtype=np.float32))


def train(source, pairs, vectors, setting):
    torch, SentenceTransformer = torch_modules()
    torch.manual_seed(0)
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    model.max_seq_length = 128
    named = sorted({p.tool for p in pairs})
    column = {name: i for i, name in enumerate(named)}
    documents = torch.from_numpy(np.stack([vectors[name] for name in named]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=setting.learning_rate)
    plan = [b for epoch in range(setting.epochs) for b in batches(pairs, setting.batch_size, epoch)]
    warmup = max(1, len(plan) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (len(plan) - s) / max(1, len(plan) - warmup)))
    )
    model.train()
    for batch in plan:
        features = model.preprocess([p.query for p in batch])
        queries = torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=1)
        targets = torch.tensor([column[p.tool] for p in batch])
        if setting.negatives == "named":
            logits = setting.scale * queries @ documents.T
        else:
            logits = setting.scale * queries @ documents[targets].T
            targets = torch.arange(len(batch))
        value = torch.nn.functional.cross_entropy(logits, targets)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
    model.eval()
    return model


def tool_split(name: str) -> tuple[Dataset, Embedder, Router, list[Pair], list[Query]]:
    """As ``tuning_epochs.py``: a seeded 6,000 of the dataset's queries, its tools split at F =
    0.5, at most 3,000 fed pairs; (dataset, base embedder, base router, pairs, scored requests)."""
    single_threaded_queries()
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    embedder = embedder_for("auto", dataset.catalog)
    fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, 0.5, 0)
    pairs = pairs_of(fed)
    if len(pairs) > 3000:
        pairs = random.Random(0).sample(pairs, 3000)
    return dataset, embedder, Router.build(dataset.catalog, embedder), pairs, scored


def main(name: str, *specs: str) -> None:
    dataset, embedder, base, pairs, scored = tool_split(name)
    rows = base.index.vectors.vectors(np.arange(len(dataset.catalog), dtype=np.int64))
    vectors = {tool.name: rows[dataset.catalog.position(tool.name)] for tool in dataset.catalog}
    before = _recalls(base, None, scored, [5])[5]
    print(f"{name}: {len(pairs)} pairs, {len(scored)} scored, base R@5 {np.mean(before):.4f}", flush=True)
    for spec in specs:
        started = time.time()
        model = train(models.full_source(embedder.name, None), pairs, vectors, setting_of(spec))
        seconds = time.time() - started
        tuned = Router(base.index, Tower(embedder, model), base.ranking)
        after = _recalls(tuned, None, scored, [5])[5]
        print(
            f"== {name} {spec}: R@5 {np.mean(after):.4f}, vs base {_paired(after, before)}, {seconds:.0f}s", flush=True
        )


if __name__ == "__main__":
    main(*sys.argv[1:])
