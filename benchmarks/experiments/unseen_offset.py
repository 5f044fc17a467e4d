"""Does a tuned model understate its feedback views' offset on the requests it trained on?

    python benchmarks/experiments/unseen_offset.py apibench adapter|full
    python benchmarks/experiments/unseen_offset.py apibench forced OFFSET

The tool split at F = 0.5 (a seeded 6,000 requests at most, at most 3,000 fed pairs). First form:
a model of the kind trained on the fed pairs; ``usage.view_offsets`` measured with the base model
and with it, on the fed requests (trained on) and on the scored ones (tools it never saw).
Second form: the adapter-only tuning bench with the adapter's view offset forced to OFFSET
(patched in here), to see what the offset is worth to tools without feedback. Figures:
benchmarks/DECISIONS.md ("Fine-tuning").
"""

import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import Query, load_dataset
from toolsift.bench.tuning import pairs_of, run_tuning_curve, split_by_tool, tuning_table
from toolsift.embeddings.tuned import AdaptedEmbedder
from toolsift.router import Router
from toolsift.router import router as router_module
from toolsift.router.usage import view_offsets
from toolsift.tuning import models
from toolsift.tuning.trainer import Recipe

ROOT = "../shared/datasets"


def offset(router: Router, queries: list[Query]) -> float:
    grouped: dict[int, list[str]] = {}
    for query in queries:
        if len(query.relevant) == 1:
            grouped.setdefault(router.catalog.position(query.relevant[0]), []).append(query.text)
    grouped = {tool: texts for tool, texts in grouped.items() if len(texts) >= 2}
    requests = {tool: np.asarray(router.embedder.embed_queries(texts)) for tool, texts in grouped.items()}
    ids = np.asarray(sorted(requests), dtype=np.int64)
    texts = dict(zip(ids.tolist(), router.index.vectors.vectors(ids), strict=True))
    return view_offsets(requests, texts, [(0, router.embedder.dimension)])[0][2]


def measured(name: str, kind: str) -> None:
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    base = Router.build(dataset.catalog, embedder_for("auto", dataset.catalog))
    fed, scored = split_by_tool(dataset.with_tools, dataset.catalog.names, 0.5, 0)
    pairs = pairs_of(fed)
    pairs = random.Random(0).sample(pairs, 3000) if len(pairs) > 3000 else pairs
    with tempfile.TemporaryDirectory() as workdir:
        made, _ = models.make(kind, base, pairs, Recipe(), Path(workdir), None, deadline=time.monotonic() + 900)  # type: ignore[arg-type]
        tuned = Router.build(dataset.catalog, models.load(made, Path(workdir)))
        for label, router in (("base", base), (kind, tuned)):
            print(f"{name} {label}: offset on the fed (trained) requests {offset(router, fed):.4f}, "
                  f"on the scored (unseen tools) {offset(router, scored):.4f}", flush=True)  # fmt: skip


def forced(name: str, value: str) -> None:
    plain = router_module.Router._views_of

    def views_of(self, pairs, pool_key):  # type: ignore[no-untyped-def]
        views = plain(self, pairs, pool_key)
        if views is not None and isinstance(getattr(self.embedder, "inner", self.embedder), AdaptedEmbedder):
            object.__setattr__(views, "offsets", tuple((a, b, float(value)) for a, b, _ in views.offsets))
        return views

    router_module.Router._views_of = views_of
    dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
    points = run_tuning_curve(dataset, embedder_for("auto", dataset.catalog), [0.5], [5], split_by="tool",
                              kinds=["adapter"], max_pairs=3000)  # fmt: skip
    print(f"== {name}: the adapter's view offset forced to {value}", flush=True)
    print(tuning_table(points), flush=True)


if __name__ == "__main__":
    name, mode, *rest = sys.argv[1:]
    forced(name, rest[0]) if mode == "forced" else measured(name, mode)
