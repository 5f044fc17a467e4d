"""An adapter's feedback views compared in the base model's space (tried, not kept).

    python benchmarks/experiments/adapter_views.py on apibench
    python benchmarks/experiments/adapter_views.py off apibench

An adapter maps query vectors only, so a fed request's view is compared with the mapped request
(``A q . A r``). "on": views and their offset in the base model's space instead (``q . r``, both
mapped back with the adapter's inverse; the text cosine stays the adapted one), patched in here
for the experiment. The tool-split tuning bench (F = 0.5, adapter only) then compares
toolsift+tuned+feedback with toolsift+feedback on the same scored requests. Figures:
benchmarks/DECISIONS.md ("Fine-tuning").
"""

import sys

import numpy as np

from toolsift.bench.cli import embedder_for
from toolsift.bench.datasets import load_dataset
from toolsift.bench.tuning import run_tuning_curve, tuning_table
from toolsift.embeddings.base import normalise_rows
from toolsift.embeddings.tuned import AdaptedEmbedder
from toolsift.router import router as router_module
from toolsift.router import usage
from toolsift.router.usage import ExampleViews

ROOT = "../shared/datasets"
plain_views_of = router_module.Router._views_of
plain_example_pairs = router_module.Router._example_pairs
plain_nearest = ExampleViews.nearest
plain_best_of = ExampleViews.best_of


def inverse_of(embedder: object) -> np.ndarray | None:
    while embedder is not None and not isinstance(embedder, AdaptedEmbedder):
        embedder = getattr(embedder, "inner", None)
    return None if embedder is None else np.linalg.inv(embedder.matrix).astype(np.float32)


def views_of(self, pairs, pool_key):  # type: ignore[no-untyped-def]
    views, inverse = plain_views_of(self, pairs, pool_key), inverse_of(self.embedder)
    if views is None or inverse is None:
        return views
    requests: dict[int, list[np.ndarray]] = {}
    for tool_id, text in dict.fromkeys(pairs):
        requests.setdefault(tool_id, []).append(self._example_vectors[text])
    gaps: list[float] = []
    for tool, rows in requests.items():
        if len(rows) < 2:
            continue
        sample = np.vstack(rows)[np.unique(np.linspace(0, len(rows) - 1, usage.OFFSET_SAMPLE).astype(int))]
        base = normalise_rows(sample @ inverse)
        similar = base @ base.T
        np.fill_diagonal(similar, -np.inf)
        text = self.index.vectors.vectors(np.asarray([tool], dtype=np.int64))[0]
        gaps += (similar.max(axis=1) - sample @ text).tolist()
    offset = usage.VIEW_DISCOUNT * max(0.0, float(np.median(gaps))) if gaps else 0.0
    object.__setattr__(views, "inverse", inverse)
    object.__setattr__(views, "offsets", ((0, self.embedder.dimension, offset),))
    return views


def example_pairs(self, pairs, pool_key):  # type: ignore[no-untyped-def]
    found, inverse = plain_example_pairs(self, pairs, pool_key), inverse_of(self.embedder)
    if inverse is None:
        return found
    return [(tool, normalise_rows((vector @ inverse)[None, :])[0]) for tool, vector in found]


def nearest(self, query, start, end):  # type: ignore[no-untyped-def]
    inverse = getattr(self, "inverse", None)
    return plain_nearest(self, query if inverse is None else normalise_rows((query @ inverse)[None, :])[0], start, end)


def best_of(self, queries):  # type: ignore[no-untyped-def]
    inverse = getattr(self, "inverse", None)
    return plain_best_of(self, queries if inverse is None else normalise_rows(queries @ inverse))


def main(mode: str, *names: str) -> None:
    if mode == "on":
        router_module.Router._views_of = views_of
        router_module.Router._example_pairs = example_pairs
        ExampleViews.nearest = nearest
        ExampleViews.best_of = best_of
    for name in names:
        dataset = load_dataset(f"{ROOT}/{name}/tools.jsonl", f"{ROOT}/{name}/queries.jsonl").sample(6000)
        points = run_tuning_curve(dataset, embedder_for("auto", dataset.catalog), [0.5], [5], split_by="tool",
                                  kinds=["adapter"], max_pairs=3000)  # fmt: skip
        print(f"== {name}: views in the base model's space {mode}", flush=True)
        print(tuning_table(points), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
